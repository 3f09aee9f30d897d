// An admin who starts a second xdeepd on a spool or database that a running
// daemon uses: the second is refused with the path, the holder's pid and the
// fix; the first keeps its claim; a crashed holder leaves no lock behind.
#include "daemon/instance_lock.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace xdeep::daemon {
namespace {

namespace fs = std::filesystem;

class InstanceLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/xdeepd_lock_test_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/spool");
    store_.path = dir_ + "/ledger.db";
    store_.jobcomp_spool = dir_ + "/spool";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string dir_;
  StoreConfig store_;
};

TEST_F(InstanceLockTest, SecondDaemonOnOneSpoolIsRefusedAndTheFirstKeepsIt) {
  auto first = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_FALSE(second.ok());
  const std::string message(second.status().message());
  EXPECT_NE(message.find("jobcomp spool " + store_.jobcomp_spool), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("pid {}", getpid())), std::string::npos) << message;
  EXPECT_NE(message.find("Stop that daemon"), std::string::npos) << message;
  EXPECT_NE(message.find("[store] jobcomp_spool"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  // The refusal left the first daemon's claim (and its pid in the file) alone.
  EXPECT_TRUE((*first)->Renew());
  EXPECT_EQ(Read(SpoolLockPath(store_.jobcomp_spool)), fmt::format("{}\n", getpid()));
  // Once the first daemon is gone, a new one starts.
  first->reset();
  EXPECT_TRUE(SpoolClaim::Take(store_.jobcomp_spool).ok());
}

TEST_F(InstanceLockTest, SecondDaemonOnOneDatabaseIsRefusedEvenThroughASymlink) {
  auto first = LedgerClaim::Take(store_);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = LedgerClaim::Take(store_);
  ASSERT_FALSE(second.ok());
  const std::string message(second.status().message());
  EXPECT_NE(message.find("ledger database " + store_.path), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("pid {}", getpid())), std::string::npos) << message;
  EXPECT_NE(message.find("[store] path"), std::string::npos) << message;
  // The same database under another name: the same lock.
  std::ofstream(store_.path).put('x');
  fs::create_directories(dir_ + "/elsewhere");
  fs::create_symlink(store_.path, dir_ + "/elsewhere/alias.db");
  StoreConfig alias = store_;
  alias.path = dir_ + "/elsewhere/alias.db";
  EXPECT_FALSE(LedgerClaim::Take(alias).ok());
  // A daemon with its own database starts beside the first.
  alias.path = dir_ + "/elsewhere/own.db";
  EXPECT_TRUE(LedgerClaim::Take(alias).ok());
}

TEST_F(InstanceLockTest, CrashedHolderLeavesNoLock) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    auto claim = SpoolClaim::Take(store_.jobcomp_spool);
    auto ledger = LedgerClaim::Take(store_);
    const char ok = claim.ok() && ledger.ok() ? 'y' : 'n';
    (void)!write(ready[1], &ok, 1);
    pause();  // killed below, holding both
    _exit(0);
  }
  close(ready[1]);
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  close(ready[0]);
  ASSERT_EQ(ok, 'y');
  // Another process holds them: refused, naming that process.
  auto refused = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(fmt::format("pid {}", child)), std::string::npos)
      << refused.status();
  auto holder = HolderOf(LedgerLockPath(store_.path));
  ASSERT_TRUE(holder.ok()) << holder.status();
  EXPECT_TRUE(holder->held);
  EXPECT_EQ(holder->pid, child);
  // The daemon crashes: the kernel drops its locks, nobody cleans up.
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_TRUE(fs::exists(SpoolLockPath(store_.jobcomp_spool)));
  holder = HolderOf(LedgerLockPath(store_.path));
  ASSERT_TRUE(holder.ok()) << holder.status();
  EXPECT_FALSE(holder->held);
  auto claim = SpoolClaim::Take(store_.jobcomp_spool);
  EXPECT_TRUE(claim.ok()) << claim.status();
  EXPECT_TRUE(LedgerClaim::Take(store_).ok());
  EXPECT_EQ(Read(SpoolLockPath(store_.jobcomp_spool)), fmt::format("{}\n", getpid()));
}

