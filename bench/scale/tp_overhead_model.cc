// The tuner's figure for what bench/scale/tp_overhead.py measures: four GPT
// blocks of Narayanan et al.'s 18.4B shape (hidden 6144, 48 heads, MLP 4h,
// sequence 2048, FlashAttention, bf16 weights, eager kernels, Megatron-style
// tensor parallelism) forward and backward on one H100 whole and split tp 2,
// 4 and 8 over the GPUs of one node, per micro-batch, and each degree's
// overhead t(tp) / (t(tp1) / tp) - 1.
//
//   tp_overhead_model [--profile h100-sxm] [--terms]
#include <cstdio>
#include <string>

#include "tuner/hardware_profile.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

using namespace xdeep::tuner;

int main(int argc, char** argv) {
  std::string profile = "h100-sxm";
  bool with_terms = false;  // --terms: each degree's passes and TP collectives apart
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--profile" && i + 1 < argc) profile = argv[++i];
    if (std::string(argv[i]) == "--terms") with_terms = true;
  }
  auto hw = BuiltinHardwareProfile(profile);
  if (!hw.ok()) {
    std::fprintf(stderr, "tp_overhead_model: %s\n", std::string(hw.status().message()).c_str());
    return 2;
  }
  Workload w;
  w.name = "tp-overhead-blocks";
  TransformerShape& t = w.transformer;
  t.layers = 4;
  t.hidden = 6144;
  t.heads = t.kv_heads = 48;
  t.ffn = 4 * t.hidden;
  t.seq_len = 2048;
  t.vocab = 128;  // the script has no embedding or head: keep them negligible
  t.learned_positions = false;
  w.precision = Precision::kBf16Mixed;  // bf16 weights, no autocast casts
  w.settings.attention = AttentionKernel::kFlash;
  w.settings.tensor_parallel = TensorParallel::kMegatron;
  BuildTransformerLayers(w);
  StrategyModel model(w, *hw);
  std::printf("%s, 4 blocks of hidden 6144 (the model's per-micro-batch time)\n", profile.c_str());
  for (int mb : {1, 2, 4, 16}) {
    double ms[9] = {};
    double split[9][2] = {};  // passes as launched, TP collectives (StepTerms)
    for (int tp : {1, 2, 4, 8}) {
      Configuration c;
      c.gpus_per_node = tp;
      c.nodes = 1;
      c.tp = tp;
      c.micro_batch = mb;
      c.global_batch = mb;
      const std::string problem = StructuralProblem(w, c);
      if (!problem.empty()) {
        std::fprintf(stderr, "tp_overhead_model: %s\n", problem.c_str());
        return 2;
      }
      StepTerms terms;
      ms[tp - 1] = 1e3 * model.Time(c, &terms).per_micro_batch_s;
      split[tp - 1][0] = 1e3 * (terms.forward_s + terms.backward_s);
      split[tp - 1][1] = 1e3 * terms.tp_comm_s;
    }
    std::printf("mb %2d: tp1 %8.2f ms", mb, ms[0]);
    for (int tp : {2, 4, 8}) {
      std::printf("  tp%d %8.2f ms (%+6.1f %%)", tp, ms[tp - 1],
                  100 * (ms[tp - 1] / (ms[0] / tp) - 1));
    }
    std::printf("\n");
    if (with_terms) {
      std::printf("       passes / TP collectives (ms):");
      for (int tp : {1, 2, 4, 8}) {
        std::printf("  tp%d %.2f / %.2f", tp, split[tp - 1][0], split[tp - 1][1]);
      }
      std::printf("\n");
    }
  }
  return 0;
}
