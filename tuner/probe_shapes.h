// The GEMMs a workload runs, as the shapes file xdeep-probe measures
// (schema xdeep.gemm_shapes/1, profiler/README.md): the daemon hands it to the
// launch-time compute probe so the profile holds the exact shapes the model
// later looks up, and the validation harness (bench/validate) does the same.
#ifndef XDEEP_TUNER_PROBE_SHAPES_H_
#define XDEEP_TUNER_PROBE_SHAPES_H_

#include <cstdint>
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

// Tensor-parallel degrees the search may give a workload on nodes of
// `gpus_per_node` GPUs: 1, and every degree that divides a GPUs-per-node
// count the search tries (powers of two below the node size, the node size)
// and splits a transformer's heads, key-value heads and MLP, within the
// workload's own tp / max_tp.
std::vector<int> TensorParallelDegrees(const Workload& w, int gpus_per_node);

// Micro-batches whose GEMMs cuBLASLt's heuristic is asked about: every power
// of two the search may try (SearchMicroBatchLimit's rule): up to twice
// `largest_probed`, the largest micro-batch the profile times all the
// workload's GEMMs at, or up to Workload::max_micro_batch for a workload the
// profile never timed (0).
std::vector<int> HeuristicMicroBatches(const Workload& w, int largest_probed);

// Context-parallel degrees the search may give a workload (its rule: a
// transformer with a fused attention kernel, powers of two up to 64 that
// split the sequence into 2 x cp equal chunks of at least 2,048 tokens a
// rank, within the workload's cp / max_cp), 1 first unless it fixes cp.
std::vector<int> ContextParallelDegrees(const Workload& w);

// One GEMM the heuristic is asked about, as the model looks it up.
struct HeuristicGemm {
  int64_t m = 0, n = 0, k = 0;
  GemmLayout layout = GemmLayout::kForward;
  DType dtype = DType::kBf16;
  std::string label;  // workload.layer.mbN.tpT[.cpC]
};

// Every GEMM one rank of these workloads runs (RankGemmShape) at
// HeuristicMicroBatches x TensorParallelDegrees x ContextParallelDegrees
// (a context-parallel rank's GEMMs: PerRankWorkload's), each as forward,
// dgrad and wgrad at its workload's precision, each once, in a fixed order.
// `largest_probed[i]` is workload i's for HeuristicMicroBatches; a workload
// past its end counts as never timed.
std::vector<HeuristicGemm> HeuristicGemms(std::span<const Workload> workloads, int gpus_per_node,
                                          std::span<const int> largest_probed = {});

// `gemms` as an xdeep.gemm_shapes/1 "gemms" list: what `xdeep-probe compute
// --suite gemm-heuristic` asks cuBLASLt's heuristic about (nothing timed), so
// that the profile knows the kernel of every shape the model looks up
// (GemmKernelTable). Empty when there are none.
std::string HeuristicGemmsJson(const std::vector<HeuristicGemm>& gemms);

// HeuristicGemmsJson(HeuristicGemms(workloads, gpus_per_node, largest_probed)).
std::string GemmHeuristicShapesJson(std::span<const Workload> workloads, int gpus_per_node,
                                    std::span<const int> largest_probed = {});

// A hash of a shape list (order included; HeuristicGemms' is fixed): names a
// workload's shape set where a daemon deduplicates its heuristic-only jobs.
uint64_t ShapeSetFingerprint(const std::vector<HeuristicGemm>& gemms);

// GemmHeuristicShapesJson of these workloads, as timed by the same job (up to
// ProbeMicroBatches' largest), and, so that later workloads on the partition
// find kernels too, the built-in presets (PresetWorkloadNames) at their
// defaults, never timed there (up to their max_micro_batch): what the
// daemon's probe job asks the heuristic about.
std::string HeuristicShapesWithPresets(std::span<const Workload> workloads, int gpus_per_node);

// What one compute probe job measures (xdeep.gemm_shapes/1 files; empty: none).
struct ProbeShapeFiles {
  std::string timed;      // the workload's GEMMs to time (GemmShapesJson); empty: the defaults
  std::string heuristic;  // the GEMMs whose kernel the heuristic names (GemmHeuristicShapesJson)
};

// The daemon's compute probe for a node of `gpus_per_node` GPUs: the
// workload's own GEMMs timed up to the search's largest micro-batch, and the
// heuristic asked about every GEMM the search may consider, the workload's and
// the presets' (HeuristicShapesWithPresets). Without a workload (an admin's
// probe of a partition), the probe's default GEMMs are timed and the heuristic
// is asked about the presets' GEMMs alone.
ProbeShapeFiles ProbeShapesFor(const Workload* workload, int gpus_per_node);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_PROBE_SHAPES_H_
