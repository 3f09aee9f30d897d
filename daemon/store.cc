// SQLite-backed Store (see store.h). One connection guarded by a mutex: the
// daemon's write rate is a few rows per launch, far below SQLite's limits.
#include "daemon/store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "daemon/schema_migrations.h"
#include "daemon/sqlite_statement.h"
#include "daemon/text.h"

namespace xdeep::daemon {
namespace {

// Version 1: the tables of the first release.
constexpr const char* kTablesV1 = R"sql(
CREATE TABLE IF NOT EXISTS decisions (
  id TEXT PRIMARY KEY,
  uid INTEGER NOT NULL,
  workload TEXT NOT NULL,
  strategy TEXT NOT NULL,
  nodes INTEGER NOT NULL,
  gpus_per_node INTEGER NOT NULL,
  predicted_step_time_s REAL NOT NULL,
  predicted_cost REAL NOT NULL,
  decision BLOB NOT NULL,
  created_unix INTEGER NOT NULL,
  job_id INTEGER
);
CREATE TABLE IF NOT EXISTS outcomes (
  decision_id TEXT NOT NULL REFERENCES decisions(id),
  job_id INTEGER NOT NULL,
  exit_code INTEGER NOT NULL,
  elapsed_s REAL NOT NULL,
  step_times TEXT NOT NULL,
  reported_unix INTEGER NOT NULL,
  PRIMARY KEY (decision_id, job_id)
);
)sql";

// Version 2: probe reports, Slurm's end states, and the learning scope of a
// decision. Rows written before have empty scopes and match none (their
// model is unknown).
constexpr const char* kTablesV2 = R"sql(
CREATE TABLE IF NOT EXISTS probe_reports (
  job_id TEXT PRIMARY KEY,
  partition TEXT NOT NULL,
  path TEXT NOT NULL,
  ingested INTEGER NOT NULL,
  created_unix INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS job_ends (
  decision_id TEXT NOT NULL,
  job_id INTEGER NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (decision_id, job_id)
);
)sql";
struct AddedColumn {
  const char* table;
  const char* column;
  const char* definition;
};
constexpr AddedColumn kColumnsV2[] = {
    {"decisions", "fingerprint", "TEXT NOT NULL DEFAULT ''"},
    {"decisions", "hardware", "TEXT NOT NULL DEFAULT ''"},
    {"decisions", "partition", "TEXT NOT NULL DEFAULT ''"},
    {"decisions", "account", "TEXT NOT NULL DEFAULT ''"},
    {"outcomes", "flag", "TEXT NOT NULL DEFAULT ''"},
    {"outcomes", "forgotten", "INTEGER NOT NULL DEFAULT 0"},
};

// Every version of the store's schema, oldest first (schema_migrations.h).
const Migration kStoreMigrations[] = {
    {1, "decisions and outcomes", [](sqlite3* db) { return ExecSql(db, "store", kTablesV1); }},
    {2, "probe reports, job end states, learning scope",
     [](sqlite3* db) {
       if (absl::Status s = ExecSql(db, "store", kTablesV2); !s.ok()) return s;
       for (const AddedColumn& c : kColumnsV2) {
         if (absl::Status s = AddColumnIfMissing(db, "store", c.table, c.column, c.definition);
             !s.ok()) {
           return s;
         }
       }
       return absl::OkStatus();
     }},
};

// A run teaches the model only when it is known to have succeeded: the
// client said exit code 0 or Slurm recorded COMPLETED, and Slurm recorded no
// failure (a client's word never outweighs Slurm's record).
constexpr const char* kUsableRun =
    "o.step_times != '' AND o.flag = '' AND o.forgotten = 0 "
    "AND NOT EXISTS (SELECT 1 FROM job_ends e WHERE e.decision_id = o.decision_id "
    "AND e.state != 'COMPLETED') "
    "AND (o.exit_code = 0 OR EXISTS (SELECT 1 FROM job_ends e WHERE e.decision_id = "
    "o.decision_id AND e.state = 'COMPLETED'))";

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string JoinTimes(const std::vector<double>& times) {
  std::ostringstream out;
  out.precision(17);
  for (size_t i = 0; i < times.size(); ++i) out << (i ? "," : "") << times[i];
  return out.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::UnavailableError(
        fmt::format("store: cannot open {}: {}; check that the directory exists and is writable by "
                    "xdeepd ([store] path)",
                    path, message));
  }
  auto store = std::unique_ptr<Store>(new Store(db));
  sqlite3_busy_timeout(db, 5000);
  for (const char* sql :
       {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;", "PRAGMA foreign_keys=ON;"}) {
    if (absl::Status s = store->Exec(sql); !s.ok()) return s;
  }
  if (absl::Status s = MigrateSchema(db, "store", kStoreMigrations); !s.ok()) return s;
  store->checkpoints_ = std::make_unique<WalCheckpointer>(db, "store");
  return store;
}

Store::~Store() {
  decisions_.Stop();  // the records queued by SaveDecisionThen, committed
  checkpoints_.reset();
  ForgetStatements(db_);
  sqlite3_close(db_);
}

absl::StatusOr<int> Store::SchemaVersion() {
  std::lock_guard lock(mu_);
  return xdeep::daemon::SchemaVersion(db_, "store");
}

absl::Status Store::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    absl::Status s = absl::InternalError(fmt::format("store: {}", error ? error : "unknown error"));
    sqlite3_free(error);
    return s;
  }
  return absl::OkStatus();
}

