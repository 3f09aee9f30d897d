// Tests of the timing statistics.
#include "profiler/stats.h"

#include <cmath>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

TEST(PercentileTest, InterpolatesLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], q) = 1 + 3 q / 100.
  const std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 95), 3.85);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
}

TEST(SummarizeTest, MatchesDefinitions) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(1.0, 2.0);
  std::vector<double> v(101);
  for (double& x : v) x = u(rng);
  absl::StatusOr<Summary> s = Summarize(v);
  ASSERT_TRUE(s.ok()) << s.status();
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(s->samples, 101);
  EXPECT_DOUBLE_EQ(s->min, sorted.front());
  EXPECT_DOUBLE_EQ(s->max, sorted.back());
  EXPECT_DOUBLE_EQ(s->median, sorted[50]);
  EXPECT_DOUBLE_EQ(s->p95, sorted[95]);
  EXPECT_NEAR(s->spread, (sorted[95] - sorted[0]) / sorted[50], 1e-15);
  double mean = 0;
  for (double x : v) mean += x;
  EXPECT_NEAR(s->mean, mean / v.size(), 1e-12);
}

TEST(SummarizeTest, SpreadIsZeroForConstantSamples) {
  absl::StatusOr<Summary> s = Summarize({3e-3, 3e-3, 3e-3});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->spread, 0);
  EXPECT_EQ(s->median, 3e-3);
}

TEST(SummarizeTest, RejectsEmptyNegativeAndNaN) {
  EXPECT_FALSE(Summarize({}).ok());
  EXPECT_FALSE(Summarize({1.0, -1.0}).ok());
  EXPECT_FALSE(Summarize({1.0, std::numeric_limits<double>::quiet_NaN()}).ok());
  EXPECT_FALSE(Summarize({1.0, std::numeric_limits<double>::infinity()}).ok());
}

}  // namespace
}  // namespace xdeep::profiler
