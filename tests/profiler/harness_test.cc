// Tests of the probe harness: counts, statistics, the data check, time limits.
#include "profiler/harness.h"

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "profiler/deadline.h"

namespace xdeep::profiler {
namespace {

// A probe whose operation "takes" a known time, reported without sleeping.
class FakeProbe : public Probe {
 public:
  explicit FakeProbe(double op_s) : op_s_(op_s) {}
  std::string Name() const override { return "fake"; }
  absl::Status Setup(const Deadline&) override {
    ++setups;
    return absl::OkStatus();
  }
  absl::StatusOr<double> RunBatch(int reps, const Deadline&) override {
    ops += reps;
    batches.push_back(reps);
    return op_s_ * reps * (1 + 0.01 * (batches.size() % 3));
  }
  absl::Status Check(const Deadline&) override {
    ++checks;
    return check_result;
  }
  double op_s_;
  int setups = 0, checks = 0;
  long long ops = 0;
  std::vector<int> batches;
  absl::Status check_result = absl::OkStatus();
};

TEST(HarnessTest, CalibratesBatchAndCountsOperations) {
  FakeProbe p(1e-4);  // 0.1 ms per op, target 2 ms per sample -> batch 20
  HarnessOptions o;
  o.warmup = 3;
  o.max_samples = 10;
  absl::StatusOr<ProbeResult> r = RunProbe(p, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->batch, 20);
  EXPECT_EQ(r->operations, 200);
  EXPECT_EQ(r->per_op.samples, 10);
  EXPECT_EQ(p.ops, 3 + 1 + 200);  // warm-up, calibration, samples
  EXPECT_EQ(p.setups, 1);
  EXPECT_EQ(p.checks, 1);
  EXPECT_NEAR(r->per_op.median, 1.01e-4, 1e-6);
  EXPECT_GE(r->per_op.p95, r->per_op.median);
}

TEST(HarnessTest, FixedBatchIsRespected) {
  FakeProbe p(1e-6);
  HarnessOptions o;
  o.batch = 7;
  o.max_samples = o.min_samples = 4;
  o.adaptive_stop = false;
  absl::StatusOr<ProbeResult> r = RunProbe(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->batch, 7);
  // No calibration batch of 1 when the batch is fixed (ranks must agree on counts).
  for (size_t i = 1; i < p.batches.size(); ++i) EXPECT_EQ(p.batches[i], 7);
}

TEST(HarnessTest, FailedCheckFailsTheProbe) {
  FakeProbe p(1e-4);
  p.check_result = absl::DataLossError("wrong answer");
  absl::StatusOr<ProbeResult> r = RunProbe(p, HarnessOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("fake"), std::string::npos);
}

// An operation that would never finish, waiting the way GPU probes wait: polling
// its completion against the deadline.
class HangingProbe : public Probe {
 public:
  std::string Name() const override { return "hang"; }
  absl::Status Setup(const Deadline&) override { return absl::OkStatus(); }
  absl::StatusOr<double> RunBatch(int, const Deadline& d) override {
    while (true) {
      if (d.Expired()) return absl::DeadlineExceededError("operation did not finish");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  absl::Status Check(const Deadline&) override { return absl::OkStatus(); }
};

TEST(HarnessTest, HangingProbeEndsWithinItsLimit) {
  HangingProbe p;
  HarnessOptions o;
  o.time_limit = absl::Milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<ProbeResult> r = RunProbe(p, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(s, 0.29);
  EXPECT_LT(s, 1.0);
}

TEST(HarnessTest, SlowProbeStopsEarlyButKeepsMinimumSamples) {
  // 50 ms per op, 400 ms limit, up to 100 samples: adaptive stop keeps it in time.
  class Slow : public FakeProbe {
   public:
    Slow() : FakeProbe(0.05) {}
    absl::StatusOr<double> RunBatch(int reps, const Deadline& d) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 * reps));
      return FakeProbe::RunBatch(reps, d);
    }
  } p;
  HarnessOptions o;
  o.warmup = 1;
  o.max_samples = 100;
  o.min_samples = 3;
  o.time_limit = absl::Milliseconds(600);
  absl::StatusOr<ProbeResult> r = RunProbe(p, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->per_op.samples, 3);
  EXPECT_LT(r->per_op.samples, 100);
}

TEST(WatchdogTest, FiresAfterLimitUnlessCancelled) {
  std::atomic<int> fired{0};
  {
    Watchdog w(absl::Milliseconds(50), [&] { fired++; });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_TRUE(w.fired());
  }
  EXPECT_EQ(fired.load(), 1);
  {
    Watchdog w(absl::Seconds(5), [&] { fired++; });
    w.Cancel();
  }
  EXPECT_EQ(fired.load(), 1);
}

TEST(DeadlineTest, CheckNamesWhatTimedOut) {
  EXPECT_TRUE(Deadline::In(absl::Seconds(10)).Check("x").ok());
  absl::Status s = Deadline::In(absl::ZeroDuration()).Check("nccl init");
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("nccl init"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::profiler
