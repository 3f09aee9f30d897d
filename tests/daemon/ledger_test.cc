// The budget ledger: reserve, admit (single-use token), charge from Slurm's
// record, release, expire; atomic budget checks across connections;
// idempotent charges.
#include "daemon/ledger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

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

}  // namespace
}  // namespace xdeep::daemon
