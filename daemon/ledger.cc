// SQLite ledger (see ledger.h).
#include "daemon/ledger.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <ctime>

#include "daemon/sqlite_statement.h"

namespace xdeep::daemon {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS reservations (
  decision_id TEXT PRIMARY KEY,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  account TEXT NOT NULL,
  partition TEXT NOT NULL,
  amount REAL NOT NULL,
  nodes INTEGER NOT NULL,
  gpus INTEGER NOT NULL,
  price_per_gpu_hour REAL NOT NULL,
  price_per_node_hour REAL NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('reserved','bound','settled','released')),
  job_id INTEGER,
  created_unix INTEGER NOT NULL,
  expires_unix INTEGER NOT NULL,
  settled_amount REAL NOT NULL DEFAULT 0,
  closed_unix INTEGER
);
CREATE INDEX IF NOT EXISTS reservations_user ON reservations(user, state);
CREATE INDEX IF NOT EXISTS reservations_account ON reservations(account, state);
CREATE INDEX IF NOT EXISTS reservations_job ON reservations(job_id);
)sql";

// Rolls back unless committed: no half-written charge survives an error.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) {
    ok_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~Transaction() {
    if (ok_ && !committed_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  bool ok() const { return ok_; }
  absl::Status Commit() {
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return SqlError(db_, "ledger", "commit");
    }
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  bool ok_ = false;
  bool committed_ = false;
};

ReservationRecord ReadRecord(sqlite3_stmt* st) {
  ReservationRecord r;
  r.decision_id = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  r.uid = static_cast<uint32_t>(sqlite3_column_int64(st, 1));
  r.user = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
  r.account = reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
  r.partition = reinterpret_cast<const char*>(sqlite3_column_text(st, 4));
  r.state = reinterpret_cast<const char*>(sqlite3_column_text(st, 5));
  r.amount = sqlite3_column_double(st, 6);
  r.settled_amount = sqlite3_column_double(st, 7);
  if (sqlite3_column_type(st, 8) != SQLITE_NULL) {
    r.job_id = static_cast<uint32_t>(sqlite3_column_int64(st, 8));
  }
  r.nodes = sqlite3_column_int(st, 9);
  r.gpus = sqlite3_column_int(st, 10);
  return r;
}

constexpr const char* kSelectRecord =
    "SELECT decision_id, uid, user, account, partition, state, amount, settled_amount, job_id, "
    "nodes, gpus FROM reservations ";

}  // namespace

int64_t PeriodStart(const std::string& period, int64_t now_unix) {
  if (period == "total") return 0;
  time_t now = static_cast<time_t>(now_unix);
  std::tm tm{};
  gmtime_r(&now, &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  if (period == "weekly") {
    tm.tm_mday -= (tm.tm_wday + 6) % 7;  // back to Monday
  } else if (period == "monthly") {
    tm.tm_mday = 1;
  }
  return static_cast<int64_t>(timegm(&tm));
}

absl::StatusOr<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::UnavailableError(fmt::format("ledger: cannot open {}: {}", path, message));
  }
  auto ledger = std::unique_ptr<Ledger>(new Ledger(db));
  sqlite3_busy_timeout(db, 10000);
  for (const char* sql : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=FULL;", kSchema}) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      std::string message = error ? error : "unknown";
      sqlite3_free(error);
      return absl::InternalError(fmt::format("ledger: {}", message));
    }
  }
  return ledger;
}

Ledger::~Ledger() { sqlite3_close(db_); }

absl::StatusOr<BudgetUse> Ledger::UseLocked(const BudgetScope& scope, int64_t period_start) {
  const char* sql =
      scope.kind == "account"
          ? "SELECT COALESCE(SUM(CASE WHEN state='settled' AND closed_unix >= ?2 THEN "
            "settled_amount END), 0), COALESCE(SUM(CASE WHEN state IN ('reserved','bound') THEN "
            "amount END), 0) FROM reservations WHERE account = ?1"
          : "SELECT COALESCE(SUM(CASE WHEN state='settled' AND closed_unix >= ?2 THEN "
            "settled_amount END), 0), COALESCE(SUM(CASE WHEN state IN ('reserved','bound') THEN "
            "amount END), 0) FROM reservations WHERE user = ?1";
  Statement st(db_, sql);
  if (!st.ok()) return SqlError(db_, "ledger", "prepare budget use");
  st.Text(1, scope.name);
  st.Int(2, period_start);
  if (sqlite3_step(st.get()) != SQLITE_ROW) return SqlError(db_, "ledger", "budget use");
  BudgetUse use;
  use.scope = scope;
  use.spent = sqlite3_column_double(st.get(), 0);
  use.reserved = sqlite3_column_double(st.get(), 1);
  return use;
}

