// The GEMMs a workload runs, as the shapes file xdeep-probe measures
// (schema xdeep.gemm_shapes/1, profiler/README.md): the daemon hands it to the
// launch-time compute probe so the profile holds the exact shapes the model
// later looks up, and the validation harness (bench/validate) does the same.
#ifndef XDEEP_TUNER_PROBE_SHAPES_H_
#define XDEEP_TUNER_PROBE_SHAPES_H_

#include <span>
#include <string>
#include <vector>

#include "tuner/hardware_profile.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

// Micro-batches worth probing for a workload: powers of two from 1 to the
// largest the search considers (Workload::max_micro_batch), so that no GEMM
// time is extrapolated beyond what was measured; thinned evenly in log scale,
// both ends kept, so that no more than `max_layers` distinct GEMM layers are
// probed (xdeep-probe's compute set took 104 s for 205 layers on an H200,
// ~0.51 s a layer with the bandwidth probes, bench/profiler/data/
// 2026-11-26_h200x1_run7: 56 keep it under 30 s), but never fewer than three
// micro-batches. A micro-batch whose largest GEMM's operands exceed
// `max_operand_bytes` is not probed (the search then stops at twice the
// largest probed, SearchMicroBatchLimit). A GPT (5 distinct GEMMs per
// micro-batch) gets every power of two up to 2^10, ResNet-50 (21) three.
std::vector<int> ProbeMicroBatches(const Workload& w, int max_layers = 56,
                                   double max_operand_bytes = 8.0 * (1 << 30));

// The largest micro-batch at which the profile measured every distinct GEMM
// of the workload (tp = 1, in the dtype training runs them): 0 when it has
// none of them at any micro-batch (a built-in profile, or one probed for
// other shapes).
int LargestProbedMicroBatch(const Workload& w, const HardwareProfile& hw);

// One layer entry per distinct forward GEMM (tokens = m, in = k, out = n) of
// the workloads at the given micro-batches; xdeep-probe expands each into
// forward, dgrad and wgrad. The dtype follows the first workload's precision.
std::string GemmShapesJson(std::span<const Workload> workloads, std::span<const int> micro_batches);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_PROBE_SHAPES_H_
