// The GEMM one rank runs for a layer's matrix product at a micro-batch and a
// tensor-parallel split: what the step-time model times (StrategyModel) and
// what the daemon's probe asks cuBLASLt's heuristic about (probe_shapes.h), in
// one place so that the two name the same shapes and the heuristic's kernels
// are found where the model looks them up.
#ifndef XDEEP_TUNER_GEMM_RANK_SHAPE_H_
#define XDEEP_TUNER_GEMM_RANK_SHAPE_H_

#include <cmath>
#include <cstddef>

#include "tuner/workload.h"

namespace xdeep::tuner {

// Forward shape; dgrad runs (m, k, n) and wgrad (n, k, m), as xdeep-probe
// measures a layer (profiler/shapes.h LayerGemms).
struct RankGemm {
  double m = 0, n = 0, k = 0;
  bool split_m = false;  // attention's batched GEMMs over heads: tp ranks take heads / tp each
};

// gemms[g] of `l` at micro-batch `mb`, split `t` ways (TpWays). A rank holds
// ceil(n / t) columns (rows) where t does not divide them (a 50257-word
// head), misaligned as they are.
inline RankGemm RankGemmShape(const LayerCost& l, size_t g, int mb, int t) {
  const GemmShape& s = l.gemms[g];
  RankGemm r;
  r.split_m = g < l.tp_split_m.size() && l.tp_split_m[g];
  const bool split_n = !r.split_m && g < l.tp_split_n.size() && l.tp_split_n[g];
  r.m = s.m_per_sample * mb / (r.split_m ? t : 1);
  r.n = split_n ? std::ceil(double(s.n) / t) : double(s.n);
  r.k = split_n || r.split_m ? double(s.k) : std::ceil(double(s.k) / t);
  return r;
}

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_GEMM_RANK_SHAPE_H_
