// Selective activation recomputation (Korthikanti et al., "Reducing
// Activation Recomputation in Large Transformer Models", 2022, sec. 5) as
// the strategy model sees it: the workload a rank runs when only the
// attention core is recomputed in backward.
#ifndef XDEEP_TUNER_SELECTIVE_RECOMPUTE_H_
#define XDEEP_TUNER_SELECTIVE_RECOMPUTE_H_

#include "tuner/workload.h"

namespace xdeep::tuner {

// w with each block's attention core (Q K^T, softmax, dropout, scores x V)
// recomputed: its materialised scores (LayerCost::attention_core_bytes) no
// longer saved for backward, the core's elementwise passes made once more in
// backward and its two batched GEMMs run forward again there
// (attention_core_recomputed). Where attention is a fused kernel the scores
// are never kept and w comes back unchanged: FlashAttention recomputes them
// already.
Workload WithSelectiveRecompute(const Workload& w);

// Whether selective recomputation changes anything for w (its attention
// materialises scores), so a search offers it as a separate choice.
bool SelectiveRecomputeMatters(const Workload& w);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_SELECTIVE_RECOMPUTE_H_
