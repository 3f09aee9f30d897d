// Context and sequence parallelism (context_parallel.h).
//
//  [LLAMA3] Dubey et al., "The Llama 3 Herd of Models", 2024, sec. 3.3.2:
//           context parallelism splits each sequence into 2 x cp chunks, rank
//           i taking chunks i and 2 cp - 1 - i for balanced causal attention;
//           keys and values are all-gathered (cheap under GQA), not passed in
//           a ring.
//  [ACT]    Korthikanti et al., "Reducing Activation Recomputation in Large
//           Transformer Models", 2022, sec. 4.2.2: sequence parallelism.
#include "tuner/context_parallel.h"

#include <algorithm>

namespace xdeep::tuner {

Workload PerRankWorkload(const Workload& w, int cp, bool sequence_parallel) {
  Workload d = w;
  if (cp > 1 && w.family == ModelFamily::kTransformer) {
    const TransformerShape& t = w.transformer;
    d.transformer.seq_len = std::max(1, t.seq_len / cp);
    BuildTransformerLayers(d);
    const int kv = t.kv_heads > 0 ? t.kv_heads : t.heads;
    const double kv_dim = double(t.hidden) / std::max(1, t.heads) * kv;
    for (LayerCost& l : d.layers) {
      if (l.attention_flops <= 0) continue;
      // [LLAMA3] the rank's queries (seq / cp) over every key (seq): cp times
      // what a sequence of seq / cp alone would take.
      l.fwd_flops += l.attention_flops * (cp - 1);
      l.attention_flops *= cp;
      l.cp_kv_bytes = double(t.seq_len) * 2 * kv_dim * ActivationBytes(w.precision);
    }
  }
  if (sequence_parallel) {
    for (LayerCost& l : d.layers) {
      if (l.tp_capable && l.tp_allreduces_fwd > 0) {
        l.tp_split_activation_bytes = l.saved_activation_bytes;
        l.memory_only_tp_split_bytes = l.memory_only_saved_bytes;
      }
    }
  }
  return d;
}

Configuration FoldContextParallel(const Configuration& c) {
  Configuration f = c;
  f.dp = c.dp * std::max(1, c.cp);
  f.cp = 1;
  return f;
}

}  // namespace xdeep::tuner
