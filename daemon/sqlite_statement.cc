// Prepared statements kept per connection (see sqlite_statement.h).
#include "daemon/sqlite_statement.h"

#include <mutex>
#include <unordered_map>

namespace xdeep::daemon {
namespace {

struct Kept {
  sqlite3_stmt* stmt = nullptr;
  bool in_use = false;
};

// Per connection, by SQL text. Each connection is used under its owner's
// lock (Store, Ledger); this one guards only the map.
std::mutex g_mu;
std::unordered_map<sqlite3*, std::unordered_map<std::string, Kept>>& KeptStatements() {
  static auto* kept = new std::unordered_map<sqlite3*, std::unordered_map<std::string, Kept>>;
  return *kept;
}

}  // namespace

Statement::Statement(sqlite3* db, const char* sql) {
  {
    std::lock_guard lock(g_mu);
    auto& mine = KeptStatements()[db];
    if (auto it = mine.find(sql); it != mine.end()) {
      if (!it->second.in_use) {
        it->second.in_use = true;
        stmt_ = it->second.stmt;
        rc_ = SQLITE_OK;
        kept_ = &it->second.in_use;
        return;
      }
    } else if (mine.size() < kMaxKeptStatements) {
      rc_ = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
      if (rc_ == SQLITE_OK && stmt_ != nullptr) {
        kept_ = &mine.emplace(sql, Kept{stmt_, true}).first->second.in_use;
      }
      return;
    }
  }
  rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
}

Statement::~Statement() {
  if (!kept_) {
    sqlite3_finalize(stmt_);
    return;
  }
  // Ends a read left mid-way and forgets the bound values.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  std::lock_guard lock(g_mu);
  *kept_ = false;
}

void ForgetStatements(sqlite3* db) {
  std::lock_guard lock(g_mu);
  auto it = KeptStatements().find(db);
  if (it == KeptStatements().end()) return;
  for (auto& [sql, kept] : it->second) sqlite3_finalize(kept.stmt);
  KeptStatements().erase(it);
}

}  // namespace xdeep::daemon
