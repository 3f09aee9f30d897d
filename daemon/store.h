// Durable state of the daemon in one SQLite database (WAL mode, so a crash
// loses nothing that was committed): decisions, their Slurm jobs, outcomes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/group_commit.h"
#include "daemon/wal_checkpointer.h"

namespace xdeep::daemon {

struct DecisionRecord {
  std::string id;
  uint32_t uid = 0;
  std::string workload;  // workload name
  std::string strategy;  // e.g. "dp8"
  int nodes = 0;
  int gpus_per_node = 0;
  double predicted_step_time_s = 0;
  double predicted_cost = 0;
  std::string decision_blob;  // serialized xdeep.v1.Decision
  int64_t created_unix = 0;
  std::optional<uint32_t> job_id;
  // What a measured run of this decision may correct (docs/learning.md).
  std::string fingerprint;  // tuner::ModelFingerprint of the workload
  std::string hardware;     // the hardware profile's label
  std::string partition;
  std::string account;  // Slurm account asked for (-A), may be empty
};

// Which past runs may correct a prediction: same model, hardware and
// partition; runs of `uid` only, or also of `account`'s members; everyone's
// when uid is unset (the site shares learning).
struct LearningScope {
  std::string fingerprint;
  std::string hardware;
  std::string partition;
  std::optional<uint32_t> uid;
  std::string account;
};

struct OutcomeRecord {
  std::string decision_id;
  uint32_t job_id = 0;
  int exit_code = -1;
  double elapsed_s = 0;
  std::vector<double> step_times_s;
  // Why this run must not correct predictions (kept for history); empty when
  // it may.
  std::string flag;
};

class Store {
 public:
  // Opens (creating if needed) the database at `path`; ":memory:" for tests.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Durable once it returns as the store's commits are (synchronous=NORMAL);
  // decisions saved at the same time share one commit (GroupCommit).
  absl::Status SaveDecision(const DecisionRecord& record);
  // The same, without waiting: `done` gets the outcome once the commit that
  // holds the record is done (GroupCommit::WriteThen), on the thread that
  // ran it; it must not call back into the store's group commit.
  void SaveDecisionThen(DecisionRecord record, std::function<void(absl::Status)> done);
  // The same row written through `db`, another connection to this store's
  // file, inside that connection's transaction (the ledger's group commit
  // writes an auto decision's record with its hold: one commit for both).
  static absl::Status InsertDecision(sqlite3* db, const DecisionRecord& record);
  // The database file (empty for ":memory:").
  std::string path() const;
  absl::StatusOr<DecisionRecord> GetDecision(const std::string& id);
  // Binding the same job again is a no-op; a different job is refused.
  absl::Status BindJob(const std::string& decision_id, uint32_t job_id);
  // One outcome per (decision, job); a repeated report replaces nothing.
  absl::Status RecordOutcome(const OutcomeRecord& outcome);
  absl::StatusOr<std::vector<OutcomeRecord>> Outcomes(const std::string& decision_id);
  // Runs in `scope` that may correct predictions, as (decision, its median
  // measured step time), most recent first: step times reported, not
  // flagged, not forgotten, and known to have succeeded (the report said
  // exit code 0 or Slurm recorded COMPLETED) with no failure in Slurm's record.
  absl::StatusOr<std::vector<std::pair<DecisionRecord, double>>> MeasuredRuns(
      const LearningScope& scope, int limit);
  // Slurm's final state of a decision's job (jobcomp's JOBSTATE).
  absl::Status RecordJobEnd(const std::string& decision_id, uint32_t job_id,
                            const std::string& state);
  // The decision whose id is `id_or_prefix` (a unique prefix of 8 or more
  // characters, as `xdeep history` prints them).
  absl::StatusOr<DecisionRecord> FindDecision(const std::string& id_or_prefix);
  // Stops a decision's runs from correcting predictions; returns how many
  // outcomes that concerned.
  absl::StatusOr<int> Forget(const std::string& decision_id);
  // Whether a decision's runs teach the model: "used", "forgotten",
  // "ignored: <why>", "waiting for Slurm's record", or "" without an outcome.
  absl::StatusOr<std::string> LearningState(const std::string& decision_id);
  // A probe report a probe job wrote (kept on disk; this indexes it).
  absl::Status SaveProbeReport(const std::string& job_id, const std::string& partition,
                               const std::string& path, bool ingested);
  // Most recent first; uid == nullopt lists everyone's.
  absl::StatusOr<std::vector<DecisionRecord>> Recent(std::optional<uint32_t> uid, int limit);
  // Changes whenever what MeasuredRuns reads changes (an outcome recorded or
  // forgotten, a job's end): what was learned before may be reused until then.
  uint64_t learning_generation() const { return learning_generation_.load(); }

  // The schema version of the file (schema_migrations.h).
  absl::StatusOr<int> SchemaVersion();

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  absl::Status Exec(const char* sql);

  std::mutex mu_;
  sqlite3* db_;
  // One commit per millisecond at most (group_commit.h): at thousands of
  // decisions per second, a commit each cost more than the decision.
  GroupCommit decisions_{db_, &mu_, "store", std::chrono::microseconds(1000)};
  // The WAL's checkpoints, off the writers' path (every advise request saves
  // its decision record here).
  std::unique_ptr<WalCheckpointer> checkpoints_;
  // Every writer of outcomes or job_ends bumps it.
  std::atomic<uint64_t> learning_generation_{0};
};

}  // namespace xdeep::daemon
