// What the plugin, the `xdeep` CLI and xdeep-step-report ask the
// daemon, as plain C++ (no gRPC, no protobuf), so the plugin itself loads
// nothing heavy. The gRPC implementation (grpc_daemon_client.cc) is linked
// into the tools, and into the module the plugin dlopens only when a request
// is actually made (spank_plugin/daemon_client_loader.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace xdeep::client {

struct TuneQuery {
  std::string mode;             // "auto", "advise", "explain"
  std::string launcher;         // "srun", "sbatch", "salloc"
  std::string workload_toml;    // file contents, or
  std::string workload_preset;  // a preset name
  std::string workload_source;  // path for messages
  int max_nodes = 0, max_tasks = 0, max_gpus_per_node = 0, max_gpus = 0;
  int max_tasks_per_node = 0, cpus_per_task = 0, excluded_nodes = 0;
  uint32_t allocation_job_id = 0;  // 0: not inside an allocation
  int allocation_nodes = 0, allocation_gpus_per_node = 0, allocation_cpus_per_node = 0;
  std::string allocation_nodelist;
  std::string allocation_gpu_request;  // how it asked for GPUs ("gpu:2 per node")
  double allocation_time_left_s = 0;   // 0: no time limit (or unknown)
  double time_limit_s = 0;             // the launch's --time, 0: not given
  std::string partition, account;
  std::string objective;  // "", "cost", "time", "deadline", "budget"
  double budget = 0, deadline_s = 0;
  double cost_tolerance_pct = -1;  // < 0: the site's default
  std::vector<std::string> strategies;  // --xdeep-strategies; empty: any
  std::vector<std::string> argv;
  std::string cwd, host;
  uint32_t uid = 0;
  bool implicit = false;  // tuning came from the site default, not the user
};

struct LayoutRow {
  std::string strategy;
  int nodes = 0, gpus_per_node = 0, tasks = 0;
  int dp = 1, tp = 1, pp = 1, cp = 1, sharding_stage = 0;
  bool sequence_parallel = false;
  int micro_batch = 1, grad_accumulation = 1;
  bool recompute = false;
  bool selective_recompute = false;  // only the attention core recomputed
  int64_t global_batch = 0;
  std::string pipeline_schedule;  // "1f1b" or "interleaved" when pp > 1, else empty
  int virtual_stages = 1;
  double step_time_s = 0, time_to_solution_s = 0, cost = 0;
  int64_t memory_per_gpu_bytes = 0;
  std::string why;
};

struct TuneAnswer {
  std::string decision_id;
  LayoutRow best;
  std::vector<LayoutRow> alternatives;
  std::string explanation, hardware_label, workload_name, currency;
  uint64_t candidates_evaluated = 0;
  bool skipped = false;  // the daemon chose not to tune; the launch runs as written
  std::string skip_reason;
  std::string admission_token;  // single-use proof of the reservation, for job_submit.lua
  std::string app_launcher;     // the workload's [parallel] launcher; empty: srun
  double time_limit_s = 0;      // each job's time limit (--time), 0: none
  int segments = 1;             // checkpointed jobs the run is planned as
  double segment_cost = 0;      // what one segment is predicted to cost (the hold)
  std::string limited_by;       // which bounds limited the choice, empty: none
  std::string server_version;   // xdeepd's version, empty: a daemon that does not say
};

struct ReportQuery {
  std::string decision_id;
  uint32_t job_id = 0;
  int exit_code = -1;
  double elapsed_s = 0;
  std::vector<double> step_times_s;
  bool launch_failed = false;  // the job never started: free the hold
  bool final = false;          // the launch that owns the decision
};

struct ClientError {
  // kUnavailable: the daemon is down, slow or speaking garbage (fail open).
  // kRefused: the daemon answered and said no (bad workload, over budget...).
  enum Kind { kUnavailable, kRefused } kind = kUnavailable;
  std::string message;
};

using ProgressCallback = std::function<void(const std::string& stage, const std::string& line)>;

class DaemonClient {
 public:
  virtual ~DaemonClient() = default;
  // All calls give up at `deadline`; false and `error` on failure.
  virtual bool Tune(const TuneQuery& query, std::chrono::steady_clock::time_point deadline,
                    const ProgressCallback& progress, TuneAnswer* answer, ClientError* error) = 0;
  virtual bool Report(const ReportQuery& query, std::chrono::steady_clock::time_point deadline,
                      ClientError* error) = 0;
};

// The gRPC client connected to `address` ("unix:///run/xdeep/xdeepd.sock",
// "host:port"); every request carries a fresh MUNGE credential.
std::unique_ptr<DaemonClient> ConnectDaemon(const std::string& address);

}  // namespace xdeep::client
