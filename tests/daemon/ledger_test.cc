// The budget ledger: reserve, bind, settle, release, expire; atomic budget
// checks across connections; idempotent settlement.
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
  return c;
}

TEST(LedgerTest, LifecycleAndIdempotentSettlement) {
  auto ledger = Ledger::Open(":memory:");
  ASSERT_TRUE(ledger.ok());
  Ledger& l = **ledger;
  ASSERT_TRUE(l.Reserve(ChargeOf("d1", 10), {{"user", "alice", 100}}, 0, 1000, 60).ok());
  EXPECT_EQ(l.Reserve(ChargeOf("d1", 10), {}, 0, 1000, 60).code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(l.Bind("d1", 1000, 7, 1001, 60).ok());
  EXPECT_TRUE(l.Bind("d1", 1000, 7, 1001, 60).ok());
  EXPECT_FALSE(l.Bind("d1", 1000, 8, 1001, 60).ok()) << "bound to another job";
  EXPECT_FALSE(l.Bind("d1", 999, 7, 1001, 60).ok()) << "another user";
  // 4 GPUs x 1.5 h x 2.0 = 12.
  auto cost = l.Settle("d1", 1000, 5400, 2000);
  ASSERT_TRUE(cost.ok());
  EXPECT_DOUBLE_EQ(*cost, 12.0);
  auto again = l.Settle("d1", 1000, 99999, 3000);
  ASSERT_TRUE(again.ok());
  EXPECT_DOUBLE_EQ(*again, 12.0) << "a repeated report must not charge twice";
  EXPECT_TRUE(l.Release("d1", 1000, 3000).ok());
  EXPECT_DOUBLE_EQ(*l.TotalSettled(), 12.0) << "release after settle changes nothing";
  auto use = l.Use({{"user", "alice", 100}}, 0);
  ASSERT_TRUE(use.ok());
  EXPECT_DOUBLE_EQ(use->front().spent, 12.0);
  EXPECT_DOUBLE_EQ(use->front().reserved, 0.0);
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

TEST(LedgerTest, StaleReservationsExpire) {
  auto ledger = Ledger::Open(":memory:");
  Ledger& l = **ledger;
  ASSERT_TRUE(l.Reserve(ChargeOf("unbound", 10), {}, 0, 100, 60).ok());
  ASSERT_TRUE(l.Reserve(ChargeOf("bound", 7), {}, 0, 100, 60).ok());
  ASSERT_TRUE(l.Bind("bound", 1000, 3, 100, 60).ok());
  EXPECT_EQ(*l.ExpireStale(150), 0);
  EXPECT_EQ(*l.ExpireStale(200), 2);
  EXPECT_EQ(l.Get("unbound")->state, "released");
  EXPECT_EQ(l.Get("bound")->state, "settled");
  EXPECT_DOUBLE_EQ(l.Get("bound")->settled_amount, 7.0) << "never reported: charged as reserved";
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
