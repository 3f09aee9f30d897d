// The shapes file the daemon hands to the launch-time compute probe: every
// forward GEMM of the workload once per micro-batch, in the dtype training
// runs, and readable by xdeep-probe's own parser.
#include "tuner/probe_shapes.h"

#include <cmath>
#include <set>
#include <tuple>

#include "gtest/gtest.h"
#include "profiler/report.h"
#include "profiler/shapes.h"
#include "tuner/gemm_kernel_table.h"
#include "tuner/gemm_rank_shape.h"
#include "tuner/search.h"
#include "tuner/strategy_model.h"

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

TEST(ProbeShapesTest, TensorParallelDegreesFollowTheSearchsRules) {
  auto gpt = PresetWorkload("gpt-125m");  // 12 heads, ffn 3072
  ASSERT_TRUE(gpt.ok());
  // 3 and 6 split the heads but divide no GPUs-per-node count the search
  // tries on 8-GPU nodes (1, 2, 4, 8); 8 does not split 12 heads.
  EXPECT_EQ(TensorParallelDegrees(*gpt, 8), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(TensorParallelDegrees(*gpt, 6), (std::vector<int>{1, 2, 3, 4, 6}));
  gpt->parallel.max_tp = 2;
  EXPECT_EQ(TensorParallelDegrees(*gpt, 8), (std::vector<int>{1, 2}));
  auto resnet = PresetWorkload("resnet50");  // no tensor parallelism for a CNN
  ASSERT_TRUE(resnet.ok());
  EXPECT_EQ(TensorParallelDegrees(*resnet, 8), (std::vector<int>{1}));
  // Up to twice the largest timed micro-batch, within the workload's largest.
  EXPECT_EQ(HeuristicMicroBatches(*resnet, 4), (std::vector<int>{1, 2, 4, 8}));
  resnet->max_micro_batch = 6;
  EXPECT_EQ(HeuristicMicroBatches(*resnet, 4), (std::vector<int>{1, 2, 4}));
  gpt->max_micro_batch = 12;
  EXPECT_EQ(HeuristicMicroBatches(*gpt, 128), (std::vector<int>{1, 2, 4, 8}));
  // Never timed: the search goes up to the workload's largest.
  gpt->max_micro_batch = 512;
  EXPECT_EQ(HeuristicMicroBatches(*gpt, 0).back(), 512);
}

TEST(ProbeShapesTest, ThePresetsAreAskedUpToTheMicroBatchesTheSearchTriesOnWorkloadsNeverTimed) {
  // A probe job for one workload asks about the presets on later workloads'
  // behalf; the profile times none of their GEMMs, so the search tries them
  // up to their max_micro_batch (SearchMicroBatchLimit), and so must the list.
  auto named = PresetWorkload("gpt-125m");
  ASSERT_TRUE(named.ok());
  auto parsed = profiler::ParseShapesJson(ProbeShapesFor(&*named, 8).heuristic);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::set<std::tuple<int64_t, int64_t, int64_t, std::string>> asked;
  for (const profiler::GemmSpec& g : parsed->gemms) asked.insert({g.m, g.n, g.k, g.pass});
  for (const std::string& name : PresetWorkloadNames()) {
    auto w = PresetWorkload(name);
    ASSERT_TRUE(w.ok()) << name;
    const int limit = SearchMicroBatchLimit(*w, HardwareProfile{});
    int top = 1;
    while (2 * top <= limit) top *= 2;
    for (const LayerCost& l : w->layers) {
      if (l.gemms.empty()) continue;
      const RankGemm r = RankGemmShape(l, 0, top, 1);
      const auto m = std::llround(r.m), n = std::llround(r.n), k = std::llround(r.k);
      EXPECT_TRUE(asked.contains({m, n, k, "fwd"})) << name << "." << l.name << " mb " << top;
      break;
    }
  }
}

TEST(ProbeShapesTest, TheHeuristicIsAskedAboutEveryGemmOfTheSearchsReachInXdeepProbesFormat) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  auto parsed = profiler::ParseShapesJson(GemmHeuristicShapesJson(std::span(&*w, 1), 8));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::set<std::tuple<int64_t, int64_t, int64_t, std::string>> asked;
  for (const profiler::GemmSpec& g : parsed->gemms) {
    ASSERT_TRUE(g.dtype.has_value());
    EXPECT_EQ(*g.dtype, profiler::DType::kBf16);
    asked.insert({g.m, g.n, g.k, g.pass});
  }
  EXPECT_EQ(asked.size(), parsed->gemms.size());  // each once
  for (int mb : HeuristicMicroBatches(*w, 0)) {
    for (int tp : TensorParallelDegrees(*w, 8)) {
      for (const LayerCost& l : w->layers) {
        const int t = TpWays(l, w->settings.tensor_parallel, tp);
        for (size_t g = 0; g < l.gemms.size(); ++g) {
          const RankGemm r = RankGemmShape(l, g, mb, t);
          const auto m = std::llround(r.m), n = std::llround(r.n), k = std::llround(r.k);
          EXPECT_TRUE(asked.contains({m, n, k, "fwd"})) << l.name << " mb " << mb << " tp " << tp;
          EXPECT_TRUE(asked.contains({m, k, n, "dgrad"})) << l.name << " mb " << mb;
          EXPECT_TRUE(asked.contains({n, k, m, "wgrad"})) << l.name << " mb " << mb;
        }
      }
    }
  }
  // Without a workload the presets' GEMMs alone, a few thousand answers
  // (3,645 at 8 GPUs a node; cuBLASLt's heuristic: 600 in 0.55 s on an H200,
  // nothing timed), so the job's 60 s heuristic step has room.
  const ProbeShapeFiles grid = ProbeShapesFor(nullptr, 8);
  EXPECT_TRUE(grid.timed.empty());
  auto presets = profiler::ParseShapesJson(grid.heuristic);
  ASSERT_TRUE(presets.ok()) << presets.status();
  EXPECT_GT(presets->gemms.size(), asked.size());
  EXPECT_GE(presets->gemms.size(), 1000u);
  EXPECT_LT(presets->gemms.size(), 10000u);
  // A CNN at fp32 is looked up at TF32 (cuDNN's default for convolutions).
  auto resnet = PresetWorkload("resnet50");
  ASSERT_TRUE(resnet.ok());
  resnet->precision = Precision::kFp32;
  auto tf32 = profiler::ParseShapesJson(GemmHeuristicShapesJson(std::span(&*resnet, 1), 8));
  ASSERT_TRUE(tf32.ok()) << tf32.status();
  EXPECT_EQ(tf32->dtypes, std::vector<profiler::DType>{profiler::DType::kTf32});
  // A later workload without GEMMs names no dtype: the list's are its GEMMs'.
  Workload none = *resnet;
  for (LayerCost& l : none.layers) l.gemms.clear();
  const Workload both[] = {*w, none};
  auto one_dtype = profiler::ParseShapesJson(GemmHeuristicShapesJson(both, 8));
  ASSERT_TRUE(one_dtype.ok()) << one_dtype.status();
  EXPECT_EQ(one_dtype->dtypes, std::vector<profiler::DType>{profiler::DType::kBf16});
}

