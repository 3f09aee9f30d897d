// Group commit on one SQLite connection: writes that arrive while a commit is
// under way wait for the next one, and one writer runs them all in a single
// transaction, each in its own savepoint, with one commit (one fsync where
// the connection syncs) for the batch. Each caller returns only after the
// commit that holds its own write: what a client is told is on disk. A write
// that fails leaves nothing behind (its savepoint is rolled back) while the
// batch's other writes stay; a failed commit fails every write of its batch.
// With a spacing, commits start at most once per spacing: a write that comes
// within it of the last commit's start waits for the rest of it, and the
// writes arriving meanwhile share its commit (under load, one commit's fixed
// cost -- locks, WAL frames, a sync -- is shared by several writes; a lone
// write, long after the last commit, goes at once).
// WriteThen queues a write without waiting for it: a thread of the group
// commit's own runs the commit and then tells each such writer its outcome.
// A decision's worker thus never sleeps on its record's commit (it goes on to
// the next request), and the answer still leaves only once the record is on
// disk.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace xdeep::daemon {

class GroupCommit {
 public:
  // `db` is used with `*db_mu` held (the connection's lock, which its owner
  // also takes for its other transactions); `who` names it in errors.
  GroupCommit(sqlite3* db, std::mutex* db_mu, std::string who,
              std::chrono::microseconds spacing = std::chrono::microseconds(0))
      : db_(db), db_mu_(db_mu), who_(std::move(who)), spacing_(spacing) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;
  ~GroupCommit() { Stop(); }

  // Runs `write` (its SQL only, no transaction of its own) in the next group
  // commit and returns its status once that commit is done.
  absl::Status Write(const std::function<absl::Status()>& write);
  // Runs `write` in the next group commit and returns at once; once that
  // commit is done, `done` gets the write's status, on the thread that ran
  // the commit (the group commit's own, or a Write caller's that led it).
  // `done` is called exactly once, before Stop returns at the latest.
  void WriteThen(std::function<absl::Status()> write, std::function<void(absl::Status)> done);
  // Commits what is queued, calls its `done`s and ends the group commit's
  // thread (the owner calls it before it closes the connection).
  void Stop();

 private:
  struct Pending;
  void CommitBatch(const std::vector<Pending*>& batch);
  // Leads one commit of everything queued; called and returns with `lock`
  // (queue_mu_) held and committing_ false.
  void LeadCommit(std::unique_lock<std::mutex>& lock);
  // Wakes whoever leads the next commit of what is queued.
  void WakeNextLeaderLocked();
  void CommitLoop();  // the thread of WriteThen's commits

  sqlite3* db_;
  std::mutex* db_mu_;
  std::string who_;
  std::chrono::microseconds spacing_;
  // Writes waiting for the next commit, and whether one is under way (or
  // its leader is waiting out the spacing).
  std::mutex queue_mu_;
  std::vector<Pending*> queue_;
  bool committing_ = false;
  std::chrono::steady_clock::time_point last_start_;
  // WriteThen's thread, started by its first call.
  std::condition_variable committer_wake_;
  bool stopping_ = false;
  std::thread committer_;
};

}  // namespace xdeep::daemon
