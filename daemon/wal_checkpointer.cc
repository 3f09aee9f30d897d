// WalCheckpointer (see wal_checkpointer.h).
#include "daemon/wal_checkpointer.h"

#include <spdlog/spdlog.h>

namespace xdeep::daemon {

WalCheckpointer::WalCheckpointer(sqlite3* db, std::string who, Options options)
    : db_(db), who_(std::move(who)), options_(options) {
  const char* file = sqlite3_db_filename(db_, "main");
  path_ = file ? file : "";
  if (path_.empty()) return;
  // Opened here, beside the owner's connection: the same file even if the
  // path is later given to another (a replaced database, instance_lock.h).
  if (sqlite3_open_v2(path_.c_str(), &own_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    spdlog::warn(
        "event=wal.checkpoint_failed db={} path={} reason=\"open: {}; SQLite checkpoints on "
        "commit instead\"",
        who_, path_, own_ ? sqlite3_errmsg(own_) : "out of memory");
    sqlite3_close(own_);
    own_ = nullptr;
    return;
  }
  // Opens the WAL (a connection that has read nothing has none to
  // checkpoint); this connection never writes, so never checkpoints itself.
  sqlite3_busy_timeout(own_, 1000);
  sqlite3_exec(own_, "PRAGMA wal_autocheckpoint=0; SELECT 1 FROM sqlite_master LIMIT 1;", nullptr,
               nullptr, nullptr);
  sqlite3_wal_hook(db_, &WalCheckpointer::OnCommit, this);
  thread_ = std::thread([this] { Loop(); });
}

WalCheckpointer::~WalCheckpointer() {
  if (!thread_.joinable()) return;
  // SQLite's automatic checkpoint again for what the owner still commits.
  sqlite3_wal_autocheckpoint(db_, options_.pages);
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  sqlite3_close(own_);
}

// Called by SQLite after each commit on `db` (its mutex held by the writer),
// with the pages now in the WAL.
int WalCheckpointer::OnCommit(void* self_ptr, sqlite3* db, const char* schema, int pages) {
  auto* self = static_cast<WalCheckpointer*>(self_ptr);
  if (pages >= self->options_.inline_pages) {
    // The background passes fell behind for good: as SQLite would, here.
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    ++self->inline_;
    return SQLITE_OK;
  }
  if (pages >= self->options_.pages) {
    {
      std::lock_guard lock(self->mu_);
      self->wanted_ = true;
    }
    self->wake_.notify_one();
  }
  return SQLITE_OK;
}

void WalCheckpointer::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return wanted_ || stopping_; });
    if (stopping_) return;
    wanted_ = false;
    lock.unlock();
    Pass();
    lock.lock();
    wake_.wait_for(lock, options_.gap, [this] { return stopping_; });
  }
}

void WalCheckpointer::Pass() {
  int log = 0, done = 0;
  const int rc = sqlite3_wal_checkpoint_v2(own_, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &done);
  // SQLITE_BUSY: another checkpoint under way (a second connection to the
  // same file has one of its own), which does the same work.
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    spdlog::warn("event=wal.checkpoint_failed db={} path={} reason=\"{}\"", who_, path_,
                 sqlite3_errmsg(own_));
    return;
  }
  ++passes_;
}

}  // namespace xdeep::daemon
