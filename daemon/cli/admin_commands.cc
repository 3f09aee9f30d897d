// `xdeep reload`, `xdeep probe` (see admin_commands.h).
#include "daemon/cli/admin_commands.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "client/munge_credential.h"

namespace xdeep::cli {

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
  context.SetDeadline(&ctx, 3600 * 1000);  // a probe job queues, then runs
  grpc::Status s = context.Stub()->RunProbes(&ctx, req, &resp);
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
