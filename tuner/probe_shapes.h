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

// Micro-batches worth probing for a workload: powers of two from 1 to its
// largest micro-batch (at most `cap`), thinned evenly in log scale so that no
// more than `max_layers` distinct GEMM layers are probed (xdeep-probe's compute
// set took 104 s for 205 layers on an H200, ~0.51 s a layer with the bandwidth
// probes, bench/profiler/data/2026-11-26_h200x1_run7: 56 keep it under 30 s).
// A GPT (5 distinct GEMMs per micro-batch) gets all of 1..32, ResNet-50 (21) two.
std::vector<int> ProbeMicroBatches(const Workload& w, int cap = 32, int max_layers = 56);

// One layer entry per distinct forward GEMM (tokens = m, in = k, out = n) of
// the workloads at the given micro-batches; xdeep-probe expands each into
// forward, dgrad and wgrad. The dtype follows the first workload's precision.
std::string GemmShapesJson(std::span<const Workload> workloads, std::span<const int> micro_batches);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_PROBE_SHAPES_H_
