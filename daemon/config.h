// Daemon configuration: the TOML file xdeepd reads at start (and on SIGHUP).
//
// Parsing is strict, pyxis-style: an unknown key, a value of the wrong type or
// out of range is an error that names the file, the line and the fix, so a
// typo never silently falls back to a default.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/fabric.h"
#include "tuner/hardware_profile.h"

namespace xdeep::daemon {

struct ServerConfig {
  // "unix:///path/to.sock" or "host:port" (TCP).
  std::string listen = "unix:///run/xdeep/xdeepd.sock";
  // The admission socket slurmctld's xdeep-admit asks (daemon/admit_socket.h);
  // empty: beside a unix `listen` socket, as its path + ".admit"; none when
  // `listen` is TCP and this is empty (then job_submit.lua cannot admit).
  std::string admit_socket;
  // Concurrent Tune computations. They mostly wait (on munged, on the
  // ledger's durable commit), so there are more than cores: auto launches
  // waiting together share one commit (#27: 4 -> 16 cut xdeepd's CPU per auto
  // decision ~20 %, bench/README.md).
  int worker_threads = 16;
  // A Tune search still running after this much CPU moves to the heavy lane
  // (one low-priority thread), so worst-case requests cannot hold the workers.
  int heavy_after_ms = 50;
  int shutdown_grace_ms = 5000;  // in-flight calls get this long on SIGTERM
  // How often the ledger settles finished batch jobs and expires stale
  // reservations.
  int ledger_interval_s = 60;
};

struct StoreConfig {
  std::string path = "/var/lib/xdeep/xdeep.db";  // SQLite database (WAL)
  // Where etc/slurm/xdeep-jobcomp.sh leaves slurmctld's job-completion
  // records; writable by SlurmUser and the daemon only.
  std::string jobcomp_spool = "/var/spool/xdeep/jobcomp";
};

struct LogConfig {
  std::string level = "info";  // trace, debug, info, warn, error
  std::string file;            // empty: stderr
};

struct HardwareConfig {
  // Built-in profile used when no probe report covers the partition.
  std::string profile = "h100-sxm";
  // Probe reports (JSON, docs/probe_report.md) that override the built-in.
  std::vector<std::string> probe_reports;
  // The [fabric] table (docs/admin.md): the site's NICs and switch topology,
  // applied over the GPU's reference architecture (tuner/fabric.h) in every
  // profile, built in or measured. Empty: that reference architecture.
  std::vector<tuner::FabricKey> fabric;
};

// `hw` with the site's [fabric] table applied (a no-op when it has none).
void ApplySiteFabric(const HardwareConfig& config, tuner::HardwareProfile* hw);

// Per-partition overrides of the site policy (unset: the site value).
struct PartitionPolicy {
  std::optional<bool> tuning_default;  // tune launches that did not ask
  std::optional<double> price_per_gpu_hour;
  std::optional<double> price_per_node_hour;
  std::optional<int> max_nodes;
  std::optional<std::string> enforcement;
};

struct BudgetLimit {
  double limit = 0;                  // per period, in the policy's currency
  std::vector<std::string> members;  // accounts: user names allowed to charge it
};

struct ProbeConfig {
  std::string partition;   // empty: the partition being tuned
  int time_limit_s = 300;  // Slurm time limit of a probe job
  int max_wait_s = 30;     // longest a launch waits for probes before deciding without them
  bool on_launch = false;  // probe a partition the first time a launch needs it
  double budget = 0;       // probe spending per period (0: unlimited)
  std::string probe_path = "/usr/local/bin/xdeep-probe";  // as compute nodes see it
  std::string reports_dir = "/var/lib/xdeep/reports";     // shared with compute nodes
  // profiler/framework_probe.py with the jobs' Python, as compute nodes see it
  // (e.g. ["python3", "/usr/local/share/xdeep/framework_probe.py"]); run after the
  // GPU compute set, its figure joins that report. Empty: not run.
  std::vector<std::string> framework_probe;
  // A decision for a workload whose GEMMs have no answer from cuBLASLt's
  // heuristic queues a heuristic-only job on its partition (one GPU,
  // seconds), at most one per partition per this many seconds; 0: never.
  int heuristic_interval_s = 600;
  // The heuristic's answers kept per GPU model and cuBLASLt / CUDA version
  // (<reports_dir>/gemm-heuristic-answers.json), the most recently asked first.
  int heuristic_answers_max = 200000;
};

struct PolicyConfig {
  std::string enforcement = "advisory";         // "strict": budgets refuse, jobs need reservations
  bool tuning_default = false;                  // partitions not listed
  int max_nodes = 1024;                         // per job
  int max_gpus = 0;                             // per job, 0 = no limit
  std::vector<std::string> allowed_strategies;  // empty = all
  double min_parallel_efficiency = 0;           // configurations below it are never chosen
  // The default objective: the fastest configuration whose cost (plus
  // time_value_per_hour per hour of time to solution) is within this many
  // percent of the least (docs/objectives.md).
  double cost_tolerance_pct = 5;
  double time_value_per_hour = 0;   // in `currency`; 0: time is worth nothing
  // A run longer than its time limit (--time, the partition's MaxTime) is
  // planned as checkpointed segments; each after the first spends this long
  // restarting from its checkpoint.
  double segment_restart_s = 300;
  double price_per_gpu_hour = 1.0;  // in `currency`
  double price_per_node_hour = 0;   // > 0: whole nodes are billed instead
  // "policy": the prices above; "slurm": the partition's TRESBillingWeights
  // times price_per_billing_unit_hour.
  std::string billing = "policy";
  double price_per_billing_unit_hour = 1.0;
  std::string currency = "EUR";
  std::string default_partition;    // empty: Slurm's default partition
  std::vector<std::string> admins;  // user names or numeric uids
  int reservation_ttl_s = 86400;    // holds of admitted jobs expire (the job is still charged)
  // A hold no job was submitted with (the submission failed before or at
  // slurmctld, e.g. sbatch reading its script from a consumed stdin) is
  // released this long after the decision.
  int admission_window_s = 120;
  std::string budget_period = "monthly";  // daily, weekly, monthly, total
  // Whose measured runs correct a user's predictions (docs/learning.md):
  // "user" their own only, "account" also those of the Slurm account they
  // launch under, "site" everyone's.
  std::string learning_scope = "user";
  // A run whose median step time is more than this factor away from the
  // model's prediction is kept, flagged and never learned from.
  double learning_max_ratio = 10;
  // Bounded work per Tune request: configurations one search may score, and
  // seconds it may run (docs/policy.md); past either the request is refused
  // with what to narrow. A client's own deadline stops it sooner.
  int64_t search_max_candidates = 50'000'000;
  int search_max_seconds = 30;
  std::map<std::string, PartitionPolicy> partitions;
  std::map<std::string, BudgetLimit> user_budgets;     // by user name
  std::map<std::string, BudgetLimit> account_budgets;  // by Slurm account
  ProbeConfig probes;

