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
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "profiler/cuda/kernels.h"
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

// Holds a stream while the host queues a timed batch (kernels.h, LaunchHold), so the
// batch's events time the device work alone. The host enqueue is not free: a
// non-blocking NCCL communicator starts a thread per collective (~50 us, NCCL's
// group.cc), and with the start event already passed that time sat inside every timed
// batch (probe 0.943 x torch at 64 MiB, H200 run 2). Close() queues the hold; Open()
// releases it; the destructor and Batch's end open it on every path.
class StreamGate {
 public:
  StreamGate() = default;
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  // The hold ends by itself after `timeout` even if never opened.
  // A batch's enqueue takes ~1 ms; the bound only keeps a stuck host from holding the
  // GPU long (the batch is then timed with part of its enqueue, counted in expired()).
  absl::Status Close(cudaStream_t stream, absl::Duration timeout = absl::Milliseconds(200));
  void Open();
  // Holds that may have ended by their timeout before Open (host clock).
  int expired() const { return expired_; }

 private:
  int* host_flag_ = nullptr;  // pinned, mapped: the kernel polls it
  int* device_flag_ = nullptr;
  bool closed_ = false;
  absl::Time closed_at_;
  absl::Duration timeout_;
  int expired_ = 0;
};

// Opens a gate when it leaves scope (error returns in the middle of a batch).
class GateOpener {
 public:
  explicit GateOpener(StreamGate* g) : g_(g) {}
  ~GateOpener() { g_->Open(); }

 private:
  StreamGate* g_;
};

// The element type the fill and check kernels use for a probe dtype.
inline ElemKind ElemKindFor(DType t) {
  switch (t) {
    case DType::kBf16:
      return ElemKind::kBf16;
    case DType::kFp16:
      return ElemKind::kFp16;
    default:
      return ElemKind::kFp32;
  }
}

}  // namespace xdeep::profiler::cuda

#endif  // XDEEP_PROFILER_CUDA_CUDA_UTIL_H_
