// The budget ledger: reserve, admit (single-use token), charge from Slurm's
// record, release, expire; atomic budget checks across connections;
// idempotent charges.
#include "daemon/ledger.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <vector>

namespace xdeep::daemon {
namespace {

Charge ChargeOf(const std::string& id, double amount, const std::string& user = "alice") {
  Charge c;
  c.decision_id = id;
  c.uid = 1000;
  c.user = user;
  c.partition = "gpu";
  c.amount = amount;
  c.nodes = 1;
  c.gpus = 4;
  c.price_per_gpu_hour = 2.0;
  c.admission_token = "tok-" + id;
  return c;
}

JobUsage RunOf(uint32_t job, int64_t start, int64_t end, const std::string& decision,
               uint32_t uid = 1000, int gpus = 4) {
  JobUsage u;
  u.job_id = job;
  u.start_unix = start;
  u.end_unix = end;
  u.uid = uid;
  u.user = uid == 1000 ? "alice" : "mallory";
  u.partition = "gpu";
  u.nodes = 1;
  u.gpus = gpus;
  u.decision_id = decision;
  u.price_per_gpu_hour = 3.0;
  return u;
}

absl::StatusOr<Admission> AdmitOf(Ledger& l, const std::string& token, uint32_t uid = 1000,
                                  int nodes = 1, int tasks = 1, double limit = 0) {
  AdmitAsk ask;
  ask.partition = "gpu";
  ask.nodes = nodes;
  ask.array_tasks = tasks;
  return l.Admit(
      token, uid, ask,
      [limit](const std::string& user, const std::string&) {
        return std::vector<BudgetScope>{{"user", user, limit}};
      },
      0, 1001, 60);
}

TEST(LedgerTest, LifecycleAndIdempotentCharges) {
  auto ledger = Ledger::Open(":memory:");
  ASSERT_TRUE(ledger.ok());
  Ledger& l = **ledger;
  ASSERT_TRUE(l.Reserve(ChargeOf("d1", 10), {{"user", "alice", 100}}, 0, 1000, 60).ok());
  EXPECT_EQ(l.Reserve(ChargeOf("d1", 10), {}, 0, 1000, 60).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(AdmitOf(l, "tok-d1", 999).status().code(), absl::StatusCode::kPermissionDenied)
      << "another user's token";
  EXPECT_EQ(AdmitOf(l, "tok-d1", 1000, 2).status().code(), absl::StatusCode::kPermissionDenied)
      << "more nodes than reserved";
  AdmitAsk greedy;
  greedy.partition = "gpu";
  greedy.gpus_per_node = 8;
  EXPECT_EQ(l.Admit("tok-d1", 1000, greedy, nullptr, 0, 1001, 60).status().code(),
            absl::StatusCode::kPermissionDenied)
      << "more GPUs per node than reserved";
  greedy.gpus_per_node = 0;
  greedy.partition = "debug";
  EXPECT_EQ(l.Admit("tok-d1", 1000, greedy, nullptr, 0, 1001, 60).status().code(),
            absl::StatusCode::kPermissionDenied)
      << "another partition";
  auto admitted = AdmitOf(l, "tok-d1");
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_EQ(admitted->decision_id, "d1");
  EXPECT_EQ(l.Get("d1")->state, "bound");
  auto replay = AdmitOf(l, "tok-d1");
  EXPECT_EQ(replay.status().code(), absl::StatusCode::kPermissionDenied) << "single use";
  EXPECT_NE(std::string(replay.status().message()).find("already used"), std::string::npos);
  // A client's failed-launch report cannot free a hold the controller bound.
  ASSERT_TRUE(l.Release("d1", 1000, 1002).ok());
  EXPECT_EQ(l.Get("d1")->state, "bound");
  // Slurm's record: 4 GPUs x 1.5 h at the reservation's 2.0 = 12.
  auto cost = l.ChargeJob(RunOf(7, 2000, 2000 + 5400, "d1"), 9000);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_DOUBLE_EQ(*cost, 12.0);
  auto again = l.ChargeJob(RunOf(7, 2000, 2000 + 99999, "d1"), 9100);
  ASSERT_TRUE(again.ok());
  EXPECT_DOUBLE_EQ(*again, 12.0) << "a record delivered twice is charged once";
  EXPECT_EQ(l.Get("d1")->state, "settled");
  EXPECT_EQ(*l.Get("d1")->job_id, 7u);
  EXPECT_DOUBLE_EQ(*l.TotalSettled(), 12.0);
  auto use = l.Use({{"user", "alice", 100}}, 0);
  ASSERT_TRUE(use.ok());
  EXPECT_DOUBLE_EQ(use->front().spent, 12.0);
  EXPECT_DOUBLE_EQ(use->front().reserved, 0.0);
}

TEST(LedgerTest, EveryArrayTaskAndRequeuedRunIsCharged) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  ASSERT_TRUE(l.Reserve(ChargeOf("arr", 10), {{"user", "alice", 35}}, 0, 1000, 60).ok());
  EXPECT_EQ(AdmitOf(l, "tok-arr", 1000, 1, 4, 35).status().code(),
            absl::StatusCode::kPermissionDenied)
      << "4 tasks x 10 exceed 35";
  auto admitted = AdmitOf(l, "tok-arr", 1000, 1, 3, 35);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_DOUBLE_EQ(admitted->amount, 30.0);
  // Three tasks of 1 h each on 4 GPUs at 2.0, and task 1 requeued once.
  for (uint32_t job : {11u, 12u, 13u}) ASSERT_TRUE(l.ChargeJob(RunOf(job, 0, 3600, "arr"), 5).ok());
  ASSERT_TRUE(l.ChargeJob(RunOf(11, 4000, 7600, "arr"), 6).ok());
  EXPECT_DOUBLE_EQ(l.Get("arr")->settled_amount, 4 * 8.0);
  EXPECT_DOUBLE_EQ(*l.TotalSettled(), 32.0);
}

TEST(LedgerTest, RequeuedRunsKeepTheHoldAndNodeFailuresAreNotBilled) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  std::vector<BudgetScope> scopes = {{"user", "alice", 100}};
  ASSERT_TRUE(l.Reserve(ChargeOf("rq", 10), scopes, 0, 1000, 60).ok());
  ASSERT_TRUE(AdmitOf(l, "tok-rq").ok());
  auto period = [](uint32_t job, int64_t start, int64_t end, const std::string& state,
                   const std::string& decision = "rq") {
    JobUsage u = RunOf(job, start, end, decision);
    u.state = state;
    u.run_again = state != "COMPLETED";
    return u;
  };
  // A node failed under the first run: the site's failure, charged 0.
  EXPECT_DOUBLE_EQ(*l.ChargeJob(period(31, 0, 3600, "NODE_FAIL"), 4000), 0.0);
  EXPECT_EQ(l.Get("rq")->state, "bound") << "the job runs again: its hold stays";
  // Requeued by hand after half an hour: billed, and the hold still stays.
  EXPECT_DOUBLE_EQ(*l.ChargeJob(period(31, 4000, 5800, "PENDING"), 5900), 4 * 0.5 * 2.0);
  EXPECT_EQ(l.Get("rq")->state, "bound");
  EXPECT_DOUBLE_EQ(l.Use(scopes, 0)->front().reserved, 10.0);
  EXPECT_DOUBLE_EQ(*l.ChargeJob(period(31, 6000, 9600, "COMPLETED"), 9700), 4 * 1.0 * 2.0);
  auto done = l.Get("rq");
  EXPECT_EQ(done->state, "settled");
  EXPECT_DOUBLE_EQ(done->settled_amount, 12.0);
  auto use = l.Use(scopes, 0);
  EXPECT_DOUBLE_EQ(use->front().spent, 12.0);
  EXPECT_DOUBLE_EQ(use->front().reserved, 0.0);
  // A requeued job that never runs again: what its runs cost stays spent
  // when the hold goes; a hold with no charge is released.
  ASSERT_TRUE(l.Reserve(ChargeOf("gone", 10), scopes, 0, 1000, 60).ok());
  ASSERT_TRUE(AdmitOf(l, "tok-gone").ok());
  ASSERT_TRUE(l.ChargeJob(period(32, 0, 1800, "PENDING", "gone"), 1900).ok());
  ASSERT_TRUE(l.Release("gone", 1000, 2000, true).ok());
  EXPECT_EQ(l.Get("gone")->state, "settled");
  ASSERT_TRUE(l.Reserve(ChargeOf("failed", 10), scopes, 0, 1000, 60).ok());
  ASSERT_TRUE(AdmitOf(l, "tok-failed").ok());
  ASSERT_TRUE(l.ChargeJob(period(33, 0, 1800, "NODE_FAIL", "failed"), 1900).ok());
  EXPECT_EQ(*l.ExpireStale(99999), 1);
  EXPECT_EQ(l.Get("failed")->state, "released");
  EXPECT_DOUBLE_EQ(l.Use(scopes, 0)->front().spent, 12.0 + 4.0);
}

TEST(LedgerTest, AHeterogeneousComponentsHoldIsBoundAtOnce) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  std::vector<BudgetScope> scopes = {{"user", "alice", 25}};
  Charge component = ChargeOf("het0", 20);
  component.admission_token.clear();
  ASSERT_TRUE(l.ReserveForJob(component, scopes, 0, 100, 60).ok());
  EXPECT_EQ(l.Get("het0")->state, "bound");
  component.decision_id = "het1";
  EXPECT_EQ(l.ReserveForJob(component, scopes, 0, 100, 60).code(),
            absl::StatusCode::kResourceExhausted);
  // Admitted at once: a submission that failed releases it after the grace.
  EXPECT_EQ(l.BoundBefore(101)->size(), 1u);
  ASSERT_TRUE(l.ChargeJob(RunOf(41, 0, 900, "het0"), 1000).ok());
  EXPECT_EQ(l.Get("het0")->state, "settled");
}

