// Group commit on one SQLite connection: writes that arrive while a commit is
// under way wait for the next one, and one writer runs them all in a single
// transaction, each in its own savepoint, with one commit (one fsync where
// the connection syncs) for the batch. Each caller returns only after the
// commit that holds its own write: what a client is told is on disk. A write
// that fails leaves nothing behind (its savepoint is rolled back) while the
// batch's other writes stay; a failed commit fails every write of its batch.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace xdeep::daemon {

class GroupCommit {
 public:
  // `db` is used with `*db_mu` held (the connection's lock, which its owner
  // also takes for its other transactions); `who` names it in errors.
  GroupCommit(sqlite3* db, std::mutex* db_mu, std::string who)
      : db_(db), db_mu_(db_mu), who_(std::move(who)) {}
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Runs `write` (its SQL only, no transaction of its own) in the next group
  // commit and returns its status once that commit is done.
  absl::Status Write(const std::function<absl::Status()>& write);

 private:
  struct Pending;
  void CommitBatch(const std::vector<Pending*>& batch);

  sqlite3* db_;
  std::mutex* db_mu_;
  std::string who_;
  // Writes waiting for the next commit, and whether one is under way.
  std::mutex queue_mu_;
  std::vector<Pending*> queue_;
  bool committing_ = false;
};

}  // namespace xdeep::daemon
