// The budget ledger: every tuned launch reserves its predicted cost when the
// decision is made, is bound to its Slurm job at launch, and is settled with
// the real cost (elapsed x resources x price) at exit, or released if it never
// started. Stale reservations expire. The budget check and the reservation are
// one SQLite transaction (BEGIN IMMEDIATE), so concurrent launches can never
// overspend, and a crash loses or doubles nothing (WAL, one row per decision).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

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
  absl::Status Reserve(const Charge& charge, const std::vector<BudgetScope>& scopes,
                       int64_t period_start_unix, int64_t now_unix, int64_t ttl_s);
  // Binding the same job twice is a no-op; the owner must match.
  absl::Status Bind(const std::string& decision_id, uint32_t uid, uint32_t job_id, int64_t now_unix,
                    int64_t ttl_s);
  // Real cost from elapsed seconds; idempotent (a second call returns the
  // amount charged the first time and changes nothing).
  absl::StatusOr<double> Settle(const std::string& decision_id, uint32_t uid, double elapsed_s,
                                int64_t now_unix);
  // A launch that never started: its reservation is freed. Idempotent.
  absl::Status Release(const std::string& decision_id, uint32_t uid, int64_t now_unix);
  // Unbound reservations past their expiry are released; bound ones that
  // never reported are settled at the reserved amount. Returns rows changed.
  absl::StatusOr<int> ExpireStale(int64_t now_unix);

  absl::StatusOr<std::vector<BudgetUse>> Use(const std::vector<BudgetScope>& scopes,
                                             int64_t period_start_unix);
  absl::StatusOr<ReservationRecord> Get(const std::string& decision_id);
  // The reservation bound to `job_id`, if any.
  absl::StatusOr<std::optional<ReservationRecord>> ForJob(uint32_t job_id);
  // Reservations bound to a job that no report has settled yet (batch jobs).
  absl::StatusOr<std::vector<ReservationRecord>> BoundUnsettled();
  // Sum of settled amounts (for audits and tests).
  absl::StatusOr<double> TotalSettled();

 private:
  explicit Ledger(sqlite3* db) : db_(db) {}
  absl::StatusOr<BudgetUse> UseLocked(const BudgetScope& scope, int64_t period_start_unix);

  std::mutex mu_;
  sqlite3* db_;
};

// Start of the budget period holding `now_unix` (UTC): "daily", "weekly"
// (Monday), "monthly" (the 1st), "total" (0).
int64_t PeriodStart(const std::string& period, int64_t now_unix);

}  // namespace xdeep::daemon