absl::Status Store::SaveDecision(const DecisionRecord& r) {
  return decisions_.Write([&] { return InsertDecision(db_, r); });
}

void Store::SaveDecisionThen(DecisionRecord record, std::function<void(absl::Status)> done) {
  decisions_.WriteThen(
      [this, record = std::move(record)] { return InsertDecision(db_, record); }, std::move(done));
}

std::string Store::path() const {
  const char* file = sqlite3_db_filename(db_, "main");
  return file ? file : "";
}

absl::Status Store::InsertDecision(sqlite3* db_, const DecisionRecord& r) {
  Statement st(db_,
               "INSERT INTO decisions (id, uid, workload, strategy, nodes, gpus_per_node, "
               "predicted_step_time_s, predicted_cost, decision, created_unix, fingerprint, "
               "hardware, partition, account) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!st.ok()) return SqlError(db_, "store", "prepare insert decision");
  st.Text(1, r.id);
  st.Int(2, r.uid);
  st.Text(3, r.workload);
  st.Text(4, r.strategy);
  st.Int(5, r.nodes);
  st.Int(6, r.gpus_per_node);
  st.Real(7, r.predicted_step_time_s);
  st.Real(8, r.predicted_cost);
  st.Blob(9, r.decision_blob);
  st.Int(10, r.created_unix ? r.created_unix : NowUnix());
  st.Text(11, r.fingerprint);
  st.Text(12, r.hardware);
  st.Text(13, r.partition);
  st.Text(14, r.account);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "store", "insert decision");
  return absl::OkStatus();
}

absl::StatusOr<DecisionRecord> Store::GetDecision(const std::string& id) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "SELECT uid, workload, strategy, nodes, gpus_per_node, predicted_step_time_s, "
               "predicted_cost, decision, created_unix, job_id, fingerprint, hardware, partition, "
               "account FROM decisions WHERE id = ?");
  if (!st.ok()) return SqlError(db_, "store", "prepare select decision");
  st.Text(1, id);
  if (sqlite3_step(st.get()) != SQLITE_ROW) {
    return absl::NotFoundError(fmt::format("no decision with id '{}'", id));
  }
  DecisionRecord r;
  r.id = id;
  r.uid = static_cast<uint32_t>(sqlite3_column_int64(st.get(), 0));
  r.workload = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 1));
  r.strategy = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 2));
  r.nodes = sqlite3_column_int(st.get(), 3);
  r.gpus_per_node = sqlite3_column_int(st.get(), 4);
  r.predicted_step_time_s = sqlite3_column_double(st.get(), 5);
  r.predicted_cost = sqlite3_column_double(st.get(), 6);
  r.decision_blob.assign(static_cast<const char*>(sqlite3_column_blob(st.get(), 7)),
                         sqlite3_column_bytes(st.get(), 7));
  r.created_unix = sqlite3_column_int64(st.get(), 8);
  if (sqlite3_column_type(st.get(), 9) != SQLITE_NULL) {
    r.job_id = static_cast<uint32_t>(sqlite3_column_int64(st.get(), 9));
  }
  r.fingerprint = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 10));
  r.hardware = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 11));
  r.partition = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 12));
  r.account = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 13));
  return r;
}

absl::Status Store::BindJob(const std::string& decision_id, uint32_t job_id) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "UPDATE decisions SET job_id = ? WHERE id = ? AND (job_id IS NULL OR job_id = ?)");
  if (!st.ok()) return SqlError(db_, "store", "prepare bind");
  st.Int(1, job_id);
  st.Text(2, decision_id);
  st.Int(3, job_id);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "store", "bind");
  if (sqlite3_changes(db_) == 0) {
    return absl::FailedPreconditionError(
        fmt::format("decision '{}' is unknown or already bound to another job", decision_id));
  }
  return absl::OkStatus();
}