TEST(LedgerTest, SegmentedRunHoldsOneSegmentAtATime) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  std::vector<BudgetScope> scopes = {{"user", "alice", 100}};
  Charge c = ChargeOf("seg", 8);  // one segment: 4 GPUs x 1 h at 2.0
  c.segments = 3;
  ASSERT_TRUE(l.Reserve(c, scopes, 0, 1000, 60).ok());
  ASSERT_TRUE(AdmitOf(l, "tok-seg").ok());
  // Slurm requeued the job after segment 1 (its record says PENDING): the
  // run is spent and the next segment is held again.
  JobUsage first = RunOf(30, 2000, 5600, "seg");
  first.state = "PENDING";
  ASSERT_TRUE(l.ChargeJob(first, 6000).ok());
  EXPECT_EQ(l.Get("seg")->state, "bound");
  EXPECT_DOUBLE_EQ(l.Get("seg")->settled_amount, 8.0);
  auto use = l.Use(scopes, 0);
  EXPECT_DOUBLE_EQ(use->front().spent, 8.0);
  EXPECT_DOUBLE_EQ(use->front().reserved, 8.0) << "the next segment's hold";
  JobUsage second = RunOf(30, 6100, 9700, "seg");
  second.state = "PENDING";
  ASSERT_TRUE(l.ChargeJob(second, 9800).ok());
  EXPECT_EQ(l.Get("seg")->state, "bound");
  // The last planned segment ends the hold whatever its state says.
  JobUsage last = RunOf(30, 9800, 11600, "seg");
  last.state = "PENDING";
  ASSERT_TRUE(l.ChargeJob(last, 11700).ok());
  EXPECT_EQ(l.Get("seg")->state, "settled");
  EXPECT_DOUBLE_EQ(l.Get("seg")->settled_amount, 8.0 + 8.0 + 4.0);
  use = l.Use(scopes, 0);
  EXPECT_DOUBLE_EQ(use->front().spent, 20.0);
  EXPECT_DOUBLE_EQ(use->front().reserved, 0.0);
  EXPECT_DOUBLE_EQ(*l.TotalSettled(), 20.0);
}

