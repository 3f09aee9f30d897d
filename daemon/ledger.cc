// SQLite ledger (see ledger.h).
#include "daemon/ledger.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <ctime>
#include <string_view>

#include "daemon/schema_migrations.h"
#include "daemon/sqlite_statement.h"

namespace xdeep::daemon {
namespace {

// Version 1: the reservations of the first release.
constexpr const char* kReservationsV1 = R"sql(
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
CREATE INDEX IF NOT EXISTS reservations_job ON reservations(job_id);
)sql";

// Version 2: Slurm's records of each job run (charges, run starts), admission
// tokens, checkpointed segments.
constexpr const char* kJobChargesV2 = R"sql(
-- One row per finished job run as slurmctld recorded it; decision_id NULL for
-- a job that held no reservation (fail=open, or submitted around the plugin).
CREATE TABLE IF NOT EXISTS job_charges (
  job_id INTEGER NOT NULL,
  start_unix INTEGER NOT NULL,
  end_unix INTEGER NOT NULL,
  decision_id TEXT,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  account TEXT NOT NULL,
  partition TEXT NOT NULL,
  nodes INTEGER NOT NULL,
  gpus INTEGER NOT NULL,
  amount REAL NOT NULL,
  charged_unix INTEGER NOT NULL,
  state TEXT,
  PRIMARY KEY (job_id, start_unix)
);
CREATE INDEX IF NOT EXISTS job_charges_user ON job_charges(user, charged_unix);
CREATE TABLE IF NOT EXISTS run_starts (
  job_id INTEGER PRIMARY KEY,
  start_unix INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS job_charges_account ON job_charges(account, charged_unix);
)sql";
struct AddedColumn {
  const char* table;
  const char* column;
  const char* definition;
};
constexpr AddedColumn kColumnsV2[] = {
    {"reservations", "admission_token", "TEXT"},
    {"reservations", "admitted_unix", "INTEGER"},
    {"reservations", "segments", "INTEGER NOT NULL DEFAULT 1"},
    {"job_charges", "state", "TEXT"},
};
constexpr const char* kTokenIndex =
    "CREATE UNIQUE INDEX IF NOT EXISTS reservations_token ON reservations(admission_token)";

// Running totals: what each user and account has spent per UTC day, kept by
// triggers in the same transaction as every write that settles money, so a
// budget check reads at most a period's days (31 rows for a month) instead of
// every reservation the user ever had. Spent = settled reservations by the
// day they closed, plus charges of jobs that held no reservation by the day
// they were charged (UseLocked's definition).
constexpr const char* kSpentByDay = R"sql(
CREATE TABLE IF NOT EXISTS spent_by_day (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  day INTEGER NOT NULL,
  amount REAL NOT NULL,
  PRIMARY KEY (kind, name, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS reservations_user_closed ON reservations(user, state, closed_unix);
CREATE INDEX IF NOT EXISTS reservations_account_closed
  ON reservations(account, state, closed_unix);
-- They serve every (user|account, state) lookup: the two-column indexes of
-- older ledgers only cost writes.
DROP INDEX IF EXISTS reservations_user;
DROP INDEX IF EXISTS reservations_account;
CREATE TRIGGER IF NOT EXISTS spent_reservation_insert AFTER INSERT ON reservations
WHEN NEW.state = 'settled' BEGIN
  INSERT INTO spent_by_day VALUES ('user', NEW.user, NEW.closed_unix - NEW.closed_unix % 86400,
    NEW.settled_amount) ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
  INSERT INTO spent_by_day VALUES ('account', NEW.account,
    NEW.closed_unix - NEW.closed_unix % 86400, NEW.settled_amount)
    ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
END;
CREATE TRIGGER IF NOT EXISTS spent_reservation_update
AFTER UPDATE OF state, settled_amount, closed_unix, user, account ON reservations
WHEN OLD.state = 'settled' OR NEW.state = 'settled' BEGIN
  INSERT INTO spent_by_day SELECT 'user', OLD.user, OLD.closed_unix - OLD.closed_unix % 86400,
    -OLD.settled_amount WHERE OLD.state = 'settled'
    ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
  INSERT INTO spent_by_day SELECT 'account', OLD.account,
    OLD.closed_unix - OLD.closed_unix % 86400, -OLD.settled_amount WHERE OLD.state = 'settled'
    ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
  INSERT INTO spent_by_day SELECT 'user', NEW.user, NEW.closed_unix - NEW.closed_unix % 86400,
    NEW.settled_amount WHERE NEW.state = 'settled'
    ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
  INSERT INTO spent_by_day SELECT 'account', NEW.account,
    NEW.closed_unix - NEW.closed_unix % 86400, NEW.settled_amount WHERE NEW.state = 'settled'
    ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
END;
CREATE TRIGGER IF NOT EXISTS spent_reservation_delete AFTER DELETE ON reservations
WHEN OLD.state = 'settled' BEGIN
  INSERT INTO spent_by_day VALUES ('user', OLD.user, OLD.closed_unix - OLD.closed_unix % 86400,
    -OLD.settled_amount) ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
  INSERT INTO spent_by_day VALUES ('account', OLD.account,
    OLD.closed_unix - OLD.closed_unix % 86400, -OLD.settled_amount)
    ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
END;
CREATE TRIGGER IF NOT EXISTS spent_charge_insert AFTER INSERT ON job_charges
WHEN NEW.decision_id IS NULL BEGIN
  INSERT INTO spent_by_day VALUES ('user', NEW.user, NEW.charged_unix - NEW.charged_unix % 86400,
    NEW.amount) ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
  INSERT INTO spent_by_day VALUES ('account', NEW.account,
    NEW.charged_unix - NEW.charged_unix % 86400, NEW.amount)
    ON CONFLICT DO UPDATE SET amount = amount + excluded.amount;
END;
)sql";

// Open holds per user and account, kept by triggers like spent_by_day: a
// budget check reads one row instead of every hold still open (an auto
// decision holds money until its job is admitted or the hold expires, so a
// busy user has thousands). `holds` counts them: the sums return to exactly
// zero when the last one closes, whatever rounding the additions left.
constexpr const char* kHeldByScope = R"sql(
CREATE TABLE IF NOT EXISTS held_by_scope (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  holds INTEGER NOT NULL,
  amount REAL NOT NULL,
  bound_settled REAL NOT NULL,
  PRIMARY KEY (kind, name)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS held_reservation_insert AFTER INSERT ON reservations
WHEN NEW.state IN ('reserved', 'bound') BEGIN
  INSERT INTO held_by_scope SELECT kind, name, 1, NEW.amount,
    CASE WHEN NEW.state = 'bound' THEN NEW.settled_amount ELSE 0 END
    FROM (SELECT 'user' AS kind, NEW.user AS name UNION ALL SELECT 'account', NEW.account)
    WHERE true ON CONFLICT DO UPDATE SET holds = holds + 1, amount = amount + excluded.amount,
    bound_settled = bound_settled + excluded.bound_settled;
END;
CREATE TRIGGER IF NOT EXISTS held_reservation_update
AFTER UPDATE OF state, amount, settled_amount, user, account ON reservations
WHEN OLD.state IN ('reserved', 'bound') OR NEW.state IN ('reserved', 'bound') BEGIN
  INSERT INTO held_by_scope SELECT kind, name, -1, -OLD.amount,
    CASE WHEN OLD.state = 'bound' THEN -OLD.settled_amount ELSE 0 END
    FROM (SELECT 'user' AS kind, OLD.user AS name UNION ALL SELECT 'account', OLD.account)
    WHERE OLD.state IN ('reserved', 'bound')
    ON CONFLICT DO UPDATE SET holds = holds - 1,
    amount = CASE WHEN holds = 1 THEN 0 ELSE amount + excluded.amount END,
    bound_settled = CASE WHEN holds = 1 THEN 0 ELSE bound_settled + excluded.bound_settled END;
  INSERT INTO held_by_scope SELECT kind, name, 1, NEW.amount,
    CASE WHEN NEW.state = 'bound' THEN NEW.settled_amount ELSE 0 END
    FROM (SELECT 'user' AS kind, NEW.user AS name UNION ALL SELECT 'account', NEW.account)
    WHERE NEW.state IN ('reserved', 'bound')
    ON CONFLICT DO UPDATE SET holds = holds + 1, amount = amount + excluded.amount,
    bound_settled = bound_settled + excluded.bound_settled;
END;
CREATE TRIGGER IF NOT EXISTS held_reservation_delete AFTER DELETE ON reservations
WHEN OLD.state IN ('reserved', 'bound') BEGIN
  INSERT INTO held_by_scope SELECT kind, name, -1, -OLD.amount,
    CASE WHEN OLD.state = 'bound' THEN -OLD.settled_amount ELSE 0 END
    FROM (SELECT 'user' AS kind, OLD.user AS name UNION ALL SELECT 'account', OLD.account)
    WHERE true ON CONFLICT DO UPDATE SET holds = holds - 1,
    amount = CASE WHEN holds = 1 THEN 0 ELSE amount + excluded.amount END,
    bound_settled = CASE WHEN holds = 1 THEN 0 ELSE bound_settled + excluded.bound_settled END;
END;
)sql";

// A ledger written before the open-hold totals existed: its open holds, summed once.
constexpr const char* kBackfillHeldByScope = R"sql(
INSERT INTO held_by_scope
SELECT kind, name, COUNT(*), SUM(amount), SUM(bound_settled) FROM (
  SELECT 'user' AS kind, user AS name, amount,
         CASE WHEN state = 'bound' THEN settled_amount ELSE 0 END AS bound_settled
    FROM reservations WHERE state IN ('reserved', 'bound')
  UNION ALL
  SELECT 'account', account, amount, CASE WHEN state = 'bound' THEN settled_amount ELSE 0 END
    FROM reservations WHERE state IN ('reserved', 'bound'))
GROUP BY kind, name;
)sql";

// A ledger written before the running totals existed: its history, summed once.
constexpr const char* kBackfillSpentByDay = R"sql(
INSERT INTO spent_by_day
SELECT kind, name, day, SUM(amount) FROM (
  SELECT 'user' AS kind, user AS name, closed_unix - closed_unix % 86400 AS day,
         settled_amount AS amount FROM reservations WHERE state = 'settled'
  UNION ALL
  SELECT 'account', account, closed_unix - closed_unix % 86400, settled_amount
    FROM reservations WHERE state = 'settled'
  UNION ALL
  SELECT 'user', user, charged_unix - charged_unix % 86400, amount
    FROM job_charges WHERE decision_id IS NULL
  UNION ALL
  SELECT 'account', account, charged_unix - charged_unix % 86400, amount
    FROM job_charges WHERE decision_id IS NULL)
GROUP BY kind, name, day;
)sql";