// The probe job's report as the real probe writes it: a timed compute set of
// an H200 (bench/validate data, each GEMM with the cuBLASLt kernel it ran)
// merged with the heuristic's answers for `shapes`, every answer naming
// `kernel` (profiler's own writer and merge, as `xdeep-probe merge` runs them).
std::string ProbeJobReport(const std::string& shapes, const profiler::GemmKernel& kernel) {
  auto timed = profiler::ReadReport(std::string(XDEEP_SOURCE_DIR) +
                                    "/bench/validate/data/calibration/"
                                    "2026-11-27_h200x1_gemm_seed6607/gemm_fit.json");
  EXPECT_TRUE(timed.ok()) << timed.status();
  auto parsed = profiler::ParseShapesJson(shapes);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  profiler::Report heuristic = profiler::NewReport();
  heuristic.gpu = timed->gpu;
  for (const profiler::GemmSpec& g : parsed->gemms) {
    profiler::GemmEntry e;
    e.m = g.m, e.n = g.n, e.k = g.k;
    e.dtype = std::string(profiler::DTypeName(*g.dtype));
    e.pass = g.pass;
    e.layer = g.layer;
    e.kernel = kernel;
    heuristic.gemm_algos.push_back(e);
  }
  auto merged = profiler::MergeReports({*timed, heuristic});
  EXPECT_TRUE(merged.ok()) << merged.status();
  return profiler::ToJson(*merged).dump();
}

