// Context and sequence parallelism in the strategy model and the search.
#include "tuner/context_parallel.h"

#include "gtest/gtest.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

// Llama-7B's shape with grouped-query attention (8 key-value heads, as
// Llama 3): context parallelism gathers keys and values, cheap only under GQA.
Workload LongLlama(int seq) {
  Workload w = *PresetWorkload("llama-7b");
  w.transformer.seq_len = seq;
  w.transformer.kv_heads = 8;
  w.settings.attention = AttentionKernel::kFlash;
  // Long-sequence runs with context parallelism use Megatron-style layers
  // (megatron-core, as Llama 3), not DTensor's per-Linear host dispatch.
  w.settings.tensor_parallel = TensorParallel::kMegatron;
  BuildTransformerLayers(w);
  w.reference_global_batch = w.min_global_batch = w.max_global_batch = 16;
  w.samples = 1e9 / seq;
  return w;
}

Configuration Layout(int nodes, int dp, int tp, int cp, bool sp = false) {
  Configuration c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.dp = dp;
  c.tp = tp;
  c.cp = cp;
  c.sequence_parallel = sp;
  c.micro_batch = 1;
  c.global_batch = 16;
  c.grad_accum = 16 / dp;
  return c;
}

TEST(ContextParallelTest, PerRankWorkloadKeepsAttentionWorkAndSplitsTokens) {
  const Workload w = LongLlama(32768);
  const Workload r = PerRankWorkload(w, 4, false);
  EXPECT_EQ(r.transformer.seq_len, 8192);
  // Attention per rank: a quarter of the whole sequence's.
  EXPECT_NEAR(r.layers[1].attention_flops, w.layers[1].attention_flops / 4,
              1e-6 * w.layers[1].attention_flops);
  // GEMM rows a quarter, activations a quarter.
  EXPECT_DOUBLE_EQ(r.layers[1].gemms[0].m_per_sample, w.layers[1].gemms[0].m_per_sample / 4);
  EXPECT_NEAR(r.layers[1].saved_activation_bytes, w.layers[1].saved_activation_bytes / 4, 1);
  EXPECT_GT(r.layers[1].cp_kv_bytes, 0);
}

TEST(ContextParallelTest, SplittingTheSequenceCutsActivationsAndAddsGathers) {
  const Workload w = LongLlama(32768);
  const HardwareProfile hw = *BuiltinHardwareProfile("h100-sxm");
  StrategyModel m(w, hw);
  // Same GPUs (16): tp8 x dp2 against tp8 x cp2.
  const Configuration dp2 = Layout(2, 2, 8, 1);
  const Configuration cp2 = Layout(2, 1, 8, 2);
  ASSERT_EQ(StructuralProblem(w, cp2), "");
  EXPECT_LT(m.Memory(cp2).activations, 0.6 * m.Memory(dp2).activations);
  // Each rank does half the tokens per micro-batch but twice the micro-batches.
  const StepTime t_dp = m.Time(dp2), t_cp = m.Time(cp2);
  EXPECT_GT(t_cp.total_s, 0.9 * t_dp.total_s);
  EXPECT_LT(t_cp.total_s, 1.5 * t_dp.total_s);
}

TEST(ContextParallelTest, SequenceParallelSavesMemoryAndNeverCostsTime) {
  const Workload w = LongLlama(4096);
  const HardwareProfile hw = *BuiltinHardwareProfile("h100-sxm");
  StrategyModel m(w, hw);
  const Configuration plain = Layout(1, 2, 4, 1, false);
  const Configuration sp = Layout(1, 2, 4, 1, true);
  EXPECT_LT(m.Memory(sp).activations, 0.8 * m.Memory(plain).activations);
  EXPECT_LE(m.Time(sp).total_s, m.Time(plain).total_s);
  EXPECT_EQ(StrategyName(sp), "dp2xtp4sp");
  EXPECT_NE(StructuralProblem(w, Layout(1, 8, 1, 1, true)), "");
}

TEST(ContextParallelTest, StructureRejectsBadDegrees) {
  const Workload w = LongLlama(6002);
  EXPECT_NE(StructuralProblem(w, Layout(2, 1, 8, 2)).find("2 x cp"), std::string::npos);
  Workload math = LongLlama(8192);
  math.settings.attention = AttentionKernel::kMath;
  BuildTransformerLayers(math);
  EXPECT_NE(StructuralProblem(math, Layout(2, 1, 8, 2)).find("fused attention"), std::string::npos);
  EXPECT_NE(StructuralProblem(w, Layout(2, 2, 8, 2)).find("dp x tp x pp x cp"), std::string::npos);
}

TEST(ContextParallelTest, SearchUsesContextParallelForLongSequencesOnlyWhereAllowed) {
  Workload w = LongLlama(131072);
  const HardwareProfile hw = *BuiltinHardwareProfile("h100-sxm");
  SearchLimits limits;
  limits.max_nodes = 4;
  limits.objective = Objective::kTime;
  w.reference_global_batch = w.min_global_batch = w.max_global_batch = 4;
  auto best = Search(w, hw, limits);
  ASSERT_TRUE(best.ok()) << best.status();
  // 131072 tokens of a 7B model do not fit one GPU's activations without it.
  EXPECT_GT(best->best.config.cp, 1) << StrategyName(best->best.config);
  EXPECT_EQ(StructuralProblem(w, best->best.config), "");
  // The workload's [parallel] table can forbid it: then no cp.
  w.parallel.max_cp = 1;
  auto without = Search(w, hw, limits);
  if (without.ok()) {
    EXPECT_EQ(without->best.config.cp, 1);
  }
  // Short sequences never use it.
  Workload short_seq = LongLlama(2048);
  auto s = Search(short_seq, hw, limits);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->best.config.cp, 1);
  for (const Candidate& c : s->alternatives) EXPECT_EQ(c.config.cp, 1);
}

}  // namespace
}  // namespace xdeep::tuner