// Partial indexes: a hold is written with no job and as 'reserved', so it
// enters none of these until Slurm runs its job or it settles. Each index
// the insert of a hold skips is a B-tree insert and a WAL page less in every
// group commit (auto mode writes one hold per decision). The budget check's
// settled-in-the-period lookups (UseLocked: state = 'settled' and a
// closed_unix range) read the settled ones only.
constexpr const char* kPartialIndexesV5 = R"sql(
DROP INDEX IF EXISTS reservations_job;
CREATE INDEX IF NOT EXISTS reservations_job_known ON reservations(job_id)
  WHERE job_id IS NOT NULL;
DROP INDEX IF EXISTS reservations_user_closed;
DROP INDEX IF EXISTS reservations_account_closed;
CREATE INDEX IF NOT EXISTS reservations_user_settled ON reservations(user, closed_unix)
  WHERE state = 'settled';
CREATE INDEX IF NOT EXISTS reservations_account_settled ON reservations(account, closed_unix)
  WHERE state = 'settled';
)sql";

// Every version of the ledger's schema, oldest first (schema_migrations.h).
const Migration kLedgerMigrations[] = {
    {1, "reservations", [](sqlite3* db) { return ExecSql(db, "ledger", kReservationsV1); }},
    {2, "job charges, run starts, admission tokens, segments",
     [](sqlite3* db) {
       if (absl::Status s = ExecSql(db, "ledger", kJobChargesV2); !s.ok()) return s;
       for (const AddedColumn& c : kColumnsV2) {
         if (absl::Status s = AddColumnIfMissing(db, "ledger", c.table, c.column, c.definition);
             !s.ok()) {
           return s;
         }
       }
       return ExecSql(db, "ledger", kTokenIndex);
     }},
    // The running totals and their backfill in one migration (one
    // transaction): a ledger never has one without the other.
    {3, "running totals per user, account and day",
     [](sqlite3* db) {
       return CreateDerivedTable(db, "ledger", "spent_by_day", kSpentByDay, kBackfillSpentByDay);
     }},
    // Open holds per user and account, with their backfill (as version 3).
    {4, "open holds per user and account",
     [](sqlite3* db) {
       return CreateDerivedTable(db, "ledger", "held_by_scope", kHeldByScope,
                                 kBackfillHeldByScope);
     }},
    {5, "partial indexes: holds enter the job and settled-time indexes only once they have "
        "a job or settle",
     [](sqlite3* db) { return ExecSql(db, "ledger", kPartialIndexesV5); }},
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

// A hold that goes without a job ahead: released, unless runs Slurm requeued
// were charged to it already (those stay spent).
constexpr const char* kReleasedState =
    "CASE WHEN settled_amount > 0 THEN 'settled' ELSE 'released' END";

constexpr const char* kSelectRecord =
    "SELECT decision_id, uid, user, account, partition, state, amount, settled_amount, job_id, "
    "nodes, gpus FROM reservations ";

// Ledger::UseLocked's query for scopes of `column` ("user" or "account").
std::string UseSql(std::string_view column) {
  return fmt::format(
      "SELECT (SELECT COALESCE(SUM(amount), 0) FROM spent_by_day WHERE kind = ?3 AND name = ?1 "
      "AND day >= ?4) + (SELECT COALESCE(SUM(settled_amount), 0) FROM reservations WHERE "
      "{0} = ?1 AND state = 'settled' AND closed_unix >= ?2 AND closed_unix < ?4) + (SELECT "
      "COALESCE(SUM(amount), 0) FROM job_charges WHERE {0} = ?1 AND decision_id IS NULL AND "
      "charged_unix >= ?2 AND charged_unix < ?4) + (SELECT COALESCE(SUM(bound_settled), 0) FROM "
      "held_by_scope WHERE kind = ?3 AND name = ?1), (SELECT COALESCE(SUM(amount), 0) FROM "
      "held_by_scope WHERE kind = ?3 AND name = ?1)",
      column);
}

}  // namespace

