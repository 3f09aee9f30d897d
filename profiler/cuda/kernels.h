// Plain launchers for the probes' CUDA kernels (fill, copy, triad, Adam update, layer norm,
// bias + GeLU, softmax).
//
// Only this header's .cu implementation goes through nvcc; the probes that call it are
// ordinary C++ (absl included), which keeps absl's headers away from nvcc's front end.
#ifndef XDEEP_PROFILER_CUDA_KERNELS_H_
#define XDEEP_PROFILER_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace xdeep::profiler::cuda {

enum class ElemKind : int { kBf16 = 0, kFp16 = 1, kFp32 = 2 };

// Pseudo-random values in +-[0.1, 1): never zero, hashed from (seed, index).
cudaError_t LaunchFillRandom(void* p, int64_t n, ElemKind kind, uint64_t seed, cudaStream_t s);
// p[i] = (rank + 1) + (i % 7): small integers, exact in bf16 sums of a few ranks, so
// collective results check exactly.
cudaError_t LaunchFillPattern(void* p, int64_t n, ElemKind kind, int rank, cudaStream_t s);
cudaError_t LaunchFillConstant(float* p, int64_t n, float value, cudaStream_t s);

cudaError_t LaunchCopy(float* dst, const float* src, int64_t n, cudaStream_t s);
cudaError_t LaunchTriad(float* a, const float* b, const float* c, float scalar, int64_t n,
                        cudaStream_t s);

struct AdamHyper {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
};
// PyTorch's fused AdamW element update, fp32 state: reads p, g, m, v; writes p, m, v.
cudaError_t LaunchAdam(float* p, const float* g, float* m, float* v, int64_t n, AdamHyper h,
                       cudaStream_t s);

// fp32 layer norm of `rows` rows of `cols` (a multiple of 4): mean, variance about it,
// then y = (x - mean) / sqrt(var + eps) * gamma + beta; one block per row.
cudaError_t LaunchLayerNormRows(float* y, const float* x, const float* gamma, const float* beta,
                                int64_t rows, int64_t cols, float eps, cudaStream_t s);
// y = gelu_tanh(x + bias[i % cols]) over n elements (n and cols multiples of 4): the
// bias + GeLU epilogue of an MLP's first GEMM, run as its own kernel.
cudaError_t LaunchBiasGelu(float* y, const float* x, const float* bias, int64_t n, int64_t cols,
                           cudaStream_t s);

// Row softmax in place over `rows` rows of length `cols` (bf16 or fp16 storage, fp32
// arithmetic), scaling by `scale` first; with `causal`, row r keeps columns
// 0..(r % cols) and writes zero elsewhere (the rows of one head are consecutive).
cudaError_t LaunchSoftmaxRows(void* p, int64_t rows, int64_t cols, ElemKind kind, float scale,
                              bool causal, cudaStream_t s);

// fp32 row softmax in place for rows of at most kSoftmaxResidentMaxCols (a multiple of
// 4), each row read once into registers of one block of `threads` (256 or 128; 4 or 8
// packets each): the twin of the Kokkos probe's resident softmax form. cudaErrorInvalidValue
// for other rows or block sizes.
inline constexpr int64_t kSoftmaxResidentMaxCols = 4096;
cudaError_t LaunchSoftmaxRowsResident(float* p, int64_t rows, int64_t cols, float scale,
                                      int threads, cudaStream_t s);

// Holds the stream until the host writes a non-zero value to `flag` (host memory mapped
// into the device), or `timeout_ns` of the GPU's global timer have passed, so a
// forgotten release delays the stream and never hangs it. Launched before a timed
// batch: the start event then fires only once the whole batch is queued, and the timing
// holds the batch's device time, not the host's enqueue cost (nvbench's blocking
// kernel).
cudaError_t LaunchHold(const volatile int* flag, uint64_t timeout_ns, cudaStream_t s);

}  // namespace xdeep::profiler::cuda

#endif  // XDEEP_PROFILER_CUDA_KERNELS_H_
