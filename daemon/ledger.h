// The budget ledger. A tuned launch reserves its predicted cost when the
// decision is made (a hold, with a single-use admission token); slurmctld's
// job_submit/lua consumes the token when the job is submitted (Admit: the hold
// is now bound to a job); the charge is what Slurm's job-completion record
// says the job used (ChargeJob: GPUs or nodes x END-START x price), one row
// per job run, so a record delivered twice is charged once. Holds whose
// submission failed are released; stale ones expire. Every check-and-write is
// one SQLite transaction (BEGIN IMMEDIATE): concurrent launches never
// overspend, and a crash loses or doubles nothing (WAL).
//
// Group commit: the writes of launches (Reserve, ReserveForJob, Admit) that
// arrive while a commit is under way wait for the next one, and one writer
// runs them all in a single transaction, each in its own savepoint, with one
// durable commit (one fsync) for the batch. Each caller returns only after
// the commit that holds its own write: what a client is told is on disk.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/group_commit.h"
#include "daemon/wal_checkpointer.h"

struct sqlite3;

namespace xdeep::daemon {

// A budget the charge counts against.
struct BudgetScope {
  std::string kind;  // "user" or "account"
  std::string name;
  double limit = 0;  // 0 = unlimited (still tracked)
};

struct Charge {
  std::string decision_id;
  uint32_t uid = 0;
  std::string user;
  std::string account;  // may be empty
  std::string partition;
  double amount = 0;  // predicted cost
  int nodes = 0;
  int gpus = 0;
  double price_per_gpu_hour = 0;
  double price_per_node_hour = 0;  // > 0: nodes are billed instead of GPUs
  std::string admission_token;     // empty: no job can be admitted with it
  // Checkpointed segments the run is planned as (each a run of one requeued
  // job); `amount` is one segment's cost, held again after each run.
  int segments = 1;
};

// What slurmctld's job-completion record says a finished job (one array task,
// one heterogeneous component, one run of a requeued job) used.
struct JobUsage {
  uint32_t job_id = 0;
  int64_t start_unix = 0, end_unix = 0;
  uint32_t uid = 0;
  std::string user, account, partition, state;
  int nodes = 0;
  int gpus = 0;  // GPUs of whole nodes: billed when the job held no reservation
  std::optional<int> slurm_gpus;  // GPUs Slurm allocated (JOB_GRES): billed when known
  bool run_again = false;   // Slurm requeued the job: its hold stays for the next run
  std::string decision_id;  // from the job's AdminComment, set by the controller only
  double price_per_gpu_hour = 0, price_per_node_hour = 0;  // for jobs with no reservation
};

// What a submitted job asks for, as slurmctld's job_submit.lua sees it.
struct AdmitAsk {
  std::string partition;
  int nodes = 0;          // minimum node count, 0 = unknown
  int gpus_per_node = 0;  // --gpus-per-node / --gres=gpu:N, 0 = none asked
  int gpus = 0;           // --gpus (whole job), 0 = none asked
  int array_tasks = 1;
};

// What Admit found: the reservation now bound to the job.
struct Admission {
  std::string decision_id;
  double amount = 0;  // the hold, times the array's task count
};

struct BudgetUse {
  BudgetScope scope;
  double spent = 0;     // settled since the period start
  double reserved = 0;  // reserved or bound, not yet settled
  double remaining() const { return scope.limit > 0 ? scope.limit - spent - reserved : 0; }
};

struct ReservationRecord {
  std::string decision_id;
  uint32_t uid = 0;
  std::string user, account, partition, state;
  double amount = 0, settled_amount = 0;
  std::optional<uint32_t> job_id;
  int nodes = 0, gpus = 0;
};

class Ledger {
 public:
  static absl::StatusOr<std::unique_ptr<Ledger>> Open(const std::string& path);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // Checks every scope and reserves, atomically. ResourceExhausted (message
  // names the scope, its remaining amount and the charge) when one would be
  // exceeded; AlreadyExists for a decision id reserved before.
  // `along` (optional) writes more rows through the ledger's connection in
  // the hold's own savepoint (Store::InsertDecision: the decision's record):
  // both are kept or neither. `use_after` (optional) receives each scope's
  // use with the hold, read in its transaction (an advisory budget's warning
  // without a second trip through the ledger).
  using AlongFn = std::function<absl::Status(sqlite3* db)>;
  absl::Status Reserve(const Charge& charge, const std::vector<BudgetScope>& scopes,
                       int64_t period_start_unix, int64_t now_unix, int64_t ttl_s,
                       const AlongFn& along = nullptr,
                       std::vector<BudgetUse>* use_after = nullptr);
  // The same for a job slurmctld is admitting with no tuned launch (a
  // heterogeneous job's component): the hold is bound to the job at once.
  absl::Status ReserveForJob(const Charge& charge, const std::vector<BudgetScope>& scopes,
                             int64_t period_start_unix, int64_t now_unix, int64_t ttl_s);
  // Consumes `token` for a job of `uid`: the reservation must be open and
  // unused, the user's, for the job's partition, and no smaller than what the
  // job asks (nodes, GPUs per node, GPUs). An array holds amount x tasks, checked against
  // the budgets `scopes_for(user, account)` names (limit 0: not enforced).
  // PermissionDenied (message for the user) when refused; the token stays
  // unused then.
  using ScopesFn =
      std::function<std::vector<BudgetScope>(const std::string& user, const std::string& account)>;
  absl::StatusOr<Admission> Admit(const std::string& token, uint32_t uid, const AdmitAsk& ask,
                                  const ScopesFn& scopes_for, int64_t period_start_unix,
                                  int64_t now_unix, int64_t ttl_s);
  // Charges one finished job run from Slurm's record, against the decision
  // its AdminComment names (when it is the same user's) or, with none, as an
  // unreserved charge of the job's user. Idempotent per (job, start): a second
  // delivery returns the first amount and changes nothing. A run of a
  // decision planned in segments that Slurm requeued (its record says
  // PENDING) while segments remain keeps the hold of the next segment.
  absl::StatusOr<double> ChargeJob(const JobUsage& usage, int64_t now_unix);
  // Daemon-internal work (probe jobs) timed by the daemon itself; idempotent.
  absl::StatusOr<double> Settle(const std::string& decision_id, uint32_t uid, double elapsed_s,
                                int64_t now_unix);
  // A hold whose submission failed: freed. Only an unadmitted hold, unless
  // `bound_too` (the caller checked that Slurm holds no job for it). Idempotent.
  absl::Status Release(const std::string& decision_id, uint32_t uid, int64_t now_unix,
                       bool bound_too = false);
  // Holds past their expiry are released (a job that still runs is charged
  // from its record when it ends). Returns rows changed.
  absl::StatusOr<int> ExpireStale(int64_t now_unix);
  // Holds admitted before `cutoff_unix` whose job has not been charged yet:
  // the caller releases those Slurm holds no job for (a submission that
  // failed after job_submit.lua admitted it).
  absl::StatusOr<std::vector<ReservationRecord>> BoundBefore(int64_t cutoff_unix);