  // The effective value for `partition`.
  bool TuningDefault(const std::string& partition) const;
  int MaxNodes(const std::string& partition) const;
  double PricePerGpuHour(const std::string& partition) const;
  double PricePerNodeHour(const std::string& partition) const;
  bool Strict(const std::string& partition) const;
  bool IsAdmin(uint32_t uid, const std::string& user_name) const;
};

struct IdentityConfig {
  // "munge": every request must carry a valid MUNGE credential (the uid comes
  // from it). "none": no credential is checked (single-user test setups only).
  std::string mode = "munge";
  std::string munge_socket;  // empty: libmunge's default socket
  // Who may call Admit (slurmctld's job_submit/lua runs as SlurmUser): user
  // names or numeric uids.
  std::vector<std::string> controller_users = {"root", "slurm"};
};

struct DaemonConfig {
  ServerConfig server;
  StoreConfig store;
  LogConfig log;
  HardwareConfig hardware;
  PolicyConfig policy;
  IdentityConfig identity;
  std::string source;  // where it was read from, for messages
};

// Parses `text`; errors read "<source>:<line>: <what>; <fix>".
absl::StatusOr<DaemonConfig> ParseDaemonConfig(std::string_view text, std::string_view source);

// Reads and parses the file at `path`.
absl::StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path);

}  // namespace xdeep::daemon