TEST(LedgerTest, SegmentedRunThatEndsEarlyAndExpiredPartialHoldsKeepTheirCharges) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  Charge c = ChargeOf("early", 8);
  c.segments = 5;
  ASSERT_TRUE(l.Reserve(c, {}, 0, 1000, 60).ok());
  ASSERT_TRUE(AdmitOf(l, "tok-early").ok());
  JobUsage run = RunOf(31, 2000, 5600, "early");
  run.state = "COMPLETED";  // finished before its planned segments: final
  ASSERT_TRUE(l.ChargeJob(run, 6000).ok());
  EXPECT_EQ(l.Get("early")->state, "settled");

  c = ChargeOf("stale", 8);
  c.segments = 5;
  ASSERT_TRUE(l.Reserve(c, {}, 0, 1000, 60).ok());
  ASSERT_TRUE(AdmitOf(l, "tok-stale").ok());
  run = RunOf(32, 2000, 5600, "stale");
  run.state = "PENDING";
  ASSERT_TRUE(l.ChargeJob(run, 6000).ok());
  ASSERT_TRUE(l.ExpireStale(6000 + 1000000).ok());
  EXPECT_EQ(l.Get("stale")->state, "settled") << "what ran stays spent";
  EXPECT_DOUBLE_EQ(l.Get("stale")->settled_amount, 8.0);
  EXPECT_DOUBLE_EQ(*l.TotalSettled(), 16.0);
}

