// GPU probe entry points for builds without CUDA/NCCL: report that plainly.
#include "profiler/gpu_probes.h"

namespace xdeep::profiler {
namespace {
absl::Status NoCuda() {
  return absl::UnimplementedError(
      "xdeep-probe was built without CUDA/NCCL (no nvcc or NCCL found)");
}
}  // namespace

bool BuiltWithCuda() { return false; }
int CudaDeviceCount() { return 0; }
absl::Status SelectDevice(int) { return NoCuda(); }
absl::StatusOr<GpuInfo> QueryGpu() { return NoCuda(); }
void AddGpuVersions(std::map<std::string, std::string>*) {}

std::vector<GemmEntry> RunGemmProbes(const GemmProbeOptions&, std::vector<ErrorEntry>* errors) {
  if (errors) errors->push_back({"cublaslt.gemm", std::string(NoCuda().message())});
  return {};
}

std::vector<GemmEntry> QueryGemmHeuristic(const GemmProbeOptions&,
                                          std::vector<ErrorEntry>* errors) {
  if (errors) errors->push_back({"cublaslt.heuristic", std::string(NoCuda().message())});
  return {};
}

std::vector<AttentionEntry> RunAttentionProbes(const AttentionProbeOptions&,
                                               std::vector<ErrorEntry>* errors) {
  if (errors) errors->push_back({"cublaslt.attention", std::string(NoCuda().message())});
  return {};
}

std::vector<BandwidthEntry> RunDeviceBandwidth(const DeviceBandwidthOptions&,
                                               std::vector<ErrorEntry>* errors) {
  if (errors) errors->push_back({"cuda.bandwidth", std::string(NoCuda().message())});
  return {};
}

absl::Status RunCollectives(const DistEnv&, const CollectiveOptions&, Report*) { return NoCuda(); }

}  // namespace xdeep::profiler
