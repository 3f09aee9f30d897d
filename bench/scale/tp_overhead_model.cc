// The tuner's figure for what bench/scale/tp_overhead.py measures: four GPT
// blocks of Narayanan et al.'s 18.4B shape (hidden 6144, 48 heads, MLP 4h,
// sequence 2048, FlashAttention, bf16 weights, eager kernels, Megatron-style
// tensor parallelism) forward and backward on one H100 whole and split tp 2,
// 4 and 8 over the GPUs of one node, per micro-batch, and each degree's
// overhead t(tp) / (t(tp1) / tp) - 1.
//
//   tp_overhead_model [--profile h100-sxm] [--terms] [--interleave] [--send-recv BYTES]
//                     [--reduce-scatter BYTES --backward S --bucket BYTES]
//
// --send-recv: what the profile charges one send / receive of BYTES between
// two GPUs of a node (a pipeline exchange; bench/scale/p2p_exchange_check.py).
// --reduce-scatter: what it charges a reduce-scatter of BYTES over two GPUs of
// a node, its last bucket of BYTES, and what of it the ZeRO-2 rule leaves
// after a backward of S seconds (ExposedReduction, bucket order): the three
// figures bench/scale/zero2_reduce_frequency.py --model prints.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tuner/grad_sync_overlap.h"
#include "tuner/hardware_profile.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

using namespace xdeep::tuner;

int main(int argc, char** argv) {
  std::string profile = "h100-sxm";
  bool interleave = false;  // --interleave: interleave_vs_tp.py's modes
  bool with_terms = false;  // --terms: each degree's passes and TP collectives apart
  double send_recv_bytes = 0;
  double rs_bytes = 0, backward_s = 0, bucket_bytes = 25.0 * 1024 * 1024;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--profile" && i + 1 < argc) profile = argv[++i];
    if (std::string(argv[i]) == "--terms") with_terms = true;
    if (std::string(argv[i]) == "--interleave") interleave = true;
    if (std::string(argv[i]) == "--send-recv" && i + 1 < argc) send_recv_bytes = std::atof(argv[++i]);
    if (std::string(argv[i]) == "--reduce-scatter" && i + 1 < argc) rs_bytes = std::atof(argv[++i]);
    if (std::string(argv[i]) == "--backward" && i + 1 < argc) backward_s = std::atof(argv[++i]);
    if (std::string(argv[i]) == "--bucket" && i + 1 < argc) bucket_bytes = std::atof(argv[++i]);
  }
  auto hw = BuiltinHardwareProfile(profile);
  if (!hw.ok()) {
    std::fprintf(stderr, "tp_overhead_model: %s\n", std::string(hw.status().message()).c_str());
    return 2;
  }
  if (send_recv_bytes > 0) {
    std::printf("%.9g\n", CollectiveTime(*hw, CollectiveOp::kSendRecv, send_recv_bytes, 2, 2));
    return 0;
  }
  if (rs_bytes > 0) {
    ReductionBesideBackward r;
    r.whole_s = CollectiveTime(*hw, CollectiveOp::kReduceScatter, rs_bytes, 2, 2);
    r.last_s = CollectiveTime(*hw, CollectiveOp::kReduceScatter, std::min(rs_bytes, bucket_bytes), 2, 2);
    r.backward_s = backward_s;
    std::printf("%.9g %.9g %.9g\n", r.whole_s, r.last_s, ExposedReduction(r));
    return 0;
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
  if (interleave) {
    // bench/scale/interleave_vs_tp.py's modes: 8 blocks of the 22B shape (64
    // heads), 4 micro-batches of 1, full recomputation, on two GPUs: tp 2, or
    // two stages of torch.distributed.pipelining at v 1, 2, 4. The step less
    // the optimizer (the script runs none).
    Workload g = w;
    g.name = "interleave-vs-tp-blocks";
    g.transformer.layers = 8;
    g.transformer.heads = g.transformer.kv_heads = 64;
    g.settings.pipeline_parallel = PipelineParallel::kTorch;
    BuildTransformerLayers(g);
    StrategyModel gm(g, *hw);
    std::printf("%s, 8 blocks of hidden 6144, 4 micro-batches of 1, full recomputation, 2 GPUs\n",
                profile.c_str());
    double tp_s = 0;
    for (int v : {0, 1, 2, 4}) {
      const std::string mode = v == 0 ? "tp" : "pp-v" + std::to_string(v);
      Configuration c;
      c.gpus_per_node = 2;
      c.nodes = 1;
      c.tp = v == 0 ? 2 : 1;
      c.pp = v == 0 ? 1 : 2;
      c.micro_batch = 1;
      c.global_batch = 4;
      c.grad_accum = 4;
      c.recompute = true;
      if (v > 1) {
        c.schedule = PipelineSchedule::kInterleaved;
        c.virtual_stages = v;
      }
      const std::string problem = StructuralProblem(g, c);
      if (!problem.empty()) {
        std::printf("  %s: %s\n", mode.c_str(), problem.c_str());
        continue;
      }
      StepTerms t;
      const StepTime st = gm.Time(c, &t);
      const double step = st.total_s - st.optimizer_s;
      if (v == 0) tp_s = step;
      std::printf(
          "  %-6s step %8.1f ms (/ tp %.3f): micro-batch %.1f ms (passes %.1f, recompute %.1f, "
          "TP %.1f, PP %.1f), bubble %.1f ms\n",
          mode.c_str(), 1e3 * step,
          tp_s > 0 ? step / tp_s : 0, 1e3 * st.per_micro_batch_s,
          1e3 * (t.forward_s + t.backward_s), 1e3 * t.recompute_s, 1e3 * t.tp_comm_s,
          1e3 * t.pp_comm_s, 1e3 * st.bubble_s);
    }
    return 0;
  }
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
