// The memory-bound kernels the bandwidth probes time, shared by the CUDA probes
// (cuda/bandwidth_probe.cc) and the Kokkos ones (kokkos_kernels.h), so both count the
// same bytes for the same access pattern. All fp32, over rows x cols elements.
#ifndef XDEEP_PROFILER_BANDWIDTH_KERNELS_H_
#define XDEEP_PROFILER_BANDWIDTH_KERNELS_H_

#include <array>
#include <cstdint>
#include <string_view>

namespace xdeep::profiler {

struct BandwidthKernel {
  std::string_view name;
  int full_arrays;  // rows * cols arrays moved once per operation (the STREAM convention)
  int row_vectors;  // cols-long vectors read besides (weights, a bias)
};

// copy a = b; triad a = b + 3c; adam_update: PyTorch's fused AdamW element update
// (reads p, g, m, v; writes p, m, v); layer_norm y = normalise(x) * w + b per row;
// softmax in place per row; bias_gelu y = gelu_tanh(x + bias), a GEMM epilogue.
inline constexpr std::array<BandwidthKernel, 6> kBandwidthKernels = {{
    {"copy", 2, 0},
    {"triad", 3, 0},
    {"adam_update", 7, 0},
    {"layer_norm", 2, 2},
    {"softmax", 2, 0},
    {"bias_gelu", 2, 1},
}};

inline const BandwidthKernel* FindBandwidthKernel(std::string_view name) {
  for (const BandwidthKernel& k : kBandwidthKernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// The row kernels work per row; the others see rows x cols as one array.
inline bool IsRowKernel(std::string_view name) {
  return name == "layer_norm" || name == "softmax";
}

inline int64_t BandwidthBytes(const BandwidthKernel& k, int64_t rows, int64_t cols) {
  return (k.full_arrays * rows * cols + k.row_vectors * cols) * 4;
}

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_BANDWIDTH_KERNELS_H_
