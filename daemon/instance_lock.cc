// One xdeepd per spool and database (see instance_lock.h).
#include "daemon/instance_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>

#include "absl/status/status.h"

namespace xdeep::daemon {
namespace {

// What a lock guards, for the messages.
struct Guarded {
  const char* what;
  const char* key;   // the setting that gives a daemon its own
  const char* harm;  // why a second daemon is refused
};
constexpr Guarded kSpool{"jobcomp spool", "[store] jobcomp_spool",
                         "two daemons on one spool take each other's job-completion records, "
                         "and the charges of those jobs are lost"};
constexpr Guarded kLedger{"ledger database", "[store] path",
                          "two daemons on one database release each other's holds unsettled"};

// The whole file, exclusively.
struct flock WholeFile(short type) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;
  fl.l_pid = 0;  // F_OFD_* require it
  return fl;
}

std::optional<pid_t> PidIn(int fd) {
  char text[32] = {};
  const ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
  if (n <= 0) return std::nullopt;
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(text, text + n, pid);
  if (ec != std::errc() || pid <= 0) return std::nullopt;
  // A pid left by a holder that crashed before the current one wrote its own.
  if (kill(pid, 0) != 0 && errno == ESRCH) return std::nullopt;
  return pid;
}

std::string InUseMessage(const Guarded& g, const std::string& path, const std::string& lock_path) {
  auto holder = HolderOf(lock_path);
  const std::optional<pid_t> pid = holder.ok() ? holder->pid : std::nullopt;
  return fmt::format(
      "another xdeepd{} is using the {} {} (it holds {}); {}. Stop that daemon first{}, or give "
      "this one its own {}",
      pid ? fmt::format(" (pid {})", *pid) : "", g.what, path, lock_path, g.harm,
      pid ? fmt::format(" (kill {})", *pid) : "", g.key);
}

std::string CannotLockMessage(const Guarded& g, const std::string& path,
                              const absl::Status& status) {
  return fmt::format(
      "cannot lock the {} {}: {}; check that the directory exists and that "
      "xdeepd's user can create files in it ({})",
      g.what, path, std::string(status.message()), g.key);
}

}  // namespace

absl::StatusOr<std::optional<FileLock>> FileLock::TryTake(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    const int err = errno;
    const std::string reason =
        err == ELOOP ? "it is a symbolic link; remove it" : std::string(strerror(err));
    return err == ENOENT ? absl::NotFoundError(fmt::format("{}: {}", path, reason))
                         : absl::FailedPreconditionError(fmt::format("{}: {}", path, reason));
  }
  struct stat st = {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(fmt::format("{}: not a regular file; remove it", path));
  }
  struct flock fl = WholeFile(F_WRLCK);
  if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    close(fd);
    if (err == EAGAIN || err == EACCES) return std::optional<FileLock>();
    return absl::FailedPreconditionError(fmt::format("{}: {}", path, strerror(err)));
  }
  // The pid only names the holder in another daemon's message: a full disk
  // that keeps it out leaves the lock itself intact.
  const std::string pid = fmt::format("{}\n", getpid());
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, pid.data(), pid.size(), 0);
  return std::optional<FileLock>(FileLock(path, fd));
}

FileLock::FileLock(FileLock&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor drops the lock
}

bool FileLock::StillAt() const {
  struct stat held = {};
  struct stat named = {};
  if (fstat(fd_, &held) != 0 || lstat(path_.c_str(), &named) != 0) return false;
  return held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

absl::StatusOr<LockHolder> HolderOf(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return LockHolder{};
    return absl::FailedPreconditionError(fmt::format("{}: {}", path, strerror(errno)));
  }
  struct flock fl = WholeFile(F_WRLCK);
  LockHolder holder;
  if (fcntl(fd, F_OFD_GETLK, &fl) != 0) {
    const int err = errno;
    close(fd);
    return absl::FailedPreconditionError(fmt::format("{}: {}", path, strerror(err)));
  }
  holder.held = fl.l_type != F_UNLCK;
  if (holder.held) holder.pid = PidIn(fd);
  close(fd);
  return holder;
}

std::string SpoolLockPath(const std::string& spool) {
  return (std::filesystem::path(spool) / ".xdeepd.lock").string();
}

std::string LedgerLockPath(const std::string& database) {
  // One database reached by two names (a symlink) still gets one lock.
  std::error_code ec;
  std::filesystem::path resolved = std::filesystem::weakly_canonical(database, ec);
  return (ec ? database : resolved.string()) + ".xdeepd.lock";
}