absl::Status Ledger::Reserve(const Charge& c, const std::vector<BudgetScope>& scopes,
                             int64_t period_start, int64_t now, int64_t ttl_s) {
  std::lock_guard lock(mu_);
  Transaction tx(db_);
  if (!tx.ok()) return SqlError(db_, "ledger", "begin");
  for (const BudgetScope& scope : scopes) {
    if (scope.limit <= 0) continue;
    auto use = UseLocked(scope, period_start);
    if (!use.ok()) return use.status();
    if (use->spent + use->reserved + c.amount > scope.limit + 1e-9) {
      return absl::ResourceExhaustedError(fmt::format(
          "{} {}: remaining {:.2f} of {:.2f} this period ({:.2f} spent, {:.2f} reserved)",
          scope.kind, scope.name, std::max(0.0, use->remaining()), scope.limit, use->spent,
          use->reserved));
    }
  }
  Statement st(db_,
               "INSERT INTO reservations (decision_id, uid, user, account, partition, amount, "
               "nodes, gpus, price_per_gpu_hour, price_per_node_hour, state, created_unix, "
               "expires_unix) VALUES (?,?,?,?,?,?,?,?,?,?,'reserved',?,?)");
  if (!st.ok()) return SqlError(db_, "ledger", "prepare reserve");
  st.Text(1, c.decision_id);
  st.Int(2, c.uid);
  st.Text(3, c.user);
  st.Text(4, c.account);
  st.Text(5, c.partition);
  st.Real(6, c.amount);
  st.Int(7, c.nodes);
  st.Int(8, c.gpus);
  st.Real(9, c.price_per_gpu_hour);
  st.Real(10, c.price_per_node_hour);
  st.Int(11, now);
  st.Int(12, now + ttl_s);
  int rc = sqlite3_step(st.get());
  if (rc == SQLITE_CONSTRAINT) {
    return absl::AlreadyExistsError(fmt::format("decision {} is already reserved", c.decision_id));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "ledger", "reserve");
  return tx.Commit();
}

absl::Status Ledger::Bind(const std::string& id, uint32_t uid, uint32_t job_id, int64_t now,
                          int64_t ttl_s) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "UPDATE reservations SET state='bound', job_id=?1, expires_unix=?4 "
               "WHERE decision_id=?2 AND uid=?3 AND (state='reserved' OR "
               "(state='bound' AND job_id=?1))");
  if (!st.ok()) return SqlError(db_, "ledger", "prepare bind");
  st.Int(1, job_id);
  st.Text(2, id);
  st.Int(3, uid);
  st.Int(4, now + ttl_s);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "bind");
  if (sqlite3_changes(db_) == 0) {
    return absl::FailedPreconditionError(fmt::format(
        "no open reservation {} for this user (already settled, released, or another job's)", id));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Ledger::Settle(const std::string& id, uint32_t uid, double elapsed_s,
                                      int64_t now) {
  std::lock_guard lock(mu_);
  Transaction tx(db_);
  if (!tx.ok()) return SqlError(db_, "ledger", "begin");
  Statement get(db_,
                "SELECT state, settled_amount, nodes, gpus, price_per_gpu_hour, "
                "price_per_node_hour FROM reservations WHERE decision_id=? AND uid=?");
  if (!get.ok()) return SqlError(db_, "ledger", "prepare settle");
  get.Text(1, id);
  get.Int(2, uid);
  if (sqlite3_step(get.get()) != SQLITE_ROW) {
    return absl::NotFoundError(fmt::format("no reservation {} for this user", id));
  }
  const std::string state = reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 0));
  if (state == "settled") return sqlite3_column_double(get.get(), 1);
  if (state == "released") return 0.0;
  const int nodes = sqlite3_column_int(get.get(), 2);
  const int gpus = sqlite3_column_int(get.get(), 3);
  const double gpu_price = sqlite3_column_double(get.get(), 4);
  const double node_price = sqlite3_column_double(get.get(), 5);
  const double hours = std::max(0.0, elapsed_s) / 3600.0;
  const double cost = node_price > 0 ? nodes * hours * node_price : gpus * hours * gpu_price;
  Statement upd(db_,
                "UPDATE reservations SET state='settled', settled_amount=?, closed_unix=? "
                "WHERE decision_id=?");
  if (!upd.ok()) return SqlError(db_, "ledger", "prepare settle update");
  upd.Real(1, cost);
  upd.Int(2, now);
  upd.Text(3, id);
  if (sqlite3_step(upd.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "settle");
  if (absl::Status s = tx.Commit(); !s.ok()) return s;
  return cost;
}