TEST(LedgerTest, JobsWithoutAReservationAreChargedToTheirUser) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  ASSERT_TRUE(l.Reserve(ChargeOf("alices", 10), {}, 0, 1000, 60).ok());
  // Mallory's job names Alice's decision: it is charged to Mallory, at the
  // partition's price, and Alice's hold stays open.
  auto cost = l.ChargeJob(RunOf(21, 0, 1800, "alices", 2000, 2), 10);
  ASSERT_TRUE(cost.ok());
  EXPECT_DOUBLE_EQ(*cost, 2 * 0.5 * 3.0);
  EXPECT_EQ(l.Get("alices")->state, "reserved");
  EXPECT_DOUBLE_EQ(l.Use({{"user", "mallory", 0}}, 0)->front().spent, 3.0);
  EXPECT_DOUBLE_EQ(l.Use({{"user", "alice", 0}}, 0)->front().spent, 0.0);
  EXPECT_DOUBLE_EQ(*l.TotalSettled(), 3.0);
}

TEST(LedgerTest, BudgetCountsSpentAndReserved) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  std::vector<BudgetScope> scopes = {{"user", "alice", 25}};
  ASSERT_TRUE(l.Reserve(ChargeOf("a", 10), scopes, 0, 100, 60).ok());
  ASSERT_TRUE(l.Reserve(ChargeOf("b", 10), scopes, 0, 100, 60).ok());
  absl::Status over = l.Reserve(ChargeOf("c", 10), scopes, 0, 100, 60);
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(over.message()).find("remaining 5.00 of 25.00"), std::string::npos)
      << over.message();
  // Others are not affected; releasing frees the money.
  EXPECT_TRUE(l.Reserve(ChargeOf("d", 10, "bob"), {{"user", "bob", 25}}, 0, 100, 60).ok());
  ASSERT_TRUE(l.Release("a", 1000, 101).ok());
  EXPECT_TRUE(l.Reserve(ChargeOf("c", 10), scopes, 0, 102, 60).ok());
}

