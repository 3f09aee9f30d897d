// `xdeep reload`, `xdeep probe` (see admin_commands.h).
#include "daemon/cli/admin_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/munge_credential.h"
#include "client/progress_line.h"

namespace xdeep::cli {
namespace {

std::string ClockText(int64_t s) {
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// Runs `call` on a thread while stderr shows one progress line (what runs,
// elapsed, the longest the wait may take): redrawn each second on a
// terminal, a plain line a minute otherwise.
grpc::Status WaitShowingProgress(const std::function<grpc::Status()>& call, const std::string& what,
                                 int at_most_s) {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  grpc::Status status;
  std::thread worker([&] {
    grpc::Status s = call();
    std::lock_guard lock(mu);
    status = std::move(s);
    done = true;
    done_cv.notify_one();
  });
  client::ProgressLine line(client::TerminalWriter(STDERR_FILENO),
                           [](const std::string& text) { std::cerr << text << "\n"; });
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mu);
  while (!done_cv.wait_for(lock, std::chrono::seconds(1), [&] { return done; })) {
    const int64_t elapsed =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start)
            .count();
    line.Update(fmt::format("xdeep: {}: {} elapsed, at most {}", what, ClockText(elapsed),
                            ClockText(at_most_s)));
  }
  lock.unlock();
  worker.join();
  line.Done();
  return status;
}

}  // namespace

ReloadCommand::ReloadCommand(CLI::App& app) {
  command_ = app.add_subcommand("reload", "re-read the daemon's policy (admins only)");
}

int ReloadCommand::Run(const CliContext& context) const {
  v1::ReloadPolicyRequest req;
  req.set_credential(client::MungeCredential());
  v1::ReloadPolicyResponse resp;
  grpc::ClientContext ctx;
  context.SetDeadline(&ctx);
  grpc::Status s = context.Stub()->ReloadPolicy(&ctx, req, &resp);
  if (!s.ok()) return Fail(s, context);
  if (context.json) {
    std::cout << nlohmann::json{{"schema", "xdeep.reload/1"}, {"reloaded", true}}.dump(2) << "\n";
  } else {
    std::cout << "xdeep: policy reloaded\n";
  }
  return 0;
}

ProbeCommand::ProbeCommand(CLI::App& app) {
  command_ = app.add_subcommand("probe", "run a probe job through Slurm now (admins only)");
  command_->add_option("-p,--partition", partition_,
                       "partition to measure (default: [probes] partition)");
  command_->add_option("-w,--workload", workload_,
                       "compute set: measure this workload's GEMM shapes (TOML file or preset)");
  command_->add_flag("--collectives", collectives_,
                     "measure NCCL collectives instead of the compute set");
  command_->add_option("-N,--nodes", nodes_, "nodes the probe job holds")
      ->check(CLI::Range(1, 100000));
  command_
      ->add_option("--gpus-per-node", gpus_per_node_,
                   "GPUs per node the probe job holds; 0: the CPU (Kokkos) suite")
      ->check(CLI::Range(0, 1024));
}

int ProbeCommand::Run(const CliContext& context) const {
  v1::RunProbesRequest req;
  req.set_credential(client::MungeCredential());
  req.set_partition(partition_);
  req.set_collectives(collectives_);
  req.set_nodes(nodes_);
  req.set_gpus_per_node(gpus_per_node_);
  if (!workload_.empty()) {
    WorkloadArg w;
    if (!ReadWorkloadArg(workload_, &w)) return 1;
    if (w.preset.empty()) {
      req.mutable_workload()->set_toml(w.toml);
    } else {
      req.mutable_workload()->set_preset(w.preset);
    }
    req.mutable_workload()->set_source_name(workload_);
  }
  v1::RunProbesResponse resp;
  grpc::ClientContext ctx;
  constexpr int kLongestWaitS = 3600;  // a probe job queues, then runs
  context.SetDeadline(&ctx, kLongestWaitS * 1000);
  grpc::Status s = WaitShowingProgress(
      [&] { return context.Stub()->RunProbes(&ctx, req, &resp); },
      fmt::format("probe job through xdeepd ({}, partition {})",
                  collectives_         ? fmt::format("collectives over {} nodes", nodes_)
                  : gpus_per_node_ > 0 ? std::string("compute set")
                                       : std::string("CPU suite"),
                  partition_.empty() ? "of [probes]" : partition_),
      std::max(context.timeout_ms / 1000, kLongestWaitS));
  if (!s.ok()) return Fail(s, context);
  if (context.json) {
    std::cout << nlohmann::json{{"schema", "xdeep.probe/1"},
                                {"job_id", resp.job_id()},
                                {"summary", resp.summary()},
                                {"report_path", resp.report_path()},
                                {"ingested", resp.ingested()}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "xdeep: " << resp.summary() << "\nreport: " << resp.report_path()
            << (resp.ingested() ? "\nthe hardware profile now uses these measurements\n"
                                : "\n(stored; no GPU figures to ingest)\n");
  return 0;
}

}  // namespace xdeep::cli
