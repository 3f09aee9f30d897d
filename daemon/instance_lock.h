// One xdeepd per jobcomp spool and per ledger database. Two daemons on one
// spool take each other's job-completion records: the daemon that reads a
// record finds no reservation for it, the other one releases its hold instead
// of settling it, and the charge is lost. Two on one database release each
// other's holds unsettled. So a daemon holds an exclusive lock on a file inside its spool
// (<spool>/.xdeepd.lock) and on one beside its database (<path>.xdeepd.lock)
// for its whole life, and refuses to start where another daemon holds either.
//
// The locks are open-file-description locks (fcntl F_OFD_SETLK): the kernel
// drops them when the daemon exits or crashes, so no stale lock needs cleaning
// up; two daemons in one process exclude each other too (POSIX record locks
// would not); and F_OFD_GETLK tells who holds one without taking it
// (--check-config). The holder writes its pid into the file for the message.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/config.h"

namespace xdeep::daemon {

// An exclusive lock on one file, held until destroyed.
class FileLock {
 public:
  // Takes the lock on `path` (created 0600 if missing; a symlink is refused, since
  // the spool is writable by SlurmUser) and writes this process's pid into it.
  // nullopt: another open file description holds it.
  static absl::StatusOr<std::optional<FileLock>> TryTake(const std::string& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  // False once `path` names another file than the one locked (deleted, or
  // its directory removed and made again while the daemon ran).
  bool StillAt() const;
  const std::string& path() const { return path_; }

 private:
  FileLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

// Who holds the lock on `path`, found without taking it. A missing file is
// held by nobody. `pid` is nullopt when the holder wrote none or is gone.
struct LockHolder {
  bool held = false;
  std::optional<pid_t> pid;
};
absl::StatusOr<LockHolder> HolderOf(const std::string& path);

std::string SpoolLockPath(const std::string& spool);  // <spool>/.xdeepd.lock
std::string LedgerLockPath(
    const std::string& database);  // <database, symlinks resolved>.xdeepd.lock

// The ledger database's lock, and which file the daemon opened.
class LedgerClaim {
 public:
  // Before the database is opened. Another daemon on it: the message names
  // the database, the holder's pid and the fix.
  static absl::StatusOr<std::unique_ptr<LedgerClaim>> Take(const StoreConfig& store);

  // After the database is opened: remembers which file it is.
  void NoteOpened();
  // False, logged once, when [store] path no longer names the file opened (it
  // was removed or replaced under the daemon: a test stack started afresh in
  // its directory). Such a daemon settles into a file nobody reads, so it
  // leaves the spool to the daemon on the new database.
  bool StillOpen();

 private:
  LedgerClaim(std::string path, std::optional<FileLock> lock)
      : path_(std::move(path)), lock_(std::move(lock)) {}
  std::mutex mu_;
  std::string path_;
  std::optional<FileLock> lock_;  // none for an in-memory ledger
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool opened_ = false;
  bool replaced_logged_ = false;
};

// The jobcomp spool's lock. The spool may not exist yet when the daemon
// starts (it is made by the package, not the daemon): then it is claimed when
// it appears, before its first record is read.
class SpoolClaim {
 public:
  // At start. Another daemon on the spool, or a lock file that cannot be made:
  // the error to refuse to start with.
  static absl::StatusOr<std::unique_ptr<SpoolClaim>> Take(const std::string& spool);

  // Before each drain: true when this daemon may read the spool (it holds the
  // lock, or there is no spool and so nothing to read). Claims a spool that
  // appeared or was replaced since; false, logged once, while another daemon holds it.
  bool Renew();
  // Gives the spool up for good (this daemon's database was replaced).
  void Release();

 private:
  explicit SpoolClaim(std::string spool) : spool_(std::move(spool)) {}
  std::mutex mu_;
  std::string spool_;
  std::optional<FileLock> lock_;
  bool refusal_logged_ = false;
};

// For --check-config: one line for each of the configuration's spool and
// database that a running daemon holds (empty when none does). Takes no lock.
std::vector<std::string> InstanceLockNotes(const StoreConfig& store);

}  // namespace xdeep::daemon
