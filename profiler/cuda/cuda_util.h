// CUDA helpers shared by the GPU probes: Status from CUDA errors, bounded event waits,
// host-side bf16/fp16 decoding for the data checks.
#ifndef XDEEP_PROFILER_CUDA_CUDA_UTIL_H_
#define XDEEP_PROFILER_CUDA_CUDA_UTIL_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "profiler/deadline.h"
#include "profiler/dtype.h"

namespace xdeep::profiler::cuda {

absl::Status CudaStatus(cudaError_t e, const char* what);

#define XDEEP_CUDA_RETURN(expr)                                                                    \
  do {                                                                                             \
    if (absl::Status _s = ::xdeep::profiler::cuda::CudaStatus((expr), #expr); !_s.ok()) return _s; \
  } while (0)

// Waits for `event` by polling, so a hung kernel or collective turns into
// DeadlineExceeded instead of blocking forever in cudaEventSynchronize. `poll` (may be
// empty) runs between queries, e.g. to see NCCL's asynchronous errors.
absl::Status WaitEvent(cudaEvent_t event, const Deadline& deadline,
                       const std::function<absl::Status()>& poll);

float Bf16BitsToFloat(uint16_t bits);
float Fp16BitsToFloat(uint16_t bits);
// Decodes element i of a host copy of device data stored as `t`.
double LoadAsDouble(const void* host, int64_t i, DType t);

// RAII device buffer.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Free(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  absl::Status Allocate(size_t bytes);
  void Free();
  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace xdeep::profiler::cuda

#endif  // XDEEP_PROFILER_CUDA_CUDA_UTIL_H_
