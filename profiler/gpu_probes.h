// GPU probes: cuBLASLt GEMMs, CUDA bandwidth kernels, NCCL collectives.
//
// Implemented in cuda/ and nccl/ where the build found CUDA and NCCL; otherwise
// gpu_probes_unavailable.cc answers Unimplemented, so callers need no #ifdefs.
#ifndef XDEEP_PROFILER_GPU_PROBES_H_
#define XDEEP_PROFILER_GPU_PROBES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "profiler/bootstrap.h"
#include "profiler/collective_math.h"
#include "profiler/dtype.h"
#include "profiler/harness.h"
#include "profiler/report.h"
#include "profiler/shapes.h"

namespace xdeep::profiler {

// True when this build has the CUDA probes (not whether a GPU is present).
bool BuiltWithCuda();
// Visible CUDA devices; 0 when there is no driver or device (never an error).
int CudaDeviceCount();
// Binds this process to a device (local_rank modulo the visible count).
absl::Status SelectDevice(int local_rank);
absl::StatusOr<GpuInfo> QueryGpu();
// cuda_runtime, driver, cublaslt, nccl.
void AddGpuVersions(std::map<std::string, std::string>* versions);

struct GemmProbeOptions {
  std::vector<GemmSpec> gemms;
  std::vector<DType> dtypes = {DType::kBf16};
  HarnessOptions harness;
  int64_t workspace_bytes = int64_t{32} << 20;
  // 1: the heuristic's first algorithm, the kernel cuBLAS (and so torch.matmul) runs,
  // which is what training sees. N > 1 times the first N in interleaved rounds and
  // keeps one only if clearly faster (the best kernel this cuBLASLt has, not cuBLAS's).
  int algo_candidates = 1;
  // Idle before each GEMM's warm-up, so every shape starts from the same power state
  // (0: back to back, as training runs them). For like-for-like baselines.
  absl::Duration settle = absl::ZeroDuration();
  // Back-to-back GEMMs before the timing: an idle H100/H200 clocks down, and a GEMM
  // at the power limit settles its clocks within some 100 ms.
  absl::Duration warm_up = absl::Milliseconds(60);
  // Share of the time the GPU runs GEMMs while they are timed: each batch waits behind
  // its hold until the idle since the last one is (1 / duty - 1) of that one's time.
  // Back to back (1.0), a GEMM at the power limit clocks down further than in
  // training, where GEMMs take about 60 % of a step between memory-bound kernels
  // (GPT-125M to 1.3B on H200, bench/validate); 16384x3072x768 bf16 ran 8 % slower
  // back to back than torch.matmul, whose timing idled ~20 % (profiler run 7).
  double duty = 0.8;
  // No GEMM starts after this: a run that would pass its time limit keeps the GEMMs
  // it timed and names the ones it skipped, instead of losing all to the watchdog.
  absl::Time stop_starting = absl::InfiniteFuture();
};
std::vector<GemmEntry> RunGemmProbes(const GemmProbeOptions& options,
                                     std::vector<ErrorEntry>* errors);
// The kernel cuBLASLt's heuristic picks for each of the options' GEMMs (at its
// workspace), nothing run or timed: cheap enough for thousands of shapes, so a
// model can know the tile grid of shapes no probe timed.
std::vector<GemmEntry> QueryGemmHeuristic(const GemmProbeOptions& options,
                                          std::vector<ErrorEntry>* errors);

struct AttentionProbeOptions {
  std::vector<AttentionSpec> shapes;
  std::vector<DType> dtypes = {DType::kBf16};  // bf16 and fp16 only
  HarnessOptions harness;
  int64_t workspace_bytes = int64_t{32} << 20;
};
// Unfused ("math") attention forward: batched Q.K^T and P.V through cuBLASLt with a
// row-softmax kernel between them, the way PyTorch's math SDPA backend computes it.
// A fused flash kernel is faster; this figure is the floor a fused kernel improves on.
std::vector<AttentionEntry> RunAttentionProbes(const AttentionProbeOptions& options,
                                               std::vector<ErrorEntry>* errors);

struct DeviceBandwidthOptions {
  int64_t elements = int64_t{1} << 28;  // fp32 per array: 1 GiB, far beyond L2
  // Row length of layer_norm, softmax and bias_gelu (profiler/bandwidth_kernels.h).
  int64_t row_length = 4096;
  std::vector<std::string> kernels = {"copy",       "triad",   "adam_update",
                                      "layer_norm", "softmax", "bias_gelu"};
  HarnessOptions harness;
};
std::vector<BandwidthEntry> RunDeviceBandwidth(const DeviceBandwidthOptions& options,
                                               std::vector<ErrorEntry>* errors);

struct CollectiveOptions {
  std::vector<CollectiveOp> ops = AllCollectiveOps();
  int64_t min_bytes = 1024;
  int64_t max_bytes = int64_t{1} << 30;
  int factor = 4;
  DType dtype = DType::kFp32;
  absl::Duration init_timeout = absl::Seconds(60);
  // Per (operation, size): warm-up, samples and the wait for each batch.
  absl::Duration op_time_limit = absl::Seconds(20);
  int warmup = 5;
  int samples = 10;
};
// Initialises NCCL (non-blocking), sweeps ops x sizes, appends to report->collectives.
// Any NCCL error, a timeout or a dead peer aborts the communicator (ncclCommAbort) and
// returns the error; entries measured before it stay in the report.
absl::Status RunCollectives(const DistEnv& env, const CollectiveOptions& options, Report* report);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_GPU_PROBES_H_