TEST(ProbeShapesTest, TheProbeJobsHeuristicAnswersTimeUntimedShapesOnTheirKernelsTiles) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  const ProbeShapeFiles files = ProbeShapesFor(&*w, 2);
  // Two answers cuBLASLt gives on an H200 (check_algos.json there): the
  // TMA kernel (algorithm 66) with a 128 x 256 tile, and with 64 x 96.
  const profiler::GemmKernel large{.algo = 66,
                                   .tile_id = 24,
                                   .stages_id = 35,
                                   .tile_m = 128,
                                   .tile_n = 256,
                                   .split_k = 1,
                                   .cluster_m = 2,
                                   .cluster_n = 1};
  profiler::GemmKernel small = large;
  small.tile_id = 27;
  small.tile_m = 64;
  small.tile_n = 96;
  auto hw = HardwareProfileFromProbeReport(ProbeJobReport(files.heuristic, large), "job.json");
  auto hw_small = HardwareProfileFromProbeReport(ProbeJobReport(files.heuristic, small), "j.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  ASSERT_TRUE(hw_small.ok()) << hw_small.status();
  ASSERT_NE(hw->gemm_kernels, nullptr);
  EXPECT_EQ(hw->gemm_heuristic.size(), profiler::ParseShapesJson(files.heuristic)->gemms.size());

  // GPT-125M's fused QKV Linear split over 2 ranks at micro-batch 16: 16,384
  // tokens x 768 -> 1152, a shape the probe never timed.
  const double m = 16384, n = 1152, k = 768;
  for (const GemmPoint& p : hw->gemm) EXPECT_FALSE(p.m == m && p.n == n && p.k == k);
  const GemmKernel tile{66, 128, 256, 1};
  EXPECT_DOUBLE_EQ(
      GemmModel(*hw, DType::kBf16).Seconds(m, n, k),
      GemmKernelSeconds(hw->gemm_kernels->fit(DType::kBf16), m, n, k, GemmLayout::kForward, tile));
  EXPECT_NE(GemmModel(*hw, DType::kBf16).Seconds(m, n, k),
            GemmModel(*hw_small, DType::kBf16).Seconds(m, n, k));

  // The step-time model finds every GEMM it asks about in the heuristic's
  // answers: spoiling the best-tile model (what a shape without a known kernel
  // falls back to) changes nothing, at tp 1 and 2.
  Configuration c;
  c.gpus_per_node = 2;
  c.micro_batch = 16;
  c.global_batch = 32;
  for (int tp : {1, 2}) {
    c.tp = tp;
    c.dp = 2 / tp;
    c.sequence_parallel = tp > 1;
    const double step = EstimateStepTime(*w, *hw, c).total_s;
    HardwareProfile spoiled = *hw;
    spoiled.gemm_fits[static_cast<int>(DType::kBf16)].peak_flops *= 1e-3;
    EXPECT_DOUBLE_EQ(EstimateStepTime(*w, spoiled, c).total_s, step) << "tp " << tp;
    // The heuristic's tile changes the prediction.
    EXPECT_NE(EstimateStepTime(*w, *hw_small, c).total_s, step) << "tp " << tp;
  }
  // Without the answers, the spoiled best-tile model is what the step pays.
  HardwareProfile blind = *hw;
  blind.gemm_heuristic.clear();
  FitGemmModels(&blind);
  const double blind_step = EstimateStepTime(*w, blind, c).total_s;
  blind.gemm_fits[static_cast<int>(DType::kBf16)].peak_flops *= 1e-3;
  EXPECT_GT(EstimateStepTime(*w, blind, c).total_s, 2 * blind_step);
}

TEST(ProbeShapesTest, ContextParallelDegreesFollowTheSearchsRules) {
  auto llama = PresetWorkload("llama-7b");  // 4,096 tokens: cp 2 leaves 2,048 a rank
  auto gpt = PresetWorkload("gpt-125m");    // 1,024 tokens: no context parallelism
  ASSERT_TRUE(llama.ok() && gpt.ok());
  EXPECT_EQ(ContextParallelDegrees(*llama), (std::vector<int>{1, 2}));
  EXPECT_EQ(ContextParallelDegrees(*gpt), (std::vector<int>{1}));
  llama->transformer.seq_len = 32768;
  EXPECT_EQ(ContextParallelDegrees(*llama), (std::vector<int>{1, 2, 4, 8, 16}));
  llama->parallel.max_cp = 4;
  EXPECT_EQ(ContextParallelDegrees(*llama), (std::vector<int>{1, 2, 4}));
  llama->parallel.cp = 4;
  EXPECT_EQ(ContextParallelDegrees(*llama), (std::vector<int>{4}));
}

TEST(ProbeShapesTest, TheModelFindsEveryGemmOfAContextParallelLayoutAmongTheAnswers) {
  auto w = PresetWorkload("llama-7b");
  ASSERT_TRUE(w.ok());
  const ProbeShapeFiles files = ProbeShapesFor(&*w, 2);
  const profiler::GemmKernel tile{.algo = 66, .tile_m = 128, .tile_n = 256, .split_k = 1};
  auto hw = HardwareProfileFromProbeReport(ProbeJobReport(files.heuristic, tile), "job.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  // cp 2 on two GPUs: each rank runs 2,048 of the 4,096 tokens, GEMMs of
  // m = 2,048 x micro-batch that no cp = 1 layout runs at micro-batch 1.
  Configuration c;
  c.gpus_per_node = 2;
  c.cp = 2;
  c.global_batch = 8;
  for (int mb : {1, 4}) {
    c.micro_batch = mb;
    const double step = EstimateStepTime(*w, *hw, c).total_s;
    ASSERT_GT(step, 0);
    // Spoiling the best-tile model (what an unanswered shape falls back to)
    // changes nothing: every GEMM the model asks about has an answer.
    HardwareProfile spoiled = *hw;
    spoiled.gemm_fits[static_cast<int>(DType::kBf16)].peak_flops *= 1e-3;
    EXPECT_DOUBLE_EQ(EstimateStepTime(*w, spoiled, c).total_s, step) << "mb " << mb;
  }
}

}  // namespace
}  // namespace xdeep::tuner