TEST(LedgerTest, StaleReservationsExpireAndJobsStillCharge) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  ASSERT_TRUE(l.Reserve(ChargeOf("unbound", 10), {}, 0, 100, 60).ok());
  ASSERT_TRUE(l.Reserve(ChargeOf("bound", 7), {}, 0, 100, 60).ok());
  ASSERT_TRUE(AdmitOf(l, "tok-bound").ok());  // bound until 1001 + 60
  EXPECT_EQ(*l.ExpireStale(150), 0);
  EXPECT_EQ(*l.ExpireStale(200), 1);
  EXPECT_EQ(*l.ExpireStale(1100), 1);
  EXPECT_EQ(l.Get("unbound")->state, "released");
  EXPECT_EQ(l.Get("bound")->state, "released");
  EXPECT_EQ(AdmitOf(l, "tok-unbound").status().code(), absl::StatusCode::kPermissionDenied);
  // A job that outlived its hold is charged when its record arrives.
  ASSERT_TRUE(l.ChargeJob(RunOf(5, 0, 3600, "bound"), 1200).ok());
  EXPECT_EQ(l.Get("bound")->state, "settled");
  EXPECT_DOUBLE_EQ(l.Get("bound")->settled_amount, 8.0);
}

TEST(LedgerTest, PeriodStarts) {
  const int64_t t = 1764125425;  // 2025-11-26T02:50:25Z, a Wednesday
  EXPECT_EQ(PeriodStart("total", t), 0);
  EXPECT_EQ(PeriodStart("daily", t), 1764115200);    // 2025-11-26T00:00Z
  EXPECT_EQ(PeriodStart("weekly", t), 1763942400);   // Monday 2025-11-24
  EXPECT_EQ(PeriodStart("monthly", t), 1761955200);  // 2025-11-01
}

// Two connections (as two daemon threads or a restarted daemon would have)
// race to reserve against one budget: never more than the limit is held.
TEST(LedgerTest, ConcurrentReservationsNeverOverspend) {
  const std::string path =
      ::testing::TempDir() + "/ledger_race_" + std::to_string(getpid()) + ".db";
  auto a = Ledger::Open(path);
  auto b = Ledger::Open(path);
  ASSERT_TRUE(a.ok() && b.ok());
  std::atomic<int> admitted{0};
  auto worker = [&](Ledger* l, int offset) {
    for (int i = 0; i < 100; ++i) {
      auto s = l->Reserve(ChargeOf("r" + std::to_string(offset + i), 1.0), {{"user", "alice", 37}},
                          0, 100, 60);
      if (s.ok()) ++admitted;
    }
  };
  std::thread t1(worker, a->get(), 0), t2(worker, b->get(), 1000);
  t1.join();
  t2.join();
  EXPECT_EQ(admitted.load(), 37);
  EXPECT_DOUBLE_EQ((*a)->Use({{"user", "alice", 37}}, 0)->front().reserved, 37.0);
  std::filesystem::remove(path);
}