absl::Status Store::RecordOutcome(const OutcomeRecord& o) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "INSERT OR IGNORE INTO outcomes (decision_id, job_id, exit_code, elapsed_s, "
               "step_times, reported_unix, flag) VALUES (?,?,?,?,?,?,?)");
  if (!st.ok()) return SqlError(db_, "store", "prepare insert outcome");
  std::string times = JoinTimes(o.step_times_s);
  st.Text(1, o.decision_id);
  st.Int(2, o.job_id);
  st.Int(3, o.exit_code);
  st.Real(4, o.elapsed_s);
  st.Text(5, times);
  st.Int(6, NowUnix());
  st.Text(7, o.flag);
  int rc = sqlite3_step(st.get());
  if (rc == SQLITE_CONSTRAINT) {
    return absl::NotFoundError(fmt::format("no decision with id '{}'", o.decision_id));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "store", "insert outcome");
  ++learning_generation_;
  return absl::OkStatus();
}

absl::Status Store::SaveProbeReport(const std::string& job_id, const std::string& partition,
                                    const std::string& path, bool ingested) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "INSERT OR REPLACE INTO probe_reports (job_id, partition, path, ingested, "
               "created_unix) VALUES (?,?,?,?,?)");
  if (!st.ok()) return SqlError(db_, "store", "prepare probe report");
  st.Text(1, job_id);
  st.Text(2, partition);
  st.Text(3, path);
  st.Int(4, ingested ? 1 : 0);
  st.Int(5, NowUnix());
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "store", "insert probe report");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DecisionRecord>> Store::Recent(std::optional<uint32_t> uid, int limit) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "SELECT id, uid, workload, strategy, nodes, gpus_per_node, predicted_step_time_s, "
               "predicted_cost, created_unix, job_id FROM decisions WHERE (?1 < 0 OR uid = ?1) "
               "ORDER BY created_unix DESC, rowid DESC LIMIT ?2");
  if (!st.ok()) return SqlError(db_, "store", "prepare recent");
  st.Int(1, uid ? static_cast<int64_t>(*uid) : -1);
  st.Int(2, limit);
  std::vector<DecisionRecord> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW) {
    DecisionRecord r;
    r.id = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
    r.uid = static_cast<uint32_t>(sqlite3_column_int64(st.get(), 1));
    r.workload = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 2));
    r.strategy = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 3));
    r.nodes = sqlite3_column_int(st.get(), 4);
    r.gpus_per_node = sqlite3_column_int(st.get(), 5);
    r.predicted_step_time_s = sqlite3_column_double(st.get(), 6);
    r.predicted_cost = sqlite3_column_double(st.get(), 7);
    r.created_unix = sqlite3_column_int64(st.get(), 8);
    if (sqlite3_column_type(st.get(), 9) != SQLITE_NULL) {
      r.job_id = static_cast<uint32_t>(sqlite3_column_int64(st.get(), 9));
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<DecisionRecord, double>>> Store::MeasuredRuns(
    const LearningScope& scope, int limit) {
  std::lock_guard lock(mu_);
  const std::string sql = fmt::format(
      "SELECT d.id, d.decision, o.step_times, d.uid FROM decisions d "
      "JOIN outcomes o ON o.decision_id = d.id WHERE d.fingerprint = ?1 "
      "AND d.hardware = ?2 AND d.partition = ?3 AND (?4 < 0 OR d.uid = "
      "?4 OR (?5 != '' AND d.account = ?5)) AND {} "
      "ORDER BY o.reported_unix DESC, o.rowid DESC LIMIT ?6",
      kUsableRun);
  Statement st(db_, sql.c_str());
  if (!st.ok()) return SqlError(db_, "store", "prepare measured runs");
  if (scope.fingerprint.empty()) return std::vector<std::pair<DecisionRecord, double>>();
  st.Text(1, scope.fingerprint);
  st.Text(2, scope.hardware);
  st.Text(3, scope.partition);
  st.Int(4, scope.uid ? static_cast<int64_t>(*scope.uid) : -1);
  st.Text(5, scope.uid ? scope.account : std::string());
  st.Int(6, limit);
  std::vector<std::pair<DecisionRecord, double>> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW) {
    DecisionRecord r;
    r.id = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
    r.decision_blob.assign(static_cast<const char*>(sqlite3_column_blob(st.get(), 1)),
                           sqlite3_column_bytes(st.get(), 1));
    r.uid = static_cast<uint32_t>(sqlite3_column_int64(st.get(), 3));
    std::vector<double> times;
    for (std::string_view t :
         Split(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 2)), ',', true)) {
      if (auto v = ParseNumber<double>(t); v && *v > 0) times.push_back(*v);
    }
    if (times.empty()) continue;
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    out.emplace_back(std::move(r), times[times.size() / 2]);
  }
  return out;
}

