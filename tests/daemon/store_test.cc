// The SQLite store: decisions survive reopening; binds and outcomes are idempotent.
#include "daemon/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace xdeep::daemon {
namespace {

DecisionRecord Record(const std::string& id) {
  DecisionRecord r;
  r.id = id;
  r.uid = 1000;
  r.workload = "gpt";
  r.strategy = "dp4";
  r.nodes = 1;
  r.gpus_per_node = 4;
  r.predicted_step_time_s = 0.5;
  r.predicted_cost = 12.5;
  r.decision_blob = std::string("\0\1binary", 8);
  return r;
}

TEST(StoreTest, DecisionsPersistAcrossReopen) {
  const std::string path = ::testing::TempDir() + "/store_test_" + std::to_string(getpid()) + ".db";
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->SaveDecision(Record("d1")).ok());
    ASSERT_TRUE((*store)->BindJob("d1", 42).ok());
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok());
  auto r = (*store)->GetDecision("d1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->uid, 1000u);
  EXPECT_EQ(r->decision_blob, std::string("\0\1binary", 8));
  EXPECT_EQ(r->job_id, 42u);
  std::filesystem::remove(path);
}

TEST(StoreTest, BindIsIdempotentButNotTransferable) {
  auto store = Store::Open(":memory:");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->SaveDecision(Record("d1")).ok());
  EXPECT_TRUE((*store)->BindJob("d1", 7).ok());
  EXPECT_TRUE((*store)->BindJob("d1", 7).ok());
  EXPECT_FALSE((*store)->BindJob("d1", 8).ok());
  EXPECT_FALSE((*store)->BindJob("unknown", 7).ok());
}

TEST(StoreTest, OneOutcomePerJob) {
  auto store = Store::Open(":memory:");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->SaveDecision(Record("d1")).ok());
  OutcomeRecord o{"d1", 7, 0, 12.5, {0.5, 0.25}};
  ASSERT_TRUE((*store)->RecordOutcome(o).ok());
  o.elapsed_s = 99;
  ASSERT_TRUE((*store)->RecordOutcome(o).ok());
  auto outcomes = (*store)->Outcomes("d1");
  ASSERT_TRUE(outcomes.ok());
  ASSERT_EQ(outcomes->size(), 1u);
  EXPECT_DOUBLE_EQ((*outcomes)[0].elapsed_s, 12.5);
  EXPECT_EQ((*outcomes)[0].step_times_s, (std::vector<double>{0.5, 0.25}));
  EXPECT_FALSE((*store)->RecordOutcome({"nope", 1, 0, 1, {}}).ok());
}

TEST(StoreTest, UnwritablePathSaysWhatToFix) {
  auto store = Store::Open("/nonexistent/dir/x.db");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(std::string(store.status().message()).find("[store] path"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::daemon
