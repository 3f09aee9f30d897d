// Selective recomputation (Korthikanti et al. 2022): the workload, the
// strategy model's memory and time, and the search's third recompute mode.
#include "tuner/selective_recompute.h"

#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

// GPT-3 175B's shape (Korthikanti et al. Table 3) as Megatron ran it in 2022:
// fused kernels, Megatron layers, attention over materialised scores.
Workload Gpt175b(AttentionKernel attention) {
  Workload w = testing::MegatronGpt("gpt-175b", 96, 12288, 96, 2048);
  w.settings.attention = attention;
  BuildTransformerLayers(w);
  w.reference_global_batch = w.min_global_batch = w.max_global_batch = 64;
  w.max_micro_batch = 1;
  return w;
}

// tp8 x pp8 on 64 A100s, sequence parallel, one micro-batch of 64 per step.
Configuration Layout(bool full, bool selective) {
  Configuration c;
  c.nodes = 8;
  c.gpus_per_node = 8;
  c.tp = 8;
  c.pp = 8;
  c.dp = 1;
  c.sequence_parallel = true;
  c.micro_batch = 1;
  c.grad_accum = 64;
  c.global_batch = 64;
  c.recompute = full;
  c.selective_recompute = selective;
  return c;
}

TEST(SelectiveRecomputeTest, WorkloadDropsOnlyTheScores) {
  const Workload w = Gpt175b(AttentionKernel::kMath);
  const LayerCost& block = w.layers[1];
  const double s = 2048, a = 96;
  // Korthikanti's 5 a s / h bytes per token and layer, for autocast: the fp32
  // softmax output and its 16-bit cast, 6 a s^2 bytes per sample.
  EXPECT_DOUBLE_EQ(block.attention_core_bytes, 6 * a * s * s);
  const Workload d = WithSelectiveRecompute(w);
  EXPECT_DOUBLE_EQ(d.layers[1].saved_activation_bytes,
                   block.saved_activation_bytes - block.attention_core_bytes);
  EXPECT_TRUE(d.layers[1].attention_core_recomputed);
  EXPECT_FALSE(d.layers[0].attention_core_recomputed);  // the embedding has no attention
  EXPECT_TRUE(SelectiveRecomputeMatters(w));
  // A fused kernel keeps no scores: nothing to recompute selectively.
  EXPECT_FALSE(SelectiveRecomputeMatters(Gpt175b(AttentionKernel::kFlash)));
}

TEST(SelectiveRecomputeTest, MemoryBetweenFullAndNone) {
  const Workload w = Gpt175b(AttentionKernel::kMath);
  const HardwareProfile hw = *BuiltinHardwareProfile("a100-sxm");
  StrategyModel m(w, hw);
  const MemoryBreakdown none = m.Memory(Layout(false, false));
  const MemoryBreakdown sel = m.Memory(Layout(false, true));
  const MemoryBreakdown full = m.Memory(Layout(true, false));
  // Rank 0 of 8 stages holds 8 micro-batches in flight of its 12 blocks; each
  // keeps its scores split over tp 8 without selective recomputation.
  const double core_per_rank = w.layers[1].attention_core_bytes / 8;
  EXPECT_NEAR(none.activations - sel.activations, 8 * 12 * core_per_rank,
              1e-9 * none.activations);
  // One block's scores are rebuilt at a time in backward.
  EXPECT_NEAR(sel.transient - none.transient, core_per_rank, 1e-9 * core_per_rank);
  EXPECT_LT(full.activations, sel.activations);
  // Korthikanti Table 2 / sec. 5: with sequence parallelism the scores are
  // most of a 175B block's activations at s = 2048 (5as/h = 80 of 114 bytes
  // per token x h; here with autocast's fp32 softmax, more).
  EXPECT_LT(sel.activations, 0.5 * none.activations);
}

TEST(SelectiveRecomputeTest, TimeCostsTheCoresForwardOnly) {
  const Workload w = Gpt175b(AttentionKernel::kMath);
  const HardwareProfile hw = *BuiltinHardwareProfile("a100-sxm");
  StrategyModel m(w, hw);
  const double none = m.Time(Layout(false, false)).total_s;
  const double sel = m.Time(Layout(false, true)).total_s;
  const double full = m.Time(Layout(true, false)).total_s;
  EXPECT_GT(sel, none);
  // Korthikanti et al. Table 4 (GPT-3 175B, one layer's forward + backward on
  // A100, tp 8): full recomputation +39 %, selective with sequence
  // parallelism +4 %, both against no recomputation.
  const Configuration c = Layout(false, false);
  const double mb_none = m.Time(c).per_micro_batch_s;
  const double mb_sel = m.Time(Layout(false, true)).per_micro_batch_s;
  const double mb_full = m.Time(Layout(true, false)).per_micro_batch_s;
  EXPECT_GT(mb_sel / mb_none - 1, 0.01) << mb_sel / mb_none;
  EXPECT_LT(mb_sel / mb_none - 1, 0.10) << mb_sel / mb_none;
  EXPECT_GT(mb_full / mb_none - 1, 0.25) << mb_full / mb_none;
  EXPECT_LT(mb_full / mb_none - 1, 0.45) << mb_full / mb_none;
  EXPECT_LT(sel - none, 0.3 * (full - none));
  // Where attention is a fused kernel, the mode changes nothing.
  const Workload flash = Gpt175b(AttentionKernel::kFlash);
  StrategyModel mf(flash, hw);
  EXPECT_EQ(mf.Time(Layout(false, true)).total_s, mf.Time(Layout(false, false)).total_s);
  EXPECT_EQ(mf.Memory(Layout(false, true)).Total(), mf.Memory(Layout(false, false)).Total());
  EXPECT_NE(StructuralProblem(w, Layout(true, true)), "");
}

TEST(SelectiveRecomputeTest, SearchOffersItWhereScoresAreKept) {
  Workload w = Gpt175b(AttentionKernel::kMath);
  const HardwareProfile hw = *BuiltinHardwareProfile("a100-sxm");
  SearchLimits l;
  l.max_nodes = 8;
  l.objective = Objective::kTime;
  w.parallel.recompute = "selective";
  auto r = Search(w, hw, l);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->best.config.selective_recompute);
  EXPECT_FALSE(r->best.config.recompute);
  // Never offered where it changes nothing.
  Workload flash = Gpt175b(AttentionKernel::kFlash);
  flash.parallel.recompute = "selective";
  EXPECT_FALSE(Search(flash, hw, l).ok());
  // A script that always checkpoints whole blocks is never told otherwise.
  w.parallel.recompute.clear();
  w.settings.activation_checkpointing = Checkpointing::kOn;
  auto on = Search(w, hw, l);
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->best.config.recompute);
  for (const Candidate& c : on->alternatives) EXPECT_FALSE(c.config.selective_recompute);
}

}  // namespace
}  // namespace xdeep::tuner
