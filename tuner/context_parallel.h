// Context and sequence parallelism as the strategy model sees them: one
// rank's share of the workload, and the configuration with the context-
// parallel ranks folded into data parallelism for what they share with it
// (replicated weights, gradient reduction, optimizer sharding).
#ifndef XDEEP_TUNER_CONTEXT_PARALLEL_H_
#define XDEEP_TUNER_CONTEXT_PARALLEL_H_

#include "tuner/configuration.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

// The workload one rank runs: with cp > 1 a sequence of seq_len / cp tokens
// whose queries attend over the whole sequence (attention work per rank is
// the whole's / cp, balanced by Megatron-Core's and Llama 3's two-chunk
// split), its blocks gathering every rank's keys and values (cp_kv_bytes);
// with `sequence_parallel` every activation of a block split over the
// tensor-parallel group (Korthikanti et al. 2022, sec. 4.2.2: the norms'
// and dropouts' inputs too), the tensor-parallel traffic unchanged (an
// all-gather plus a reduce-scatter move what one all-reduce does).
Workload PerRankWorkload(const Workload& w, int cp, bool sequence_parallel);

// c with dp x cp data-parallel ranks and cp 1: weights are replicated over
// the context-parallel ranks, gradients reduced and optimizer state sharded
// over dp x cp (Megatron-Core's distributed optimizer), and the rank order
// (tp, cp, pp, dp) makes that group's ranks per node min(dp x cp, GPUs per
// node / tp), as DpRanksPerNode computes for it.
Configuration FoldContextParallel(const Configuration& c);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_CONTEXT_PARALLEL_H_
