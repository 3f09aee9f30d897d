// xdeep-probe bootstrap, merge and validate (see probe_commands.h).
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "absl/time/time.h"
#include "profiler/bootstrap.h"
#include "profiler/probe_commands.h"
#include "profiler/report.h"
#include "spdlog/spdlog.h"

namespace xdeep::profiler {

BootstrapCommand::BootstrapCommand(CLI::App& app)
    : command_(app.add_subcommand(
          "bootstrap", "Check rank discovery and the rank-0 rendezvous (no GPU needed)")) {
  command_->add_option("--timeout", timeout_, "Seconds for the rendezvous");
}

int BootstrapCommand::Run() const {
  absl::StatusOr<DistEnv> env = DistEnvFromEnvironment();
  if (!env.ok()) {
    spdlog::error("xdeep: {}", std::string(env.status().message()));
    return 1;
  }
  // Rank 0's token differs per run, so a peer can only print it by receiving it.
  const std::string token =
      std::to_string(getpid()) + "@" + NewReport().host + "/" + NewReport().created;
  absl::StatusOr<std::string> got =
      ExchangeRootBlob(*env, env->rank == 0 ? token : "", absl::Seconds(timeout_));
  if (!got.ok()) {
    spdlog::error("xdeep: rank {}: {}", env->rank, std::string(got.status().message()));
    return 2;
  }
  std::printf("rank %d/%d local %d/%d nodes %d source %s master %s:%d token %s\n", env->rank,
              env->world_size, env->local_rank, env->local_size, env->nodes, env->source.c_str(),
              env->master_addr.c_str(), env->master_port, got->c_str());
  return 0;
}

MergeCommand::MergeCommand(CLI::App& app)
    : command_(app.add_subcommand(
          "merge", "Merge reports of one kind of hardware into one (a hardware profile)")) {
  command_->add_option("reports", inputs_, "Report files")->required();
  command_->add_option("-o,--out", out_, "Merged report")->required();
  command_->add_flag(
      "--multi-rank-collectives", multi_rank_,
      "Keep only collectives of 2 or more ranks (1-rank entries carry no communication)");
}

int MergeCommand::Run() const {
  std::vector<Report> in;
  for (const std::string& path : inputs_) {
    absl::StatusOr<Report> r = ReadReport(path);
    if (!r.ok()) {
      spdlog::error("xdeep: {}", std::string(r.status().message()));
      return 1;
    }
    in.push_back(*std::move(r));
  }
  absl::StatusOr<Report> merged = MergeReports(in);
  if (!merged.ok()) {
    spdlog::error("xdeep: {}", std::string(merged.status().message()));
    return 1;
  }
  if (multi_rank_) {
    std::erase_if(merged->collectives, [](const CollectiveEntry& e) { return e.ranks < 2; });
  }
  if (absl::Status s = WriteReport(*merged, out_); !s.ok()) {
    spdlog::error("xdeep: {}", std::string(s.message()));
    return 1;
  }
  return 0;
}

ValidateCommand::ValidateCommand(CLI::App& app)
    : command_(app.add_subcommand("validate", "Check that a file is a valid probe report")) {
  command_->add_option("report", path_, "Report file")->required();
}

int ValidateCommand::Run() const {
  absl::StatusOr<Report> r = ReadReport(path_);
  if (!r.ok()) {
    spdlog::error("xdeep: {}", std::string(r.status().message()));
    return 1;
  }
  std::printf("%s: valid %s, %zu gemm, %zu bandwidth, %zu collective entries, %zu errors\n",
              path_.c_str(), kReportSchema, r->gemm.size(), r->bandwidth.size(),
              r->collectives.size(), r->errors.size());
  return 0;
}

}  // namespace xdeep::profiler
