// The GEMMs a workload runs, as the shapes file xdeep-probe measures
// (schema xdeep.gemm_shapes/1, profiler/README.md): the daemon hands it to the
// launch-time compute probe so the profile holds the exact shapes the model
// later looks up, and the validation harness (bench/validate) does the same.
#ifndef XDEEP_TUNER_PROBE_SHAPES_H_
#define XDEEP_TUNER_PROBE_SHAPES_H_

#include <span>
#include <string>
#include <vector>

#include "tuner/workload.h"

namespace xdeep::tuner {

// Micro-batches worth probing for a workload: powers of two up to its largest
// micro-batch, at most `cap`.
std::vector<int> ProbeMicroBatches(const Workload& w, int cap = 32);

// One layer entry per distinct forward GEMM (tokens = m, in = k, out = n) of
// the workloads at the given micro-batches; xdeep-probe expands each into
// forward, dgrad and wgrad. The dtype follows the first workload's precision.
std::string GemmShapesJson(std::span<const Workload> workloads, std::span<const int> micro_batches);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_PROBE_SHAPES_H_