  absl::StatusOr<std::vector<BudgetUse>> Use(const std::vector<BudgetScope>& scopes,
                                             int64_t period_start_unix);
  absl::StatusOr<ReservationRecord> Get(const std::string& decision_id);
  // When running jobs started, as the daemon saw them in squeue: Slurm 22.05
  // records a requeued run with START = END = the requeue time, and this is
  // how long it had run. RunStart forgets the job's entry.
  absl::Status NoteRunStarts(const std::vector<std::pair<uint32_t, int64_t>>& starts);
  absl::StatusOr<std::optional<int64_t>> TakeRunStart(uint32_t job_id);
  // Sum of settled amounts, reserved and unreserved (for audits and tests).
  absl::StatusOr<double> TotalSettled();

  // The schema version of the file (schema_migrations.h).
  absl::StatusOr<int> SchemaVersion();
  // The database file (empty for ":memory:").
  std::string path() const;

 private:
  explicit Ledger(sqlite3* db) : db_(db) {}
  absl::StatusOr<BudgetUse> UseLocked(const BudgetScope& scope, int64_t period_start_unix);
  absl::Status Insert(const Charge& charge, const std::vector<BudgetScope>& scopes,
                      int64_t period_start_unix, int64_t now_unix, int64_t ttl_s, bool bound,
                      const AlongFn& along, std::vector<BudgetUse>* use_after);
  // The SQL of Insert and Admit, inside a group commit's transaction.
  absl::Status InsertLocked(const Charge& charge, const std::vector<BudgetScope>& scopes,
                            int64_t period_start_unix, int64_t now_unix, int64_t ttl_s,
                            bool bound, const AlongFn& along, std::vector<BudgetUse>* use_after);
  absl::Status AdmitLocked(const std::string& token, uint32_t uid, const AdmitAsk& ask,
                           const ScopesFn& scopes_for, int64_t period_start_unix,
                           int64_t now_unix, int64_t ttl_s, Admission& admission);
  std::mutex mu_;  // the connection: one transaction at a time
  sqlite3* db_;
  // Insert's and Admit's writes, durable once Write returns (synchronous=FULL).
  // One commit (one sync) per millisecond at most (group_commit.h).
  GroupCommit commits_{db_, &mu_, "ledger", std::chrono::microseconds(1000)};
  // The WAL's checkpoints, off the writers' path: each commit still syncs
  // the WAL (a charge is durable once Write returns), none waits for the
  // database file's sync as well.
  std::unique_ptr<WalCheckpointer> checkpoints_;
};

// Whether a run Slurm ended in `slurm_state` (its JOBSTATE) is billed: not
// when the site failed it (NODE_FAIL, BOOT_FAIL). See docs/admin.md.
bool Billable(std::string_view slurm_state);

// Start of the budget period holding `now_unix` (UTC): "daily", "weekly"
// (Monday), "monthly" (the 1st), "total" (0).
int64_t PeriodStart(const std::string& period, int64_t now_unix);

}  // namespace xdeep::daemon
