// Time limits in the search: a run longer than the limit is planned as
// checkpointed segments whose restarts count in time and cost; one segment's
// cost is what a budget holds at a time.
#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/search.h"

namespace xdeep::tuner {
namespace {

TEST(SegmentsTest, CountsJobsWithinTheLimit) {
  SearchLimits l;
  EXPECT_EQ(SegmentsWithin(l, 1e9), 1) << "no limit: one job";
  l.time_limit_s = 3600;
  l.segment_restart_s = 600;
  EXPECT_EQ(SegmentsWithin(l, 3600), 1) << "fits exactly";
  EXPECT_EQ(SegmentsWithin(l, 3601), 2);
  EXPECT_EQ(SegmentsWithin(l, 3000 * 7), 7);
  EXPECT_EQ(SegmentsWithin(l, 3000 * 7 + 1), 8);
}

TEST(SegmentsTest, SearchPlansSegmentsAndCountsTheirRestarts) {
  auto w = PresetWorkload("gpt-125m");
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(w.ok() && hw.ok());
  SearchLimits l;
  l.max_nodes = 1;
  l.objective = Objective::kTime;
  auto free = Search(*w, *hw, l);
  ASSERT_TRUE(free.ok()) << free.status();
  const Prediction& one = free->best.prediction;
  EXPECT_EQ(one.segments, 1);

  l.time_limit_s = one.time_to_solution_s / 3.5;  // needs 4 jobs (and a 5th for restarts)
  l.segment_restart_s = 60;
  auto limited = Search(*w, *hw, l);
  ASSERT_TRUE(limited.ok()) << limited.status();
  const Prediction& p = limited->best.prediction;
  ASSERT_EQ(StrategyName(limited->best.config), StrategyName(free->best.config));
  const int expected = static_cast<int>(
      std::ceil(one.time_to_solution_s / (l.time_limit_s - l.segment_restart_s)));
  EXPECT_EQ(p.segments, expected);
  EXPECT_NEAR(p.time_to_solution_s,
              one.time_to_solution_s + (expected - 1) * l.segment_restart_s, 1e-6);
  EXPECT_GT(p.cost, one.cost) << "restarts cost GPU time";
  EXPECT_NEAR(SegmentCost(l, p), p.cost * l.time_limit_s / p.time_to_solution_s, 1e-9);
  EXPECT_LT(SegmentCost(l, p), p.cost / (expected - 1));
  EXPECT_THAT(limited->best.why, ::testing::HasSubstr("checkpointed jobs of at most"));
}

TEST(SegmentsTest, LimitThatLeavesNoTimeToTrainIsRefused) {
  auto w = PresetWorkload("gpt-125m");
  auto hw = BuiltinHardwareProfile("h100-sxm");
  SearchLimits l;
  l.time_limit_s = 600;
  l.segment_restart_s = 300;
  auto r = Search(*w, *hw, l);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("allow a longer --time"));
}

}  // namespace
}  // namespace xdeep::tuner