bool Billable(std::string_view slurm_state) {
  // Slurm ends a run as NODE_FAIL (or BOOT_FAIL) when a node failed under it
  // or a batch launch failed on the node: the site's failure, not the user's;
  // Slurm requeues such a job, and the run that follows is billed.
  return slurm_state != "NODE_FAIL" && slurm_state != "BOOT_FAIL";
}

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
  for (const char* sql : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=FULL;"}) {
    if (absl::Status s = ExecSql(db, "ledger", sql); !s.ok()) return s;
  }
  if (absl::Status s = MigrateSchema(db, "ledger", kLedgerMigrations); !s.ok()) return s;
  ledger->checkpoints_ = std::make_unique<WalCheckpointer>(db, "ledger");
  return ledger;
}

Ledger::~Ledger() {
  checkpoints_.reset();
  ForgetStatements(db_);
  sqlite3_close(db_);
}

std::string Ledger::path() const {
  const char* file = sqlite3_db_filename(db_, "main");
  return file ? file : "";
}

absl::StatusOr<int> Ledger::SchemaVersion() {
  std::lock_guard lock(mu_);
  return xdeep::daemon::SchemaVersion(db_, "ledger");
}

absl::StatusOr<BudgetUse> Ledger::UseLocked(const BudgetScope& scope, int64_t period_start) {
  // Spent: settled reservations (their jobs' charges), the runs already
  // charged to a hold still bound (a requeued run, a segment), plus the
  // charges of jobs that held none, since the period start: whole days from the running
  // totals, and a period that starts within a day adds that day's part from
  // the rows themselves (through the closed / charged time indexes). Reserved
  // and the bound holds' charges: one row of held_by_scope. Nothing here
  // grows with the scope's history or its open holds. The SQL of each scope
  // kind is formatted once: every auto decision runs it (twice with an
  // advisory budget's warning).
  static const std::string kUserSql = UseSql("user"), kAccountSql = UseSql("account");
  const bool account = scope.kind == "account";
  const std::string& sql = account ? kAccountSql : kUserSql;
  const int64_t first_whole_day =
      period_start % 86400 == 0 ? period_start : period_start - period_start % 86400 + 86400;
  Statement st(db_, sql.c_str());
  if (!st.ok()) return SqlError(db_, "ledger", "prepare budget use");
  st.Text(1, scope.name);
  st.Int(2, period_start);
  st.Text(3, account ? "account" : "user");
  st.Int(4, first_whole_day);
  if (sqlite3_step(st.get()) != SQLITE_ROW) return SqlError(db_, "ledger", "budget use");
  BudgetUse use;
  use.scope = scope;
  use.spent = sqlite3_column_double(st.get(), 0);
  use.reserved = sqlite3_column_double(st.get(), 1);
  return use;
}

