// Numbered schema migrations for the daemon's SQLite files (store, ledger).
// Each part's version is a row of the table xdeep_schema (the store and the
// ledger may share one file): a part at version N has had migrations 1..N
// applied, each in its own transaction with its version row, so an upgrade
// interrupted half-way leaves the last complete version behind and the next
// start goes on from there.
#pragma once

#include <sqlite3.h>

#include <functional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace xdeep::daemon {

struct Migration {
  int version;       // user_version once applied
  const char* what;  // one line for the log
  std::function<absl::Status(sqlite3*)> apply;
};

// Brings part `who` of `db` to the last version of `migrations` (ascending,
// from 1). Databases written before versions existed read as version 0: every
// migration must therefore also accept a database that already has some of
// its changes (CREATE ... IF NOT EXISTS, AddColumnIfMissing). A database of a
// newer version than this binary knows is refused, not touched.
absl::Status MigrateSchema(sqlite3* db, std::string_view who,
                           std::span<const Migration> migrations);

// The schema version of part `who` in `db` (0: none recorded).
absl::StatusOr<int> SchemaVersion(sqlite3* db, std::string_view who);

// Runs `sql` (several statements allowed); errors name `who`.
absl::Status ExecSql(sqlite3* db, std::string_view who, const char* sql);

// Runs `create` (CREATE ... IF NOT EXISTS of `table` and what keeps it, e.g.
// triggers) and, only if `table` did not exist before, `backfill`: a derived
// table arrives filled from the rows already there, exactly once.
absl::Status CreateDerivedTable(sqlite3* db, std::string_view who, const char* table,
                                const char* create, const char* backfill);

// ALTER TABLE ... ADD COLUMN unless `table` has `column` already.
absl::Status AddColumnIfMissing(sqlite3* db, std::string_view who, const char* table,
                                const char* column, const char* definition);

}  // namespace xdeep::daemon
