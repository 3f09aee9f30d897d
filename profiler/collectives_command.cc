// xdeep-probe collectives (see probe_commands.h).
#include "absl/time/time.h"
#include "profiler/bootstrap.h"
#include "profiler/collective_math.h"
#include "profiler/dtype.h"
#include "profiler/gpu_probes.h"
#include "profiler/probe_commands.h"
#include "profiler/probe_output.h"
#include "spdlog/spdlog.h"

namespace xdeep::profiler {

CollectivesCommand::CollectivesCommand(CLI::App& app)
    : command_(app.add_subcommand(
          "collectives", "NCCL collectives; ranks from srun or RANK/WORLD_SIZE/MASTER_ADDR")) {
  CLI::App* c = command_;
  c->add_option(
      "--ops", ops_,
      "all or a comma list of all_reduce,all_gather,reduce_scatter,broadcast,send_recv,all_to_all");
  c->add_option("--min-bytes", min_bytes_, "Smallest message (e.g. 1K)");
  c->add_option("--max-bytes", max_bytes_, "Largest message (e.g. 1G)");
  c->add_option("--factor", factor_, "Size multiplier between steps")->check(CLI::Range(2, 1024));
  c->add_option("--dtype", dtype_, "bf16, fp16 or fp32");
  c->add_option("--samples", samples_, "Timed samples per size")->check(CLI::Range(1, 10000000));
  c->add_option("--warmup", warmup_, "Untimed calls per size")->check(CLI::Range(0, 1000));
  c->add_option("--init-timeout", init_timeout_, "Seconds for rendezvous and NCCL init");
  c->add_option("--op-time-limit", op_limit_, "Seconds per operation and size");
  c->add_option("--time-limit", time_limit_, "Seconds for the whole run (watchdog)");
  c->add_option("-o,--out", out_, "Report file (JSON), written by rank 0");
}

int CollectivesCommand::Run() const {
  absl::StatusOr<DistEnv> env = DistEnvFromEnvironment();
  if (!env.ok()) {
    spdlog::error("xdeep: {}", std::string(env.status().message()));
    return 1;
  }
  auto watchdog = StartRunWatchdog(time_limit_, out_, env->rank == 0);
  CollectiveOptions o;
  absl::StatusOr<std::vector<CollectiveOp>> op_list = ParseCollectiveOpList(ops_);
  absl::StatusOr<int64_t> lo = ParseByteSize(min_bytes_), hi = ParseByteSize(max_bytes_);
  absl::StatusOr<DType> dt = ParseDType(dtype_);
  if (!op_list.ok() || !lo.ok() || !hi.ok() || !dt.ok() || *dt == DType::kTf32) {
    spdlog::error("xdeep: bad --ops, --min-bytes, --max-bytes or --dtype");
    return 1;
  }
  o.ops = *op_list;
  o.min_bytes = *lo;
  o.max_bytes = *hi;
  o.factor = factor_;
  o.dtype = *dt;
  o.samples = samples_;
  o.warmup = warmup_;
  o.init_timeout = absl::Seconds(init_timeout_);
  o.op_time_limit = absl::Seconds(op_limit_);
  spdlog::info("xdeep: rank {}/{} (local {}, {} node(s), from {}), rendezvous {}:{}", env->rank,
               env->world_size, env->local_rank, env->nodes, env->source, env->master_addr,
               env->master_port);
  absl::StatusOr<Report> r = RunCollectiveSuite(*env, o);
  if (!r.ok()) {
    spdlog::error("xdeep: {}", std::string(r.status().message()));
    return 1;
  }
  watchdog->Cancel();
  if (env->rank != 0) return r->errors.empty() ? 0 : 2;
  return FinishReport(*r, out_, true);
}

}  // namespace xdeep::profiler
