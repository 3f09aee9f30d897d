// WalCheckpointer (see wal_checkpointer.h).
#include "daemon/wal_checkpointer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace xdeep::daemon {

WalCheckpointer::WalCheckpointer(sqlite3* db, std::string who, Options options)
    : db_(db), who_(std::move(who)), options_(options) {
  const char* file = sqlite3_db_filename(db_, "main");
  path_ = file ? file : "";
  if (path_.empty()) return;
  // Opened now, while the owner holds the file it opened: a database
  // replaced later under the same path (ledger.replaced) is not this one's.
  const auto give_up = [&](const char* step) {
    spdlog::warn(
        "event=wal.checkpoint_failed db={} path={} reason=\"{}: {}; SQLite checkpoints on "
        "commit instead\"",
        who_, path_, step, own_ ? sqlite3_errmsg(own_) : "out of memory");
    sqlite3_close(own_);
    own_ = nullptr;
  };
  if (sqlite3_open_v2(path_.c_str(), &own_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    give_up("open");
    return;
  }
  // Reading opens the WAL (a connection that has read nothing has none to
  // checkpoint); this connection never writes, so never checkpoints itself.
  sqlite3_busy_timeout(own_, 1000);
  if (sqlite3_exec(own_, "PRAGMA wal_autocheckpoint=0; SELECT 1 FROM sqlite_master LIMIT 1;",
                   nullptr, nullptr, nullptr) != SQLITE_OK) {
    give_up("first read");
    return;
  }
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
    if (sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) ==
        SQLITE_OK) {
      ++self->inline_;
    }
    return SQLITE_OK;
  }
  // A WAL smaller than what was copied has started over.
  int copied = self->copied_.load(std::memory_order_relaxed);
  if (pages < copied && self->copied_.compare_exchange_strong(copied, 0)) {
    copied = 0;
    ++self->restarts_;
  }
  // A writer faster than the passes leaves each one further behind than
  // caught_up_pages (by what it commits during a pass's syncs, which depend on
  // the disk): the window then widens with the WAL, so a catch-up still comes,
  // copying at most an eighth of it.
  const int window = std::max(self->options_.caught_up_pages, pages / 8);
  if (pages >= self->options_.restart_pages && pages - copied <= window &&
      self->catch_up_armed_.exchange(false)) {
    int log = 0, done = 0;
    if (sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, &log, &done) ==
        SQLITE_OK) {
      ++self->inline_;
      ++self->catch_ups_;
      if (done >= 0) self->copied_.store(done, std::memory_order_relaxed);
    }
    return SQLITE_OK;
  }
  if (pages - copied >= self->options_.pages) {
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
  // SQLITE_BUSY: another checkpoint under way (the store and the ledger share
  // one file, each with a checkpointer), which does the same work. log -1:
  // this connection sees no WAL, so the pass did nothing.
  const bool failed = (rc != SQLITE_OK && rc != SQLITE_BUSY) || (rc == SQLITE_OK && log < 0);
  if (failed) {
    // A fault lasts: its first pass and its end are logged, not every pass
    // between (up to ten a second under load).
    if (failing_++ == 0) {
      spdlog::warn("event=wal.checkpoint_failed db={} path={} reason=\"{}\"", who_, path_,
                   log < 0 ? "no WAL seen by the checkpoint connection" : sqlite3_errmsg(own_));
    }
    return;
  }
  if (rc == SQLITE_OK) {
    copied_.store(done, std::memory_order_relaxed);
    catch_up_armed_.store(true);
  }
  if (failing_ > 0) {
    spdlog::info("event=wal.checkpoint_recovered db={} path={} failed_passes={}", who_, path_,
                 failing_);
    failing_ = 0;
  }
  ++passes_;
}

}  // namespace xdeep::daemon
