// WAL checkpoints off the writers' path. SQLite's automatic checkpoint runs
// inside the commit that finds the WAL past 1,000 pages, on the committing
// connection: it syncs the WAL and then the database file (9.5-71 ms on the
// 2-core VM at load ~11, `perf trace -e fdatasync` on xdeepd under
// `decisions_bench` 4 clients advise varied), and every
// other writer of that connection waits meanwhile -- each advise request
// saving its decision record (issue #27: the ~12 ms stall that some windows
// of integration.bounded caught and others did not). WalCheckpointer takes
// over a connection's WAL hook and runs the same PASSIVE checkpoint on a
// thread and a connection of its own, which hold no lock a writer needs.
// Writers that never pause long enough for a pass to finish keep the WAL from
// starting over: past `restart_pages` the committing connection copies the
// few pages a pass left (a catch-up), so the next commit restarts it. Only a
// WAL that neither empties is checkpointed inline whole again, from
// `inline_pages` on: that bounds the file.
// The store and the ledger share one database file and each has its own
// checkpointer (one per connection that writes): two passes at once are
// harmless, the second finds the first under way (SQLITE_BUSY).
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace xdeep::daemon {

class WalCheckpointer {
 public:
  struct Options {
    // A background pass once the WAL holds this many pages that no pass has
    // copied yet (SQLite's own threshold, so the WAL keeps the size it had).
    // Not once it holds them: writers that never pause keep the WAL from
    // starting over, it stays past the threshold, and a pass every `gap`
    // copied the same few hot pages and synced twice each time (~5-10 % of
    // the daemon's decisions/s at saturation, bench/README.md).
    int pages = 1000;
    // The committing connection checkpoints itself from here on (~64 MB).
    int inline_pages = 16000;
    // Writers that never pause keep even a WAL the passes copied from
    // starting over (a restart needs a commit to find every page copied):
    // integration.bounded's 16 s grew it to 40-66 MB, the inline bound. Past
    // `restart_pages`, the first commit after a pass that left at most
    // `caught_up_pages` uncopied copies those itself (its syncs cover only
    // them), and the next commit starts the WAL over. A writer that commits
    // faster than a pass syncs leaves more than that behind every pass (by a
    // share that depends on the disk): the window is then an eighth of the
    // WAL, so the catch-up still comes and copies little next to the WAL.
    int restart_pages = 4000;
    int caught_up_pages = 250;
    // At least this long between two background passes: each syncs twice.
    std::chrono::milliseconds gap{100};
  };

  // Takes over `db`'s WAL hook, and with it its automatic checkpoint; `who`
  // names the database in the log. A database without a file (":memory:")
  // has no WAL, and one the checkpointer cannot open keeps SQLite's own
  // checkpoints: nothing is started then. Destroy it before closing `db`.
  WalCheckpointer(sqlite3* db, std::string who, Options options);
  WalCheckpointer(sqlite3* db, std::string who) : WalCheckpointer(db, std::move(who), Options{}) {}
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;
  ~WalCheckpointer();

  // Background passes done, and checkpoints the writers ran themselves.
  uint64_t passes() const { return passes_.load(); }
  uint64_t inline_checkpoints() const { return inline_.load(); }
  // Of those, the ones that finished a pass's work so that the WAL restarts.
  uint64_t catch_ups() const { return catch_ups_.load(); }
  // Commits that found the WAL started over after a pass or catch-up copied it.
  uint64_t restarts() const { return restarts_.load(); }

 private:
  static int OnCommit(void* self, sqlite3* db, const char* schema, int pages);
  void Loop();
  // One PASSIVE checkpoint on the thread's own connection.
  void Pass();

  sqlite3* db_;
  std::string who_;
  std::string path_;
  Options options_;
  sqlite3* own_ = nullptr;  // the thread's connection
  std::mutex mu_;
  std::condition_variable wake_;
  bool wanted_ = false;
  bool stopping_ = false;
  uint64_t failing_ = 0;  // failed passes in a row (the thread's own)
  // WAL pages the last pass copied to the database (its `done`): the next
  // pass is due `pages` later, or at `pages` once the WAL started over.
  std::atomic<int> copied_{0};
  std::atomic<uint64_t> passes_{0};
  std::atomic<uint64_t> inline_{0};
  std::atomic<uint64_t> catch_ups_{0};
  std::atomic<uint64_t> restarts_{0};
  // Set by each pass, taken by one catch-up: never more catch-ups than passes.
  std::atomic<bool> catch_up_armed_{false};
  std::thread thread_;
};

}  // namespace xdeep::daemon
