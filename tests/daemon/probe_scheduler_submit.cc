// probe_scheduler_submit: one real ProbeScheduler::Run through the local Slurm, for
// tests/integration/test_probes.py (the daemon's own wiring is not needed to test
// the submission, the wait, the cancel and the report check end to end).
//
// Prints one JSON line: {"ok": true, "job_id", "report", "log"} or
// {"ok": false, "code", "message", "job_id"?}; exit 0 / 1.
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "daemon/probe_scheduler.h"
#include "nlohmann/json.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Submit one xdeep-probe job through Slurm and wait for its report"};
  xdeep::daemon::ProbeSchedulerOptions options;
  xdeep::daemon::ProbeRequest request;
  std::string set = "compute";
  double time_limit_min = 1, wait_s = 60, poll_s = 0.2;
  app.add_option("--probe", options.probe_path, "xdeep-probe path")->required();
  app.add_option("--reports-dir", options.reports_dir, "Where reports go")->required();
  app.add_option("--partition", request.partition, "Slurm partition")->required();
  app.add_option("--time-limit-min", time_limit_min, "The job's time limit (minutes)");
  app.add_option("--set", set, "compute | collectives")
      ->check(CLI::IsMember({"compute", "collectives"}));
  app.add_option("--nodes", request.nodes, "Nodes (collectives)");
  app.add_option("--gpus-per-node", request.gpus_per_node, "0: CPU suite");
  app.add_option("--shapes", request.shapes_file, "xdeep.gemm_shapes/1 file (GPU compute)");
  app.add_option("--heuristic-shapes", request.heuristic_shapes_file,
                 "xdeep.gemm_shapes/1 file for cuBLASLt's heuristic (GPU compute)");
  app.add_option("--wait", wait_s, "Seconds to wait before cancelling");
  app.add_option("--poll", poll_s, "Seconds between squeue polls");
  CLI11_PARSE(app, argc, argv);

  request.time_limit = absl::Seconds(time_limit_min * 60);
  request.set = set == "collectives" ? xdeep::daemon::ProbeSet::kCollectives
                                     : xdeep::daemon::ProbeSet::kCompute;
  options.poll_interval = absl::Seconds(poll_s);
  xdeep::daemon::ProbeScheduler scheduler(options);
  absl::StatusOr<xdeep::daemon::ProbeOutcome> out = scheduler.Run(request, absl::Seconds(wait_s));
  nlohmann::json j;
  j["ok"] = out.ok();
  if (out.ok()) {
    j["job_id"] = out->job_id;
    j["report"] = out->report_path;
    j["log"] = out->log_path;
  } else {
    j["code"] = absl::StatusCodeToString(out.status().code());
    j["message"] = std::string(out.status().message());
  }
  std::cout << j.dump() << std::endl;
  return out.ok() ? 0 : 1;
}
