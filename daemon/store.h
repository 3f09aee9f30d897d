// Durable state of the daemon in one SQLite database (WAL mode, so a crash
// loses nothing that was committed): decisions, their Slurm jobs, outcomes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;

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
};

struct OutcomeRecord {
  std::string decision_id;
  uint32_t job_id = 0;
  int exit_code = -1;
  double elapsed_s = 0;
  std::vector<double> step_times_s;
};

class Store {
 public:
  // Opens (creating if needed) the database at `path`; ":memory:" for tests.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  absl::Status SaveDecision(const DecisionRecord& record);
  absl::StatusOr<DecisionRecord> GetDecision(const std::string& id);
  // Binding the same job again is a no-op; a different job is refused.
  absl::Status BindJob(const std::string& decision_id, uint32_t job_id);
  // One outcome per (decision, job); a repeated report replaces nothing.
  absl::Status RecordOutcome(const OutcomeRecord& outcome);
  absl::StatusOr<std::vector<OutcomeRecord>> Outcomes(const std::string& decision_id);
  // Decisions for `workload` that have a reported outcome with step times:
  // (decision, its median measured step time), most recent first.
  absl::StatusOr<std::vector<std::pair<DecisionRecord, double>>> MeasuredRuns(
      const std::string& workload, int limit);
  // A probe report a probe job wrote (kept on disk; this indexes it).
  absl::Status SaveProbeReport(const std::string& job_id, const std::string& partition,
                               const std::string& path, bool ingested);
  // Most recent first; uid == nullopt lists everyone's.
  absl::StatusOr<std::vector<DecisionRecord>> Recent(std::optional<uint32_t> uid, int limit);

 private:
  explicit Store(sqlite3* db) : db_(db) {}
  absl::Status Exec(const char* sql);

  std::mutex mu_;
  sqlite3* db_;
};

}  // namespace xdeep::daemon
