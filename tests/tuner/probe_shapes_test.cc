// The shapes file the daemon hands to the launch-time compute probe: every
// forward GEMM of the workload once per micro-batch, in the dtype training
// runs, and readable by xdeep-probe's own parser.
#include "tuner/probe_shapes.h"

#include <set>
#include <tuple>

#include "gtest/gtest.h"
#include "profiler/shapes.h"

namespace xdeep::tuner {
namespace {

TEST(ProbeShapesTest, EveryForwardGemmOncePerMicroBatchInXdeepProbesFormat) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  const std::vector<int> mbs = {1, 2};
  auto parsed = profiler::ParseShapesJson(GemmShapesJson(std::span(&*w, 1), mbs));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  // Distinct (tokens, in, out) over the layer table: the twelve identical
  // blocks give four, the output head one; each is probed fwd, dgrad, wgrad.
  std::set<std::tuple<double, int64_t, int64_t>> distinct;
  for (const LayerCost& l : w->layers) {
    for (const GemmShape& g : l.gemms) distinct.insert({g.m_per_sample, g.n, g.k});
  }
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_EQ(parsed->gemms.size(), 3 * distinct.size() * mbs.size());
  ASSERT_EQ(parsed->dtypes.size(), 1u);
  EXPECT_EQ(parsed->dtypes[0], profiler::DType::kBf16);
  // The output head at micro-batch 2: 2048 tokens x 768 -> 50257.
  bool head = false;
  for (const auto& g : parsed->gemms) head = head || (g.m == 2048 && g.n == 50257 && g.k == 768);
  EXPECT_TRUE(head);
}

TEST(ProbeShapesTest, MicroBatchesArePowersOfTwoWithinTheLayerBudget) {
  auto gpt = PresetWorkload("gpt-125m");
  ASSERT_TRUE(gpt.ok());
  gpt->max_micro_batch = 12;
  EXPECT_EQ(ProbeMicroBatches(*gpt), (std::vector<int>{1, 2, 4, 8}));
  gpt->max_micro_batch = 4096;
  EXPECT_EQ(ProbeMicroBatches(*gpt), (std::vector<int>{1, 2, 4, 8, 16, 32}));
  // ResNet-50 has 21 distinct GEMM shapes per micro-batch: two micro-batches
  // (42 layers) fit the 56-layer budget, the ends of 1 to 32.
  auto w = PresetWorkload("resnet50");
  ASSERT_TRUE(w.ok());
  const std::vector<int> mbs = ProbeMicroBatches(*w);
  EXPECT_EQ(mbs.front(), 1);
  EXPECT_EQ(mbs.back(), 32);
  auto capped = profiler::ParseShapesJson(GemmShapesJson(std::span(&*w, 1), mbs));
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_LE(capped->gemms.size(), 3u * 56);
  w->precision = Precision::kFp32;
  auto parsed = profiler::ParseShapesJson(GemmShapesJson(std::span(&*w, 1), {{1}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->dtypes.at(0), profiler::DType::kFp32);
}

}  // namespace
}  // namespace xdeep::tuner
