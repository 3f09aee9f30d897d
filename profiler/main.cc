// xdeep-probe: runs the probe sets and writes a probe report (docs/probe_report.md).
// Each subcommand lives in its own file (probe_commands.h); this only parses
// and dispatches.
//
//   xdeep-probe compute --suite cpu|gpu|all [--shapes FILE] [--gemm MxNxK]... --out R.json
//   srun xdeep-probe collectives [--ops all] [--min-bytes 1K] [--max-bytes 1G] --out R.json
//   xdeep-probe validate R.json
//   xdeep-probe merge compute.json coll_2gpu.json --out profile.json
//   srun xdeep-probe bootstrap            (rank discovery + rendezvous only, no GPU)
#include <CLI/CLI.hpp>

#include "profiler/probe_commands.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  using namespace xdeep::profiler;
  CLI::App app{"xdeep-probe: compute, bandwidth and collective probes for the xdeep tuner"};
  app.set_version_flag("--version", "xdeep-probe " XDEEP_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log debug detail");

  ComputeCommand compute(app);
  CollectivesCommand collectives(app);
  BootstrapCommand bootstrap(app);
  MergeCommand merge(app);
  ValidateCommand validate(app);
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);

  if (compute.selected()) return compute.Run();
  if (collectives.selected()) return collectives.Run();
  if (bootstrap.selected()) return bootstrap.Run();
  if (merge.selected()) return merge.Run();
  return validate.Run();
}
