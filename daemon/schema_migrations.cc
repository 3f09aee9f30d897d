// Schema migrations (see schema_migrations.h).
#include "daemon/schema_migrations.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <string>

#include "daemon/sqlite_statement.h"

namespace xdeep::daemon {

absl::Status ExecSql(sqlite3* db, std::string_view who, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    if (sqlite3_errcode(db) == SQLITE_FULL) {
      sqlite3_free(error);
      return SqlError(db, who, "schema");
    }
    absl::Status s =
        absl::InternalError(fmt::format("{}: {}", who, error ? error : "unknown error"));
    sqlite3_free(error);
    return s;
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<bool> TableExists(sqlite3* db, std::string_view who, const char* table) {
  Statement st(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  if (!st.ok()) return SqlError(db, who, "read the schema");
  st.Text(1, table);
  return sqlite3_step(st.get()) == SQLITE_ROW;
}

}  // namespace

absl::StatusOr<int> SchemaVersion(sqlite3* db, std::string_view who) {
  absl::StatusOr<bool> versioned = TableExists(db, who, "xdeep_schema");
  if (!versioned.ok()) return versioned.status();
  if (!*versioned) return 0;
  Statement st(db, "SELECT version FROM xdeep_schema WHERE part = ?");
  if (!st.ok()) return SqlError(db, who, "read schema version");
  st.Text(1, std::string(who));
  const int rc = sqlite3_step(st.get());
  if (rc == SQLITE_DONE) return 0;
  if (rc != SQLITE_ROW) return SqlError(db, who, "read schema version");
  return sqlite3_column_int(st.get(), 0);
}

absl::Status CreateDerivedTable(sqlite3* db, std::string_view who, const char* table,
                                const char* create, const char* backfill) {
  absl::StatusOr<bool> existed = TableExists(db, who, table);
  if (!existed.ok()) return existed.status();
  if (absl::Status s = ExecSql(db, who, create); !s.ok()) return s;
  return *existed ? absl::OkStatus() : ExecSql(db, who, backfill);
}

absl::Status AddColumnIfMissing(sqlite3* db, std::string_view who, const char* table,
                                const char* column, const char* definition) {
  const std::string sql =
      fmt::format("SELECT 1 FROM pragma_table_info('{}') WHERE name = ?", table);
  Statement info(db, sql.c_str());
  if (!info.ok()) return SqlError(db, who, "prepare table info");
  info.Text(1, column);
  if (sqlite3_step(info.get()) == SQLITE_ROW) return absl::OkStatus();
  return ExecSql(
      db, who, fmt::format("ALTER TABLE {} ADD COLUMN {} {};", table, column, definition).c_str());
}

namespace {

absl::Status SetSchemaVersion(sqlite3* db, std::string_view who, int version) {
  if (absl::Status s = ExecSql(db, who,
                               "CREATE TABLE IF NOT EXISTS xdeep_schema (part TEXT PRIMARY KEY, "
                               "version INTEGER NOT NULL)");
      !s.ok()) {
    return s;
  }
  Statement st(db,
               "INSERT INTO xdeep_schema VALUES (?, ?) ON CONFLICT (part) DO UPDATE SET "
               "version = excluded.version");
  if (!st.ok()) return SqlError(db, who, "prepare schema version");
  st.Text(1, std::string(who));
  st.Int(2, version);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqlError(db, who, "write schema version");
  return absl::OkStatus();
}

}  // namespace

absl::Status MigrateSchema(sqlite3* db, std::string_view who,
                           std::span<const Migration> migrations) {
  const int latest = migrations.empty() ? 0 : migrations.back().version;
  for (const Migration& m : migrations) {
    // Another process may be migrating the same file: the version is read
    // again under the write lock, and a migration already done is skipped.
    if (absl::Status s = ExecSql(db, who, "BEGIN IMMEDIATE"); !s.ok()) return s;
    auto rollback = [db] { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); };
    absl::StatusOr<int> current = SchemaVersion(db, who);
    if (!current.ok()) {
      rollback();
      return current.status();
    }
    if (*current > latest) {
      rollback();
      return absl::FailedPreconditionError(fmt::format(
          "{}: {} has schema version {}, newer than this xdeepd knows ({}); run the xdeepd that "
          "wrote it, or restore the backup taken before the upgrade",
          who, sqlite3_db_filename(db, "main"), *current, latest));
    }
    if (*current >= m.version) {
      rollback();
      continue;
    }
    absl::Status applied = m.apply(db);
    if (applied.ok()) applied = SetSchemaVersion(db, who, m.version);
    if (applied.ok()) applied = ExecSql(db, who, "COMMIT");
    if (!applied.ok()) {
      rollback();
      return absl::Status(applied.code(),
                          fmt::format("{} (schema migration to version {}: {}; the database "
                                      "is left at version {})",
                                      std::string(applied.message()), m.version, m.what, *current));
    }
    spdlog::info("event=schema.migrated db={} from={} to={} what=\"{}\"", who, *current, m.version,
                 m.what);
  }
  return absl::OkStatus();
}

}  // namespace xdeep::daemon