absl::Status Ledger::Reserve(const Charge& c, const std::vector<BudgetScope>& scopes,
                             int64_t period_start, int64_t now, int64_t ttl_s,
                             const AlongFn& along, std::vector<BudgetUse>* use_after) {
  return Insert(c, scopes, period_start, now, ttl_s, false, along, use_after);
}

absl::Status Ledger::ReserveForJob(const Charge& c, const std::vector<BudgetScope>& scopes,
                                   int64_t period_start, int64_t now, int64_t ttl_s) {
  return Insert(c, scopes, period_start, now, ttl_s, true, nullptr, nullptr);
}

absl::Status Ledger::Insert(const Charge& c, const std::vector<BudgetScope>& scopes,
                            int64_t period_start, int64_t now, int64_t ttl_s, bool bound,
                            const AlongFn& along, std::vector<BudgetUse>* use_after) {
  return commits_.Write([&] {
    return InsertLocked(c, scopes, period_start, now, ttl_s, bound, along, use_after);
  });
}

absl::Status Ledger::InsertLocked(const Charge& c, const std::vector<BudgetScope>& scopes,
                                  int64_t period_start, int64_t now, int64_t ttl_s, bool bound,
                                  const AlongFn& along, std::vector<BudgetUse>* use_after) {
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
               "expires_unix, admission_token, admitted_unix, segments) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,"
               "?10,CASE WHEN ?14 THEN 'bound' ELSE 'reserved' END,?11,?12,?13,"
               "CASE WHEN ?14 THEN ?11 END,?15)");
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
  if (c.admission_token.empty()) {
    sqlite3_bind_null(st.get(), 13);
  } else {
    st.Text(13, c.admission_token);
  }
  st.Int(14, bound ? 1 : 0);
  st.Int(15, std::max(1, c.segments));
  int rc = sqlite3_step(st.get());
  if (rc == SQLITE_CONSTRAINT) {
    return absl::AlreadyExistsError(fmt::format("decision {} is already reserved", c.decision_id));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "ledger", "reserve");
  if (along) {
    if (absl::Status s = along(db_); !s.ok()) return s;
  }
  if (use_after != nullptr) {
    use_after->clear();
    for (const BudgetScope& scope : scopes) {
      auto use = UseLocked(scope, period_start);
      if (!use.ok()) return use.status();
      use_after->push_back(*use);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Admission> Ledger::Admit(const std::string& token, uint32_t uid, const AdmitAsk& ask,
                                        const ScopesFn& scopes_for, int64_t period_start,
                                        int64_t now, int64_t ttl_s) {
  Admission a;
  absl::Status admitted = commits_.Write([&] {
    return AdmitLocked(token, uid, ask, scopes_for, period_start, now, ttl_s, a);
  });
  if (!admitted.ok()) return admitted;
  return a;
}

absl::Status Ledger::AdmitLocked(const std::string& token, uint32_t uid, const AdmitAsk& ask,
                                 const ScopesFn& scopes_for, int64_t period_start, int64_t now,
                                 int64_t ttl_s, Admission& a) {
  Statement get(db_,
                "SELECT decision_id, uid, partition, state, amount, nodes, user, account, gpus "
                "FROM reservations WHERE admission_token=?");
  if (!get.ok()) return SqlError(db_, "ledger", "prepare admit");
  get.Text(1, token);
  if (sqlite3_step(get.get()) != SQLITE_ROW) {
    return absl::PermissionDeniedError(
        "the job's xdeep admission token is unknown or was already used; each tuned launch "
        "admits exactly one job");
  }
  a.decision_id = reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 0));
  const auto owner = static_cast<uint32_t>(sqlite3_column_int64(get.get(), 1));
  const std::string reserved_partition =
      reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 2));
  const std::string state = reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 3));
  const double amount = sqlite3_column_double(get.get(), 4);
  const int reserved_nodes = sqlite3_column_int(get.get(), 5);
  const std::string user = reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 6));
  const std::string account = reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 7));
  const int reserved_gpus = sqlite3_column_int(get.get(), 8);
  const int reserved_per_node =
      (reserved_gpus + std::max(1, reserved_nodes) - 1) / std::max(1, reserved_nodes);
  if (owner != uid) {
    return absl::PermissionDeniedError("the xdeep reservation belongs to another user");
  }
  if (state != "reserved") {
    return absl::PermissionDeniedError(fmt::format("the xdeep reservation is {}", state));
  }
  if (reserved_partition != ask.partition) {
    return absl::PermissionDeniedError(fmt::format(
        "the xdeep reservation is for partition {}, not {}", reserved_partition, ask.partition));
  }
  if (ask.nodes > reserved_nodes) {
    return absl::PermissionDeniedError(
        fmt::format("the job asks for {} nodes but its xdeep reservation covers {}", ask.nodes,
                    reserved_nodes));
  }
  if (ask.gpus_per_node > reserved_per_node || ask.gpus > reserved_gpus) {
    return absl::PermissionDeniedError(fmt::format(
        "the job asks for more GPUs than its xdeep reservation covers ({} per node, {} in all)",
        reserved_per_node, reserved_gpus));
  }
  const int tasks = std::max(1, ask.array_tasks);
  a.amount = amount * tasks;
  if (tasks > 1 && scopes_for) {
    for (const BudgetScope& scope : scopes_for(user, account)) {
      if (scope.limit <= 0) continue;
      auto use = UseLocked(scope, period_start);
      if (!use.ok()) return use.status();
      // The hold of one task is already counted in `reserved`.
      if (use->spent + use->reserved + a.amount - amount > scope.limit + 1e-9) {
        return absl::PermissionDeniedError(fmt::format(
            "over budget: an array of {} tasks is predicted to cost {:.2f}; {} {}: remaining "
            "{:.2f} of {:.2f} this period",
            tasks, a.amount, scope.kind, scope.name, std::max(0.0, use->remaining() + amount),
            scope.limit));
      }
    }
  }
  Statement upd(db_,
                "UPDATE reservations SET state='bound', admission_token=NULL, amount=?, "
                "expires_unix=?, admitted_unix=? WHERE decision_id=?");
  if (!upd.ok()) return SqlError(db_, "ledger", "prepare admit update");
  upd.Real(1, a.amount);
  upd.Int(2, now + ttl_s);
  upd.Int(3, now);
  upd.Text(4, a.decision_id);
  if (sqlite3_step(upd.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "admit");
  return absl::OkStatus();
}

