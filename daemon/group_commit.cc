// GroupCommit (see group_commit.h).
#include "daemon/group_commit.h"

#include <thread>

#include "daemon/sqlite_statement.h"

namespace xdeep::daemon {

struct GroupCommit::Pending {
  const std::function<absl::Status()>* write;
  absl::Status result;
  bool done = false;
  // Each writer waits on its own: a commit wakes the writers it held and the
  // one that leads the next, not every writer queued behind it (with many
  // workers waiting, most woken by a shared notify_all went back to sleep).
  std::condition_variable wake;
  // WriteThen's: the write it owns, and whom to tell (nobody waits on `wake`).
  std::function<absl::Status()> owned;
  std::function<void(absl::Status)> then;
};

absl::Status GroupCommit::Write(const std::function<absl::Status()>& write) {
  Pending mine{&write};
  std::unique_lock lock(queue_mu_);
  queue_.push_back(&mine);
  // The first writer to find no commit under way runs one for everything
  // queued (its own write included); the others wait for theirs.
  while (!mine.done) {
    if (committing_) {
      mine.wake.wait(lock);
      continue;
    }
    LeadCommit(lock);
  }
  return mine.result;
}

void GroupCommit::WriteThen(std::function<absl::Status()> write,
                            std::function<void(absl::Status)> done) {
  auto* pending = new Pending{nullptr};
  pending->owned = std::move(write);
  pending->write = &pending->owned;
  pending->then = std::move(done);
  {
    std::lock_guard lock(queue_mu_);
    if (!stopping_) {
      if (!committer_.joinable()) committer_ = std::thread([this] { CommitLoop(); });
      queue_.push_back(pending);
      if (!committing_) committer_wake_.notify_one();
      return;
    }
  }
  // Not after Stop: the connection may be closing.
  pending->then(absl::UnavailableError(who_ + ": the daemon is stopping"));
  delete pending;
}

void GroupCommit::LeadCommit(std::unique_lock<std::mutex>& lock) {
  committing_ = true;
  if (spacing_.count() > 0) {
    const auto ready = last_start_ + spacing_;
    if (std::chrono::steady_clock::now() < ready) {
      // Nobody else leads meanwhile (committing_): they queue behind us.
      lock.unlock();
      std::this_thread::sleep_until(ready);
      lock.lock();
    }
    last_start_ = std::chrono::steady_clock::now();
  }
  std::vector<Pending*> batch;
  batch.swap(queue_);
  lock.unlock();
  CommitBatch(batch);
  lock.lock();
  std::vector<Pending*> told;  // WriteThen's, answered below without the lock
  for (Pending* w : batch) {
    if (w->then) {
      told.push_back(w);
      continue;
    }
    w->done = true;
    w->wake.notify_one();  // the leader's own: nobody waits on it
  }
  committing_ = false;
  // The first writer queued meanwhile leads the next commit (unless one
  // arriving first takes the queue: then it is in that batch).
  WakeNextLeaderLocked();
  if (told.empty()) return;
  lock.unlock();
  for (Pending* w : told) {
    w->then(w->result);
    delete w;
  }
  lock.lock();
}

void GroupCommit::WakeNextLeaderLocked() {
  if (queue_.empty()) return;
  if (queue_.front()->then) {
    committer_wake_.notify_one();
  } else {
    queue_.front()->wake.notify_one();
  }
}

void GroupCommit::CommitLoop() {
  std::unique_lock lock(queue_mu_);
  for (;;) {
    committer_wake_.wait(lock, [this] { return !committing_ && (!queue_.empty() || stopping_); });
    if (queue_.empty()) return;  // stopping, and nothing left to commit
    LeadCommit(lock);
  }
}

void GroupCommit::Stop() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  committer_wake_.notify_all();
  if (committer_.joinable()) committer_.join();
}

void GroupCommit::CommitBatch(const std::vector<Pending*>& batch) {
  std::lock_guard lock(*db_mu_);
  Transaction tx(db_, who_);
  if (!tx.ok()) {
    const absl::Status begin = SqlError(db_, who_, "begin");
    for (Pending* w : batch) w->result = begin;
    return;
  }
  // A write alone needs no savepoint: if it fails, nothing is committed.
  const bool savepoints = batch.size() > 1;
  bool any_ok = false;
  for (Pending* w : batch) {
    if (savepoints && RunKept(db_, "SAVEPOINT w") != SQLITE_OK) {
      w->result = SqlError(db_, who_, "savepoint");
      continue;
    }
    w->result = (*w->write)();
    if (sqlite3_get_autocommit(db_)) {
      // SQLite rolled the whole transaction back (an I/O error, a full
      // disk): no write of the batch is kept, and none may run outside it.
      const absl::Status lost = w->result.ok() ? SqlError(db_, who_, "group commit") : w->result;
      for (Pending* other : batch) other->result = lost;
      return;
    }
    if (savepoints) {
      if (!w->result.ok()) RunKept(db_, "ROLLBACK TO w");
      RunKept(db_, "RELEASE w");
    }
    any_ok |= w->result.ok();
  }
  if (!any_ok) return;  // nothing to keep: the transaction rolls back
  if (absl::Status committed = tx.Commit(); !committed.ok()) {
    for (Pending* w : batch) {
      if (w->result.ok()) w->result = committed;
    }
  }
}

}  // namespace xdeep::daemon
