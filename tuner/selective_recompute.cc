// Selective recomputation (selective_recompute.h).
//
//  [ACT] Korthikanti et al. 2022, sec. 5 and Table 2: the attention core's
//        activations (5 a s / h bytes per token and layer, against 34 for
//        the rest) are recomputed for 2.7 % more FLOPs (GPT-3 175B), since
//        the core's FLOPs grow with s^2 h while the block's grow with s h^2.
#include "tuner/selective_recompute.h"

namespace xdeep::tuner {

Workload WithSelectiveRecompute(const Workload& w) {
  Workload d = w;
  for (LayerCost& l : d.layers) {
    const double core = l.attention_core_bytes;
    if (core <= 0) continue;
    l.saved_activation_bytes -= core;
    l.tp_split_activation_bytes -= core;
    // ElementwiseBytes counts 4x / 8x of a saved activation's size for its
    // kernels' traffic forward / backward; the scores are no longer saved but
    // their softmax still runs, and runs once more in backward.
    l.extra_traffic_fwd_bytes += 4 * core;
    l.extra_traffic_bwd_bytes += (8 + 4) * core;
    l.attention_core_recomputed = true;
  }
  return d;
}

bool SelectiveRecomputeMatters(const Workload& w) {
  for (const LayerCost& l : w.layers) {
    if (l.attention_core_bytes > 0) return true;
  }
  return false;
}

}  // namespace xdeep::tuner