absl::StatusOr<double> Ledger::ChargeJob(const JobUsage& u, int64_t now) {
  std::lock_guard lock(mu_);
  Transaction tx(db_, "ledger");
  if (!tx.ok()) return SqlError(db_, "ledger", "begin");
  Statement seen(db_, "SELECT amount FROM job_charges WHERE job_id=? AND start_unix=?");
  if (!seen.ok()) return SqlError(db_, "ledger", "prepare charge");
  seen.Int(1, u.job_id);
  seen.Int(2, u.start_unix);
  if (sqlite3_step(seen.get()) == SQLITE_ROW) return sqlite3_column_double(seen.get(), 0);

  // The reservation the controller bound the job to, if it is this user's.
  bool linked = false;
  std::string user = u.user, account = u.account;
  int gpus = u.gpus;
  double gpu_price = u.price_per_gpu_hour, node_price = u.price_per_node_hour;
  if (!u.decision_id.empty()) {
    Statement get(db_,
                  "SELECT uid, user, account, gpus, price_per_gpu_hour, price_per_node_hour, "
                  "nodes FROM reservations WHERE decision_id=?");
    if (!get.ok()) return SqlError(db_, "ledger", "prepare charge lookup");
    get.Text(1, u.decision_id);
    if (sqlite3_step(get.get()) == SQLITE_ROW &&
        static_cast<uint32_t>(sqlite3_column_int64(get.get(), 0)) == u.uid) {
      linked = true;
      user = reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 1));
      account = reinterpret_cast<const char*>(sqlite3_column_text(get.get(), 2));
      // Admit let no job ask more GPUs per node than it reserved.
      const int reserved_nodes = std::max(1, sqlite3_column_int(get.get(), 6));
      gpus = u.nodes * ((sqlite3_column_int(get.get(), 3) + reserved_nodes - 1) / reserved_nodes);
      gpu_price = sqlite3_column_double(get.get(), 4);
      node_price = sqlite3_column_double(get.get(), 5);
    }
  }
  // Slurm's own count where its record has one (a job gets no GPU it did not ask for,
  // and Admit let none ask more than it reserved).
  if (u.slurm_gpus) gpus = *u.slurm_gpus;
  // Slurm's record of a run it requeued says PENDING (the job's state then).
  const bool requeued = u.state == "PENDING" || u.state.starts_with("REQUEUE");
  const double hours = std::max<int64_t>(0, u.end_unix - u.start_unix) / 3600.0;
  const double cost = !Billable(u.state)          ? 0.0
                      : node_price > 0 ? u.nodes * hours * node_price
                                       : gpus * hours * gpu_price;
  Statement ins(db_,
                "INSERT INTO job_charges (job_id, start_unix, end_unix, decision_id, uid, user, "
                "account, partition, nodes, gpus, amount, charged_unix, state) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!ins.ok()) return SqlError(db_, "ledger", "prepare charge insert");
  ins.Int(1, u.job_id);
  ins.Int(2, u.start_unix);
  ins.Int(3, u.end_unix);
  if (linked) {
    ins.Text(4, u.decision_id);
  } else {
    sqlite3_bind_null(ins.get(), 4);
  }
  ins.Int(5, u.uid);
  ins.Text(6, user);
  ins.Text(7, account);
  ins.Text(8, u.partition);
  ins.Int(9, u.nodes);
  ins.Int(10, gpus);
  ins.Real(11, cost);
  ins.Int(12, now);
  ins.Text(13, u.state);
  if (sqlite3_step(ins.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "charge");
  if (linked && requeued) {
    // A segment ended and Slurm requeued the job: its charge is spent, and
    // the hold stays for the next segment while segments remain.
    Statement runs(db_,
                   "SELECT (SELECT COUNT(*) FROM job_charges WHERE decision_id=?1), segments, "
                   "state FROM reservations WHERE decision_id=?1");
    if (!runs.ok()) return SqlError(db_, "ledger", "prepare charge segments");
    runs.Text(1, u.decision_id);
    if (sqlite3_step(runs.get()) == SQLITE_ROW && sqlite3_column_int(runs.get(), 0) <
                                                       sqlite3_column_int(runs.get(), 1) &&
        std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(runs.get(), 2))) ==
            "bound") {
      Statement upd(db_,
                    "UPDATE reservations SET settled_amount = settled_amount + ?1, "
                    "job_id = COALESCE(job_id, ?2), expires_unix = ?3 + expires_unix - "
                    "COALESCE(admitted_unix, created_unix), admitted_unix = ?3 "
                    "WHERE decision_id=?4");
      if (!upd.ok()) return SqlError(db_, "ledger", "prepare charge segment");
      upd.Real(1, cost);
      upd.Int(2, u.job_id);
      upd.Int(3, now);
      upd.Text(4, u.decision_id);
      if (sqlite3_step(upd.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "charge segment");
      if (absl::Status s = tx.Commit(); !s.ok()) return s;
      return cost;
    }
  }
  if (linked) {
    // The first task closes the hold; later tasks of an array add to it. A
    // hold released early (a report of a failed submission) is charged all
    // the same: the job ran. A run Slurm requeued adds its charge and keeps
    // the hold for the run to come.
    Statement upd(db_,
                  "UPDATE reservations SET settled_amount = settled_amount + ?1, closed_unix = "
                  "CASE WHEN state='settled' OR (?5 AND state IN ('reserved','bound')) THEN "
                  "closed_unix ELSE ?2 END, job_id = COALESCE(job_id, ?3), state = CASE WHEN ?5 "
                  "AND state IN ('reserved','bound') THEN state ELSE 'settled' END, "
                  "admission_token=NULL WHERE decision_id=?4");
    if (!upd.ok()) return SqlError(db_, "ledger", "prepare charge settle");
    upd.Real(1, cost);
    upd.Int(2, now);
    upd.Int(3, u.job_id);
    upd.Text(4, u.decision_id);
    upd.Int(5, u.run_again ? 1 : 0);
    if (sqlite3_step(upd.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "charge settle");
  }
  if (absl::Status s = tx.Commit(); !s.ok()) return s;
  return cost;
}

absl::StatusOr<double> Ledger::Settle(const std::string& id, uint32_t uid, double elapsed_s,
                                      int64_t now) {
  std::lock_guard lock(mu_);
  Transaction tx(db_, "ledger");
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

absl::Status Ledger::Release(const std::string& id, uint32_t uid, int64_t now, bool bound_too) {
  std::lock_guard lock(mu_);
  Statement st(db_, (std::string("UPDATE reservations SET state=") + kReleasedState +
                     ", admission_token=NULL, closed_unix=? WHERE decision_id=? AND uid=? AND "
                     "(state='reserved' OR (? AND state='bound'))")
                        .c_str());
  if (!st.ok()) return SqlError(db_, "ledger", "prepare release");
  st.Int(1, now);
  st.Text(2, id);
  st.Int(3, uid);
  st.Int(4, bound_too ? 1 : 0);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "release");
  return absl::OkStatus();
}

absl::StatusOr<int> Ledger::ExpireStale(int64_t now) {
  std::lock_guard lock(mu_);
  Statement st(db_, (std::string("UPDATE reservations SET state=") + kReleasedState +
                     ", admission_token=NULL, closed_unix=?1 WHERE state IN ('reserved','bound') "
                     "AND expires_unix < ?1")
                        .c_str());
  if (!st.ok()) return SqlError(db_, "ledger", "prepare expire");
  st.Int(1, now);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "expire");
  return sqlite3_changes(db_);
}