// A leftover daemon whose spool was removed and made again (a test stack
// started afresh in the same directory) must not read the new daemon's records.
TEST_F(InstanceLockTest, SpoolMadeAgainBelongsToWhoeverClaimsItFirst) {
  auto old_daemon = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_TRUE(old_daemon.ok()) << old_daemon.status();
  fs::remove_all(store_.jobcomp_spool);
  fs::create_directories(store_.jobcomp_spool);
  auto new_daemon = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_TRUE(new_daemon.ok()) << new_daemon.status();
  EXPECT_FALSE((*old_daemon)->Renew());
  EXPECT_FALSE((*old_daemon)->Renew());
  EXPECT_TRUE((*new_daemon)->Renew());
  // The new daemon stops: the old one may read the spool again.
  new_daemon->reset();
  EXPECT_TRUE((*old_daemon)->Renew());
  EXPECT_FALSE(SpoolClaim::Take(store_.jobcomp_spool).ok());
}

TEST_F(InstanceLockTest, SpoolThatAppearsLaterIsClaimedBeforeItIsRead) {
  fs::remove_all(store_.jobcomp_spool);
  auto first = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE((*first)->Renew());  // no spool: nothing to read, nothing held
  EXPECT_FALSE(fs::exists(store_.jobcomp_spool));
  fs::create_directories(store_.jobcomp_spool);
  EXPECT_TRUE((*first)->Renew());
  EXPECT_FALSE(SpoolClaim::Take(store_.jobcomp_spool).ok());
}

// The leftover daemon's database was removed with its spool and made again:
// it must not claim the new spool (its charges would go to a file nobody reads).
TEST_F(InstanceLockTest, DatabaseReplacedUnderTheDaemonIsNoticed) {
  auto ledger = LedgerClaim::Take(store_);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  std::ofstream(store_.path) << "opened";
  std::ifstream held(store_.path);  // open as SQLite keeps it: its inode is not reused
  (*ledger)->NoteOpened();
  EXPECT_TRUE((*ledger)->StillOpen());
  fs::remove(store_.path);
  EXPECT_FALSE((*ledger)->StillOpen());
  std::ofstream(store_.path) << "a new stack's database";
  EXPECT_FALSE((*ledger)->StillOpen());
}

// A daemon whose database was replaced gives its spool up (the spool itself
// kept): the daemon started on the new database may take it.
TEST_F(InstanceLockTest, ReleasedSpoolCanBeTakenByTheNextDaemon) {
  fs::create_directories(store_.jobcomp_spool);
  auto first = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(SpoolClaim::Take(store_.jobcomp_spool).ok());
  (*first)->Release();
  EXPECT_TRUE(SpoolClaim::Take(store_.jobcomp_spool).ok());
}

// The spool is writable by SlurmUser's group: a lock file planted as a link to
// the daemon's own database must not make the daemon truncate it.
TEST_F(InstanceLockTest, PlantedSymlinkIsRefusedAndItsTargetUntouched) {
  { std::ofstream(store_.path) << "ledger contents"; }
  fs::create_symlink(store_.path, SpoolLockPath(store_.jobcomp_spool));
  auto claim = SpoolClaim::Take(store_.jobcomp_spool);
  ASSERT_FALSE(claim.ok());
  EXPECT_NE(claim.status().message().find("symbolic link"), std::string::npos) << claim.status();
  EXPECT_EQ(Read(store_.path), "ledger contents");
}

TEST_F(InstanceLockTest, CheckConfigNotesTheRunningDaemonWithoutTakingAnything) {
  EXPECT_TRUE(InstanceLockNotes(store_).empty());
  EXPECT_FALSE(fs::exists(SpoolLockPath(store_.jobcomp_spool)));  // looking made nothing
  auto spool = SpoolClaim::Take(store_.jobcomp_spool);
  auto ledger = LedgerClaim::Take(store_);
  ASSERT_TRUE(spool.ok() && ledger.ok());
  auto notes = InstanceLockNotes(store_);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find(fmt::format("xdeepd pid {}", getpid())), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find(store_.jobcomp_spool), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find(store_.path), std::string::npos) << notes[1];
  // Still held by the daemon after the check.
  EXPECT_TRUE((*spool)->Renew());
  EXPECT_FALSE(LedgerClaim::Take(store_).ok());
}

TEST_F(InstanceLockTest, InMemoryLedgersShareNoFileAndLeaveNoLockBehind) {
  // Each in-memory ledger is its own: two daemons on one are not refused, and
  // the working directory gets no ':memory:.xdeepd.lock'.
  const fs::path before = fs::current_path();
  fs::current_path(dir_);
  StoreConfig memory = store_;
  memory.path = ":memory:";
  auto first = LedgerClaim::Take(memory);
  auto second = LedgerClaim::Take(memory);
  EXPECT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(fs::exists(fs::path(dir_) / ":memory:.xdeepd.lock"));
  fs::current_path(before);
}

}  // namespace
}  // namespace xdeep::daemon