absl::Status Ledger::Release(const std::string& id, uint32_t uid, int64_t now) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "UPDATE reservations SET state='released', closed_unix=? WHERE decision_id=? AND "
               "uid=? AND state IN ('reserved','bound')");
  if (!st.ok()) return SqlError(db_, "ledger", "prepare release");
  st.Int(1, now);
  st.Text(2, id);
  st.Int(3, uid);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "release");
  return absl::OkStatus();
}

absl::StatusOr<int> Ledger::ExpireStale(int64_t now) {
  std::lock_guard lock(mu_);
  Transaction tx(db_);
  if (!tx.ok()) return SqlError(db_, "ledger", "begin");
  int changed = 0;
  for (const char* sql :
       {"UPDATE reservations SET state='released', closed_unix=?1 WHERE state='reserved' AND "
        "expires_unix < ?1",
        "UPDATE reservations SET state='settled', settled_amount=amount, closed_unix=?1 WHERE "
        "state='bound' AND expires_unix < ?1"}) {
    Statement st(db_, sql);
    if (!st.ok()) return SqlError(db_, "ledger", "prepare expire");
    st.Int(1, now);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "expire");
    changed += sqlite3_changes(db_);
  }
  if (absl::Status s = tx.Commit(); !s.ok()) return s;
  return changed;
}

absl::StatusOr<std::vector<BudgetUse>> Ledger::Use(const std::vector<BudgetScope>& scopes,
                                                   int64_t period_start) {
  std::lock_guard lock(mu_);
  std::vector<BudgetUse> out;
  for (const BudgetScope& scope : scopes) {
    auto use = UseLocked(scope, period_start);
    if (!use.ok()) return use.status();
    out.push_back(*use);
  }
  return out;
}

absl::StatusOr<ReservationRecord> Ledger::Get(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement st(db_, (std::string(kSelectRecord) + "WHERE decision_id=?").c_str());
  if (!st.ok()) return SqlError(db_, "ledger", "prepare get");
  st.Text(1, id);
  if (sqlite3_step(st.get()) != SQLITE_ROW) {
    return absl::NotFoundError(fmt::format("no reservation {}", id));
  }
  return ReadRecord(st.get());
}

absl::StatusOr<std::optional<ReservationRecord>> Ledger::ForJob(uint32_t job_id) {
  std::lock_guard lock(mu_);
  Statement st(
      db_,
      (std::string(kSelectRecord) + "WHERE job_id=? ORDER BY created_unix DESC LIMIT 1").c_str());
  if (!st.ok()) return SqlError(db_, "ledger", "prepare for job");
  st.Int(1, job_id);
  if (sqlite3_step(st.get()) != SQLITE_ROW) return std::optional<ReservationRecord>();
  return std::optional<ReservationRecord>(ReadRecord(st.get()));
}

absl::StatusOr<std::vector<ReservationRecord>> Ledger::BoundUnsettled() {
  std::lock_guard lock(mu_);
  Statement st(db_, (std::string(kSelectRecord) + "WHERE state='bound'").c_str());
  if (!st.ok()) return SqlError(db_, "ledger", "prepare bound");
  std::vector<ReservationRecord> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW) out.push_back(ReadRecord(st.get()));
  return out;
}

absl::StatusOr<double> Ledger::TotalSettled() {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "SELECT COALESCE(SUM(settled_amount), 0) FROM reservations WHERE state='settled'");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return SqlError(db_, "ledger", "total");
  return sqlite3_column_double(st.get(), 0);
}

}  // namespace xdeep::daemon