absl::StatusOr<std::unique_ptr<LedgerClaim>> LedgerClaim::Take(const StoreConfig& store) {
  // An in-memory ledger is no file two daemons could share: nothing to lock
  // (a lock would leave ':memory:.xdeepd.lock' in the working directory).
  if (store.path == ":memory:") {
    return std::unique_ptr<LedgerClaim>(new LedgerClaim(store.path, std::nullopt));
  }
  const std::string lock_path = LedgerLockPath(store.path);
  auto lock = FileLock::TryTake(lock_path);
  if (!lock.ok()) {
    return absl::FailedPreconditionError(CannotLockMessage(kLedger, store.path, lock.status()));
  }
  if (!lock->has_value()) {
    return absl::FailedPreconditionError(InUseMessage(kLedger, store.path, lock_path));
  }
  return std::unique_ptr<LedgerClaim>(new LedgerClaim(store.path, std::move(**lock)));
}

void LedgerClaim::NoteOpened() {
  std::lock_guard guard(mu_);
  struct stat st = {};
  opened_ = stat(path_.c_str(), &st) == 0;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
}

bool LedgerClaim::StillOpen() {
  std::lock_guard guard(mu_);
  if (!opened_) return true;
  struct stat st = {};
  if (stat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) return true;
  if (!replaced_logged_) {
    spdlog::error(
        "event=ledger.replaced path={} reason=\"the database was removed or replaced "
        "under this daemon; it settles nothing from its spool until it is restarted\"",
        path_);
    replaced_logged_ = true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<SpoolClaim>> SpoolClaim::Take(const std::string& spool) {
  auto claim = std::unique_ptr<SpoolClaim>(new SpoolClaim(spool));
  const std::string lock_path = SpoolLockPath(spool);
  auto lock = FileLock::TryTake(lock_path);
  if (absl::IsNotFound(lock.status())) {
    spdlog::warn(
        "event=jobcomp.spool_missing spool={} reason=\"no such directory; it is claimed "
        "when it appears ([store] jobcomp_spool)\"",
        spool);
    return claim;
  }
  if (!lock.ok()) {
    return absl::FailedPreconditionError(CannotLockMessage(kSpool, spool, lock.status()));
  }
  if (!lock->has_value()) {
    return absl::FailedPreconditionError(InUseMessage(kSpool, spool, lock_path));
  }
  claim->lock_ = std::move(**lock);
  return claim;
}

void SpoolClaim::Release() {
  std::lock_guard guard(mu_);
  lock_.reset();
}

bool SpoolClaim::Renew() {
  std::lock_guard guard(mu_);
  if (lock_.has_value() && lock_->StillAt()) return true;
  if (lock_.has_value()) {
    spdlog::warn(
        "event=jobcomp.spool_replaced spool={} reason=\"its lock file was removed or "
        "replaced; claiming it again\"",
        spool_);
    lock_.reset();
  }
  const std::string lock_path = SpoolLockPath(spool_);
  auto lock = FileLock::TryTake(lock_path);
  if (absl::IsNotFound(lock.status())) return true;  // no spool: nothing to read
  if (lock.ok() && lock->has_value()) {
    lock_ = std::move(**lock);
    refusal_logged_ = false;
    spdlog::info("event=jobcomp.spool_claimed spool={}", spool_);
    return true;
  }
  if (!refusal_logged_) {
    const std::string reason = lock.ok() ? InUseMessage(kSpool, spool_, lock_path)
                                         : CannotLockMessage(kSpool, spool_, lock.status());
    spdlog::error("event=jobcomp.spool_refused spool={} reason=\"{}\"", spool_, reason);
    refusal_logged_ = true;
  }
  return false;
}

std::vector<std::string> InstanceLockNotes(const StoreConfig& store) {
  std::vector<std::string> notes;
  auto note = [&](const Guarded& g, const std::string& path, const std::string& lock_path) {
    auto holder = HolderOf(lock_path);
    if (!holder.ok() || !holder->held) return;
    notes.push_back(fmt::format(
        "note: xdeepd{} is running on this configuration's {} {} ({}); a second daemon on it "
        "would refuse to start",
        holder->pid ? fmt::format(" pid {}", *holder->pid) : "", g.what, path, g.key));
  };
  note(kSpool, store.jobcomp_spool, SpoolLockPath(store.jobcomp_spool));
  note(kLedger, store.path, LedgerLockPath(store.path));
  return notes;
}

}  // namespace xdeep::daemon
