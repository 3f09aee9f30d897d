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

TEST(ProbeShapesTest, MicroBatchesCoverWhatTheSearchTriesWithinTheLayerBudget) {
  auto gpt = PresetWorkload("gpt-125m");
  ASSERT_TRUE(gpt.ok());
  gpt->max_micro_batch = 12;
  EXPECT_EQ(ProbeMicroBatches(*gpt), (std::vector<int>{1, 2, 4, 8}));
  // Up to the search's largest micro-batch (64 for a GPT)...
  gpt->max_micro_batch = 64;
  EXPECT_EQ(ProbeMicroBatches(*gpt), (std::vector<int>{1, 2, 4, 8, 16, 32, 64}));
  // ...but no GEMM whose operands exceed 8 GiB: the head (tokens x 768 ->
  // 50257, 16-bit) at micro-batch 128 would need 12.5 GiB.
  gpt->max_micro_batch = 4096;
  EXPECT_EQ(ProbeMicroBatches(*gpt), (std::vector<int>{1, 2, 4, 8, 16, 32, 64}));
  // ResNet-50 has 21 distinct GEMM shapes per micro-batch: the 56-layer
  // budget would allow two micro-batches, but three are always probed, the
  // ends and the middle of 1 to 256 in log scale.
  auto w = PresetWorkload("resnet50");
  ASSERT_TRUE(w.ok());
  const std::vector<int> mbs = ProbeMicroBatches(*w);
  EXPECT_EQ(mbs, (std::vector<int>{1, 16, 256}));
  auto capped = profiler::ParseShapesJson(GemmShapesJson(std::span(&*w, 1), mbs));
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->gemms.size(), 3u * 21 * 3);
  w->precision = Precision::kFp32;
  auto parsed = profiler::ParseShapesJson(GemmShapesJson(std::span(&*w, 1), {{1}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->dtypes.at(0), profiler::DType::kFp32);
}

}  // namespace
}  // namespace xdeep::tuner
