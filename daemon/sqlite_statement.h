// RAII helpers for the daemon's SQLite code (store and ledger): prepared
// statements kept per connection, and one error shape.
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace xdeep::daemon {

// A prepared statement, reset on every path. Statements are kept per
// connection and reused: preparing one costs more than running the small
// queries of a decision (sqlite3_prepare_v2 was two thirds of a budget
// query's CPU). One already in use is not handed out twice; past
// kMaxKeptStatements per connection they are prepared and finalized each time.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void Text(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), -1, SQLITE_TRANSIENT);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Real(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Blob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }

  static constexpr size_t kMaxKeptStatements = 64;

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
  bool* kept_ = nullptr;  // the kept entry's in-use flag; null: finalized here
};

// Finalizes the statements kept for `db`; call it before sqlite3_close.
void ForgetStatements(sqlite3* db);

// "<who>: <what>: <sqlite's message>" as an Internal error. A full disk is
// its own error, for users and admins alike: nothing is wrong with the daemon
// or the request, and nothing was written.
inline absl::Status SqlError(sqlite3* db, std::string_view who, std::string_view what) {
  const int code = sqlite3_errcode(db);
  if (code == SQLITE_FULL) {
    return absl::FailedPreconditionError(fmt::format(
        "the xdeep {}'s disk is full ({} failed, nothing was recorded); an administrator must "
        "free space on the daemon's disk ({})",
        who, what, sqlite3_db_filename(db, "main")));
  }
  return absl::InternalError(fmt::format("{}: {}: {}", who, what, sqlite3_errmsg(db)));
}

// Runs one statement that returns no rows (BEGIN, COMMIT, SAVEPOINT ...)
// from the kept statements: sqlite3_exec would parse it again every time, and
// a group commit runs five of them per batch. SQLITE_OK when it ran.
inline int RunKept(sqlite3* db, const char* sql) {
  Statement st(db, sql);
  if (!st.ok()) return SQLITE_ERROR;
  const int rc = sqlite3_step(st.get());
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

// BEGIN IMMEDIATE, rolled back unless committed: no half-written change
// survives an error. `who` names the database in errors.
class Transaction {
 public:
  Transaction(sqlite3* db, std::string_view who) : db_(db), who_(who) {
    ok_ = RunKept(db_, "BEGIN IMMEDIATE") == SQLITE_OK;
  }
  ~Transaction() {
    if (ok_ && !committed_) RunKept(db_, "ROLLBACK");
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  bool ok() const { return ok_; }
  absl::Status Commit() {
    if (RunKept(db_, "COMMIT") != SQLITE_OK) {
      return SqlError(db_, who_, "commit");
    }
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  sqlite3* db_;
  std::string_view who_;
  bool ok_ = false;
  bool committed_ = false;
};

}  // namespace xdeep::daemon