// Many threads on one connection: their holds go through group commits
// (several per transaction). Each caller is told the fate of its own hold;
// a duplicate id fails alone without taking its batch with it; the budget
// holds across the batch; what callers were told is what a fresh connection
// reads back.
TEST(LedgerTest, GroupCommitTellsEachCallerItsOwnOutcome) {
  const std::string path =
      ::testing::TempDir() + "/ledger_group_" + std::to_string(getpid()) + ".db";
  std::set<std::string> told_ok, told_failed;
  {
    auto ledger = Ledger::Open(path);
    ASSERT_TRUE(ledger.ok());
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 40; ++i) {
          // Every fifth id is also tried by the next thread: one of the two fails.
          const int n = i % 5 == 0 ? ((t / 2) * 1000 + i) : (t * 1000 + i + 100000);
          const std::string id = "g" + std::to_string(n);
          const absl::Status s = (*ledger)->Reserve(ChargeOf(id, 1.0), {{"user", "alice", 500}},
                                                    0, 100, 60);
          std::lock_guard lock(mu);
          if (s.ok()) {
            EXPECT_TRUE(told_ok.insert(id).second) << id << " reserved twice";
          } else {
            EXPECT_TRUE(s.code() == absl::StatusCode::kAlreadyExists ||
                        s.code() == absl::StatusCode::kResourceExhausted)
                << s;
            told_failed.insert(id);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  EXPECT_EQ(told_ok.size(), 500u) << "the budget of 500 is used up exactly";
  auto again = Ledger::Open(path);
  ASSERT_TRUE(again.ok());
  for (const std::string& id : told_ok) EXPECT_TRUE((*again)->Get(id).ok()) << id;
  for (const std::string& id : told_failed) {
    if (told_ok.count(id) == 0) {
      EXPECT_FALSE((*again)->Get(id).ok()) << id;
    }
  }
  EXPECT_DOUBLE_EQ((*again)->Use({{"user", "alice", 500}}, 0)->front().reserved, 500.0);
  again->reset();
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
}

// kill -9 in the middle of group commits: a child process reserves from 16
// threads and reports each hold it was told is reserved; the parent kills it
// mid-load. Every reported hold is on disk, whole, once; the open-hold totals
// the triggers keep match the rows (nothing half-written); the file is sound.
TEST(LedgerTest, KilledMidGroupCommitKeepsEveryHoldItAcknowledged) {
  const std::string path =
      ::testing::TempDir() + "/ledger_kill_" + std::to_string(getpid()) + ".db";
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    auto ledger = Ledger::Open(path);
    if (!ledger.ok()) _exit(3);
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0;; ++i) {
          const std::string id = "k" + std::to_string(t) + "-" + std::to_string(i);
          const double amount = 1 + (i % 7) * 0.25;
          if ((*ledger)->Reserve(ChargeOf(id, amount, i % 2 ? "alice" : "bob"), {}, 0, 100, 60)
                  .ok()) {
            const std::string line = id + " " + std::to_string(amount) + "\n";
            std::lock_guard lock(mu);
            if (write(pipe_fds[1], line.data(), line.size()) < 0) _exit(4);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    _exit(0);
  }
  close(pipe_fds[1]);
  FILE* in = fdopen(pipe_fds[0], "r");
  std::map<std::string, double> told;
  char id[64];
  double amount = 0;
  while (told.size() < 1500 && fscanf(in, "%63s %lf", id, &amount) == 2) told[id] = amount;
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  while (fscanf(in, "%63s %lf", id, &amount) == 2) told[id] = amount;  // written before the kill
  fclose(in);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child ended before it was killed: " << status;
  ASSERT_GE(told.size(), 1500u);

  auto ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  for (const auto& [decision, held] : told) {
    auto r = (*ledger)->Get(decision);
    ASSERT_TRUE(r.ok()) << decision << " was acknowledged but is not in the ledger";
    EXPECT_EQ(r->state, "reserved");
    EXPECT_NEAR(r->amount, held, 1e-9);
  }
  ledger->reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sql;
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW) << sql;
    const std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
  };
  EXPECT_EQ(scalar("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM reservations WHERE amount IS NULL OR user IS NULL "
                   "OR admission_token IS NULL"),
            "0");
  // The totals kept by triggers in each hold's own transaction match the rows.
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM (SELECT user, COUNT(*) AS n, SUM(amount) AS a FROM "
                   "reservations WHERE state = 'reserved' GROUP BY user) r JOIN held_by_scope h "
                   "ON h.kind = 'user' AND h.name = r.user WHERE h.holds != r.n OR "
                   "abs(h.amount - r.a) > 1e-6"),
            "0");
  EXPECT_GE(std::stoul(scalar("SELECT COUNT(*) FROM reservations")), told.size());
  sqlite3_close(db);
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
}

}  // namespace
}  // namespace xdeep::daemon
