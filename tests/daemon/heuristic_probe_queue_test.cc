// HeuristicCoverage (is a workload's every GEMM answered, cached per workload
// and profile) and HeuristicProbeQueue (one job per partition and shape set,
// at most one per partition per interval, never blocking the caller).
#include "daemon/heuristic_probe_queue.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "daemon/heuristic_coverage.h"
#include "tuner/fingerprint.h"
#include "tuner/gemm_answer_book.h"
#include "tuner/gemm_kernel_table.h"
#include "tuner/hardware_profile.h"
#include "tuner/probe_shapes.h"
#include "tuner/workload.h"

namespace xdeep::daemon {
namespace {

std::shared_ptr<const HeuristicGap> Gap(uint64_t shape_set) {
  auto gap = std::make_shared<HeuristicGap>();
  gap->shape_set = shape_set;
  gap->missing.resize(3);
  return gap;
}

TEST(HeuristicProbeQueueTest, OneJobPerPartitionAndShapeSetAtMostOnePerInterval) {
  int64_t now = 1000;
  std::vector<HeuristicProbeJob> ran;
  HeuristicProbeQueue queue(
      [&](const HeuristicProbeJob& job, const std::function<bool()>& stopping) {
        EXPECT_FALSE(stopping());
        ran.push_back(job);
        return absl::OkStatus();
      },
      [&] { return now; }, /*start_thread=*/false);
  using Offer = HeuristicProbeQueue::Offer;
  EXPECT_EQ(queue.Submit({"gpu", 8, Gap(1)}, 600), Offer::kQueued);
  // The same workload's next decisions: already pending, whatever the clock.
  now += 1000;
  EXPECT_EQ(queue.Submit({"gpu", 8, Gap(1)}, 600), Offer::kPending);
  EXPECT_EQ(queue.pending(), 1u);
  // Another workload on the same partition, within the interval: not now.
  now = 1000 + 599;
  EXPECT_EQ(queue.Submit({"gpu", 8, Gap(2)}, 600), Offer::kRateLimited);
  // Another partition has its own interval.
  EXPECT_EQ(queue.Submit({"gpu-h100", 4, Gap(2)}, 600), Offer::kQueued);
  // 0 turns the jobs off.
  EXPECT_EQ(queue.Submit({"other", 8, Gap(3)}, 0), HeuristicProbeQueue::Offer::kOff);
  ASSERT_TRUE(queue.RunOne());
  ASSERT_TRUE(queue.RunOne());
  EXPECT_FALSE(queue.RunOne());
  ASSERT_EQ(ran.size(), 2u);
  EXPECT_EQ(ran[0].partition, "gpu");
  EXPECT_EQ(ran[1].partition, "gpu-h100");
  EXPECT_EQ(queue.pending(), 0u);
  // Once the interval has passed, the first partition takes a job again.
  now = 1000 + 600;
  EXPECT_EQ(queue.Submit({"gpu", 8, Gap(2)}, 600), Offer::kQueued);
}

TEST(HeuristicProbeQueueTest, SubmitNeverWaitsForARunningJobAndShutdownCancelsIt) {
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  bool saw_stop = false;
  {
    HeuristicProbeQueue queue([&](const HeuristicProbeJob&, const std::function<bool()>& stopping) {
      {
        std::lock_guard lock(mu);
        started = true;
      }
      cv.notify_all();
      // A job that waits on Slurm until the daemon stops.
      while (!stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      saw_stop = true;
      return absl::CancelledError("stopped");
    });
    ASSERT_EQ(queue.Submit({"gpu", 8, Gap(1)}, 60), HeuristicProbeQueue::Offer::kQueued);
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return started; }));
    lock.unlock();
    // While it runs, decisions offer more and return at once.
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(queue.Submit({"gpu", 8, Gap(1)}, 60), HeuristicProbeQueue::Offer::kPending);
    EXPECT_EQ(queue.Submit({"gpu", 8, Gap(2)}, 60), HeuristicProbeQueue::Offer::kRateLimited);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(saw_stop);
}

std::shared_ptr<const tuner::HardwareProfile> H200(const std::vector<tuner::GemmPoint>& answers) {
  std::ifstream in(std::string(XDEEP_SOURCE_DIR) +
                   "/bench/validate/data/calibration/2026-11-27_h200x1_gemm_seed6607/gemm_fit.json");
  std::stringstream text;
  text << in.rdbuf();
  auto hw = tuner::HardwareProfileFromProbeReport(text.str(), "gemm_fit.json");
  EXPECT_TRUE(hw.ok()) << hw.status();
  tuner::SetHeuristicAnswers(&*hw, answers);
  return std::make_shared<const tuner::HardwareProfile>(*std::move(hw));
}

// The heuristic's answers for every GEMM of `workloads` (any tile).
std::vector<tuner::GemmPoint> AnswersFor(const std::vector<tuner::Workload>& workloads) {
  std::vector<tuner::GemmPoint> out;
  for (const tuner::HeuristicGemm& g : tuner::HeuristicGemms(workloads, 8)) {
    out.push_back({g.m, g.n, g.k, g.dtype, 0.0, g.layout, tuner::GemmKernel{66, 128, 256, 1}});
  }
  return out;
}

TEST(HeuristicCoverageTest, AWorkloadWithUnansweredShapesIsAGapCachedPerWorkloadAndProfile) {
  auto gpt = tuner::PresetWorkload("gpt-125m");
  auto llama = tuner::PresetWorkload("llama-7b");
  ASSERT_TRUE(gpt.ok() && llama.ok());
  auto answered_gpt = H200(AnswersFor({*gpt}));
  HeuristicCoverage coverage;
  const std::string gpt_id = tuner::ModelFingerprint(*gpt);
  const std::string llama_id = tuner::ModelFingerprint(*llama);
  EXPECT_EQ(coverage.Check(answered_gpt, *gpt, gpt_id, 8), nullptr);
  auto gap = coverage.Check(answered_gpt, *llama, llama_id, 8);
  ASSERT_NE(gap, nullptr);
  const std::vector<tuner::HeuristicGemm> all = tuner::HeuristicGemms(std::span(&*llama, 1), 8);
  EXPECT_EQ(gap->asked, all.size());
  EXPECT_EQ(gap->shape_set, tuner::ShapeSetFingerprint(all));
  EXPECT_GT(gap->missing.size(), 0u);
  EXPECT_LE(gap->missing.size(), all.size());
  for (const tuner::HeuristicGemm& g : gap->missing) {
    EXPECT_EQ(answered_gpt->gemm_kernels->Find(g.dtype, g.layout, g.m, g.n, g.k), nullptr);
  }
  // Cached: the same answer object for the same workload and profile.
  EXPECT_EQ(coverage.Check(answered_gpt, *llama, llama_id, 8), gap);
  // Another node size lists other tensor-parallel shapes: its own entry.
  EXPECT_NE(coverage.Check(answered_gpt, *llama, llama_id, 4), gap);
  // Once a probe has answered it, the new profile has no gap.
  auto both = H200(AnswersFor({*gpt, *llama}));
  EXPECT_EQ(coverage.Check(both, *llama, llama_id, 8), nullptr);
  // A profile without kernels uses no answers: nothing to ask.
  auto builtin = tuner::BuiltinHardwareProfile("h100-sxm");
  if (builtin.ok()) {
    auto plain = std::make_shared<const tuner::HardwareProfile>(*builtin);
    EXPECT_EQ(coverage.Check(plain, *llama, llama_id, 8), nullptr);
  }
}

}  // namespace
}  // namespace xdeep::daemon
