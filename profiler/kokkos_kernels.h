// The memory-bound kernels of training as Kokkos kernels, behind a plain C++ interface.
//
// Only kokkos_kernels.cc includes Kokkos: with a device backend (CUDA, HIP) that one file
// goes through Kokkos' device compiler (nvcc_wrapper, hipcc), and the probes, absl and
// the rest of xdeep stay with the host compiler. The kernels are templated on Kokkos'
// execution space; `Space` picks the default host or the default (device) space.
#ifndef XDEEP_PROFILER_KOKKOS_KERNELS_H_
#define XDEEP_PROFILER_KOKKOS_KERNELS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/kokkos_row_launch.h"

namespace xdeep::profiler::kokkos {

// Owns Kokkos' initialisation for a process (Kokkos allows one per process); no argv,
// so Kokkos never parses xdeep's flags (its KOKKOS_* environment variables still apply).
// A device Kokkos fails to initialise where no GPU is visible: `error()` then says why
// and nothing Kokkos may run.
class Runtime {
 public:
  Runtime();
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};
bool Initialized();
// True when Kokkos' default execution space is not a host space (CUDA, HIP, SYCL).
bool HasDeviceSpace();
// "4.6.1 (Cuda)": version and default execution space.
std::string Version();

enum class Space { kHost, kDevice };

// Deterministic fill values in [0.5, 1.5), never zero (zeros would hide unwritten
// outputs); the data checks recompute them on the host.
inline float Pattern(int64_t i, int salt) {
  return 0.5f + static_cast<float>((i * 2654435761LL + salt * 97) % 1000) / 1000.0f;
}

// AdamW as PyTorch's fused kernel applies it (bias corrections folded into lr).
struct AdamHyper {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};
inline constexpr float kTriadScalar = 3.0f;
inline constexpr float kLayerNormEps = 1e-5f;

// The kernels of profiler/bandwidth_kernels.h (the row kernels work per row: a token's
// hidden vector, an attention score row). Buffers, by index:
//   copy        0 = 1
//   triad       0 = 1 + kTriadScalar * 2
//   adam_update 0 params, 1 grads, 2 exp_avg, 3 exp_avg_sq (0, 2, 3 updated)
//   layer_norm  0 = normalise(1) * 2 + 3 (2, 3: `cols` long weight and bias)
//   softmax     0 = softmax(0) along each row, in place
//   bias_gelu   0 = gelu_tanh(1 + 2) (2: `cols` long bias): a GEMM epilogue run apart
// Pointwise kernels need rows * cols divisible by 4 and row kernels cols divisible by 4:
// they move 16-byte packets, as tuned device kernels (and the CUDA probes) do.
class KernelSet {
 public:
  virtual ~KernelSet() = default;
  // Every buffer to its Pattern (salt = buffer index + 1), exp_avg_sq non-negative.
  virtual void Fill() = 0;
  // Queues one operation (asynchronous on a device).
  virtual void Launch() = 0;
  // Waits for every queued operation: the clock stops only after it.
  virtual void Fence() = 0;
  // Copies `count` elements of `buffer` from `begin` to the host (fences first).
  virtual std::vector<float> Read(int buffer, int64_t begin, int64_t count) = 0;
};

// Kernel names (profiler/bandwidth_kernels.h) in the order xdeep-probe runs them.
std::vector<std::string> KernelNames();
// Nullptr when `kernel` is unknown or `space` is kDevice without a device backend;
// `why` says which. The row kernels run in the forms `row_launch` names (the layer norm's
// `form`, the softmax's `softmax_form`), by default (and on the device) as
// DeviceRowLaunch() chooses, on a host in the grouped form.
std::unique_ptr<KernelSet> MakeKernelSet(const std::string& kernel, int64_t rows, int64_t cols,
                                         Space space, std::string* why,
                                         const RowLaunch* row_launch = nullptr);

// The properties of Kokkos' device (CUDA; zeros on other backends, which then keep the
// grouped form) and the row kernels' launch chosen from them.
DeviceProperties QueryDeviceProperties();
RowLaunch DeviceRowLaunch();

}  // namespace xdeep::profiler::kokkos

#endif  // XDEEP_PROFILER_KOKKOS_KERNELS_H_
