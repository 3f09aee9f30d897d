// Probe sets as xdeep-probe runs them: the compute set (GEMMs, bandwidth) and the
// collective set, each producing one Report. main.cc only parses flags into these.
#ifndef XDEEP_PROFILER_SUITES_H_
#define XDEEP_PROFILER_SUITES_H_

#include <string>

#include "absl/status/statusor.h"
#include "profiler/bootstrap.h"
#include "profiler/gpu_probes.h"
#include "profiler/kokkos_probes.h"
#include "profiler/report.h"

namespace xdeep::profiler {

struct ComputeSuiteOptions {
  std::string suite = "cpu";  // cpu | gpu | all | memory | gemm-heuristic
  GemmProbeOptions gemm;
  AttentionProbeOptions attention;
  DeviceBandwidthOptions device_bandwidth;
  // On the host the STREAM-like three: the tuner models GPU training, and the row
  // kernels' exp / tanh make a CI core compute bound.
  KokkosBandwidthOptions host_bandwidth{.kernels = {"copy", "triad", "adam_update"}};
  // The Kokkos kernels on Kokkos' device space (a Kokkos built with CUDA or HIP).
  KokkosBandwidthOptions kokkos_device_bandwidth;
  // With cpu: run them too, an error when this Kokkos has no device space.
  bool kokkos_device = false;
};

// cpu: Kokkos host bandwidth. gpu: cuBLASLt GEMMs, attention, CUDA bandwidth, and the
// Kokkos kernels on the device where this Kokkos has one. all: both. memory: the device
// bandwidth kernels alone (CUDA where built, Kokkos where it has a device space), which
// is what a Kokkos-only site (HIP, no CUDA) can measure. gemm-heuristic: the kernel
// cuBLASLt's heuristic picks for each GEMM shape, nothing timed (report.gemm_algos).
// Probe failures become report.errors; only bad options fail the call.
absl::StatusOr<Report> RunComputeSuite(const ComputeSuiteOptions& options);

// Collectives on this rank; every rank returns the report, rank 0 writes it.
absl::StatusOr<Report> RunCollectiveSuite(const DistEnv& env, const CollectiveOptions& options);

// The default GEMM set when neither --gemm, --layer nor --shapes is given: a square
// 8192^3 GEMM (comparable with published figures) and the linear layers of a
// GPT-style block (hidden 4096, 8192 tokens).
std::vector<GemmSpec> DefaultGemms();
// Shapes that pin the tuner's GEMM model (tuner/gemm_model.h) where a
// workload's own layers leave it free: misaligned leading dimensions, small,
// tall and large layers. xdeep-probe runs them beside a shapes file's layers.
std::vector<GemmSpec> ModelAnchorGemms();
// With DefaultGemms: that block's causal attention (32 heads of 128, 4 x 2048 tokens).
std::vector<AttentionSpec> DefaultAttention();

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_SUITES_H_