absl::StatusOr<std::vector<ReservationRecord>> Ledger::BoundBefore(int64_t cutoff) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               (std::string(kSelectRecord) + "WHERE state='bound' AND admitted_unix < ?").c_str());
  if (!st.ok()) return SqlError(db_, "ledger", "prepare bound");
  st.Int(1, cutoff);
  std::vector<ReservationRecord> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW) out.push_back(ReadRecord(st.get()));
  return out;
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

absl::Status Ledger::NoteRunStarts(const std::vector<std::pair<uint32_t, int64_t>>& starts) {
  std::lock_guard lock(mu_);
  Transaction tx(db_, "ledger");
  if (!tx.ok()) return SqlError(db_, "ledger", "begin");
  Statement st(db_, "INSERT OR REPLACE INTO run_starts (job_id, start_unix) VALUES (?, ?)");
  if (!st.ok()) return SqlError(db_, "ledger", "prepare run start");
  for (const auto& [job, start] : starts) {
    sqlite3_reset(st.get());
    st.Int(1, job);
    st.Int(2, start);
    if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "run start");
  }
  return tx.Commit();
}

absl::StatusOr<std::optional<int64_t>> Ledger::TakeRunStart(uint32_t job_id) {
  std::lock_guard lock(mu_);
  Statement get(db_, "SELECT start_unix FROM run_starts WHERE job_id=?");
  if (!get.ok()) return SqlError(db_, "ledger", "prepare run start");
  get.Int(1, job_id);
  std::optional<int64_t> start;
  if (sqlite3_step(get.get()) == SQLITE_ROW) start = sqlite3_column_int64(get.get(), 0);
  Statement del(db_, "DELETE FROM run_starts WHERE job_id=?");
  if (!del.ok()) return SqlError(db_, "ledger", "prepare run start");
  del.Int(1, job_id);
  if (sqlite3_step(del.get()) != SQLITE_DONE) return SqlError(db_, "ledger", "run start");
  return start;
}

absl::StatusOr<double> Ledger::TotalSettled() {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "SELECT (SELECT COALESCE(SUM(settled_amount), 0) FROM reservations WHERE "
               "state IN ('settled','bound')) + (SELECT COALESCE(SUM(amount), 0) FROM job_charges WHERE "
               "decision_id IS NULL)");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return SqlError(db_, "ledger", "total");
  return sqlite3_column_double(st.get(), 0);
}

}  // namespace xdeep::daemon
