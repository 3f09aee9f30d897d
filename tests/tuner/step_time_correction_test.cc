// Learning by component: a reported run corrects the component that set its
// step, in its own mode, and predictions are recombined by the model's rule.
#include "tuner/step_time_correction.h"

#include <cmath>

#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"

namespace xdeep::tuner {
namespace {

Configuration Config(int mb, int dp = 1, Sharding sharding = Sharding::kNone) {
  Configuration c;
  c.gpus_per_node = c.dp = dp;
  c.sharding = sharding;
  c.micro_batch = mb;
  c.global_batch = int64_t{dp} * mb;
  return c;
}

TEST(StepTimeCorrectionTest, ModesAreNamedByTheirStrategies) {
  EXPECT_EQ(LearningMode(Config(4)), "single");
  EXPECT_EQ(LearningMode(Config(4, 2)), "ddp");
  EXPECT_EQ(LearningMode(Config(4, 2, Sharding::kZero3)), "fsdp");
  Configuration c = Config(4, 2, Sharding::kZero3);
  c.gpus_per_node = 4;
  c.tp = 2;
  EXPECT_EQ(LearningMode(c), "fsdp+tp");
  c = Config(4);
  c.gpus_per_node = c.pp = 2;
  EXPECT_EQ(LearningMode(c), "pp");
}

TEST(StepTimeCorrectionTest, AReportCorrectsWhatItMeasuredWhereItSetsTheStep) {
  // gpt-125m on a fast GPU: micro-batch 16 set by its kernels, micro-batch 1
  // by its host's launches (StrategyTimeTest.SmallMicroBatchesAreLaunchBound).
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  const HardwareProfile hw = testing::SimpleProfile(10000);
  StrategyModel model(*w, hw);
  const Configuration pick = Config(16), near = Config(8), host_bound = Config(1),
                      ddp = Config(16, 2);
  const StepTime t = model.Time(pick);
  ASSERT_EQ(t.bound(), StepTime::Bound::kKernel);
  // Measured 20 % slower than predicted: the kernel time's factor is what
  // makes the recombined step the measured one -- more than 1.2, since the
  // optimizer step and the launches stay as predicted.
  const modeling::Outcome o = ReportedOutcome(pick, t, 1.2);
  EXPECT_EQ(o.component, modeling::StepComponent::kKernel);
  EXPECT_EQ(o.mode, "single");
  EXPECT_GT(o.measured / o.predicted, 1.2);
  auto fitted = modeling::ComponentCorrection::Fit(std::span(&o, 1));
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  EXPECT_NEAR(CorrectedStepTime(*fitted, pick, t).total_s / t.total_s, 1.2, 1e-9);
  // Its same-mode neighbour gets the factor on its kernel time.
  const StepTime tn = model.Time(near);
  const double moved = CorrectedStepTime(*fitted, near, tn).total_s / tn.total_s;
  EXPECT_GT(moved, 1.1);
  EXPECT_LT(moved, 1.2);
  // A host-bound step of the same mode moves by the little its kernels show.
  const StepTime th = model.Time(host_bound);
  ASSERT_EQ(th.bound(), StepTime::Bound::kHost);
  EXPECT_LT(CorrectedStepTime(*fitted, host_bound, th).total_s / th.total_s - 1,
            0.25 * (moved - 1));
  // Another mode stays as predicted, bit for bit.
  const StepTime td = model.Time(ddp);
  EXPECT_EQ(CorrectedStepTime(*fitted, ddp, td).total_s, td.total_s);
  // A host-bound report corrects the host time.
  const modeling::Outcome h = ReportedOutcome(host_bound, th, 0.9);
  EXPECT_EQ(h.component, modeling::StepComponent::kHost);
  EXPECT_LT(h.measured / h.predicted, 0.9);
  auto from_host = modeling::ComponentCorrection::Fit(std::span(&h, 1));
  ASSERT_TRUE(from_host.ok());
  EXPECT_NEAR(CorrectedStepTime(*from_host, host_bound, th).total_s / th.total_s, 0.9, 1e-9);
  // ...and leaves a kernel-bound step of its mode nearly as it was.
  EXPECT_GT(CorrectedStepTime(*from_host, pick, t).total_s / t.total_s, 0.99);
}

TEST(StepTimeCorrectionTest, AnUnreachableReportTakesTheBound) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  StrategyModel model(*w, testing::SimpleProfile(10000));
  const StepTime t = model.Time(Config(16));
  // Faster than the optimizer step and launches allow: the factor's floor.
  const modeling::Outcome o = ReportedOutcome(Config(16), t, 0.01);
  EXPECT_NEAR(o.measured / o.predicted, 1.0 / 16, 1e-9);
}

}  // namespace
}  // namespace xdeep::tuner