absl::Status Store::RecordJobEnd(const std::string& decision_id, uint32_t job_id,
                                 const std::string& state) {
  std::lock_guard lock(mu_);
  // A requeued job ends more than once: its last record is its state.
  Statement st(db_, "INSERT OR REPLACE INTO job_ends (decision_id, job_id, state) VALUES (?,?,?)");
  if (!st.ok()) return SqlError(db_, "store", "prepare job end");
  st.Text(1, decision_id);
  st.Int(2, job_id);
  st.Text(3, state);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "store", "insert job end");
  ++learning_generation_;
  return absl::OkStatus();
}

absl::StatusOr<DecisionRecord> Store::FindDecision(const std::string& id_or_prefix) {
  constexpr size_t kMinPrefix = 8;
  if (id_or_prefix.size() < kMinPrefix) {
    return absl::InvalidArgumentError(fmt::format(
        "decision id '{}' is too short; give at least {} characters, as `xdeep history` prints",
        id_or_prefix, kMinPrefix));
  }
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu_);
    Statement st(db_, "SELECT id FROM decisions WHERE substr(id, 1, ?1) = ?2 LIMIT 2");
    if (!st.ok()) return SqlError(db_, "store", "prepare find decision");
    st.Int(1, static_cast<int64_t>(id_or_prefix.size()));
    st.Text(2, id_or_prefix);
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      ids.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)));
    }
  }
  if (ids.size() > 1) {
    return absl::InvalidArgumentError(fmt::format(
        "decision id '{}' names more than one decision; give more characters", id_or_prefix));
  }
  if (ids.empty())
    return absl::NotFoundError(fmt::format("no decision with id '{}'", id_or_prefix));
  return GetDecision(ids.front());
}

absl::StatusOr<int> Store::Forget(const std::string& decision_id) {
  std::lock_guard lock(mu_);
  Statement st(db_, "UPDATE outcomes SET forgotten = 1 WHERE decision_id = ?");
  if (!st.ok()) return SqlError(db_, "store", "prepare forget");
  st.Text(1, decision_id);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db_, "store", "forget");
  ++learning_generation_;
  return sqlite3_changes(db_);
}

absl::StatusOr<std::string> Store::LearningState(const std::string& decision_id) {
  std::lock_guard lock(mu_);
  const std::string sql = fmt::format(
      "SELECT o.forgotten, o.flag, o.step_times, o.exit_code, "
      "(SELECT group_concat(state) FROM job_ends e WHERE e.decision_id "
      "= o.decision_id), {} FROM outcomes o WHERE o.decision_id = ? "
      "ORDER BY o.job_id LIMIT 1",
      kUsableRun);
  Statement st(db_, sql.c_str());
  if (!st.ok()) return SqlError(db_, "store", "prepare learning state");
  st.Text(1, decision_id);
  if (sqlite3_step(st.get()) != SQLITE_ROW) return std::string();
  auto text = [&](int i) {
    const unsigned char* v = sqlite3_column_text(st.get(), i);
    return v ? std::string(reinterpret_cast<const char*>(v)) : std::string();
  };
  if (sqlite3_column_int(st.get(), 5)) return std::string("used");
  if (sqlite3_column_int(st.get(), 0)) return std::string("forgotten");
  if (!text(1).empty()) return "ignored: " + text(1);
  if (text(2).empty()) return std::string("ignored: no step times reported");
  const std::string states = text(4);
  if (!states.empty()) return "ignored: Slurm recorded " + states;
  const int exit_code = sqlite3_column_int(st.get(), 3);
  if (exit_code > 0) return fmt::format("ignored: exit code {}", exit_code);
  return std::string("waiting for Slurm's record");
}

absl::StatusOr<std::vector<OutcomeRecord>> Store::Outcomes(const std::string& decision_id) {
  std::lock_guard lock(mu_);
  Statement st(db_,
               "SELECT job_id, exit_code, elapsed_s, step_times FROM outcomes "
               "WHERE decision_id = ? ORDER BY job_id");
  if (!st.ok()) return SqlError(db_, "store", "prepare select outcomes");
  st.Text(1, decision_id);
  std::vector<OutcomeRecord> out;
  while (sqlite3_step(st.get()) == SQLITE_ROW) {
    OutcomeRecord o;
    o.decision_id = decision_id;
    o.job_id = static_cast<uint32_t>(sqlite3_column_int64(st.get(), 0));
    o.exit_code = sqlite3_column_int(st.get(), 1);
    o.elapsed_s = sqlite3_column_double(st.get(), 2);
    std::string times = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 3));
    for (std::string_view t : Split(times, ',', true)) {
      o.step_times_s.push_back(ParseNumber<double>(t).value_or(0));
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace xdeep::daemon
