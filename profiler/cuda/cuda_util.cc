// CUDA helpers shared by the GPU probes, and device discovery.
#include "profiler/cuda/cuda_util.h"

#include <cublasLt.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "profiler/cuda/kernels.h"
#include "profiler/gpu_probes.h"

namespace xdeep::profiler {
namespace cuda {

absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
}

absl::Status WaitEvent(cudaEvent_t event, const Deadline& deadline,
                       const std::function<absl::Status()>& poll) {
  int spins = 0;
  while (true) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return absl::OkStatus();
    if (e != cudaErrorNotReady) return CudaStatus(e, "cudaEventQuery");
    if (poll) {
      if (absl::Status s = poll(); !s.ok()) return s;
    }
    if (deadline.Expired())
      return absl::DeadlineExceededError("device work did not finish within the time limit");
    // Spin briefly first (short operations), then sleep so a long wait costs no CPU.
    if (++spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

float Bf16BitsToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

float Fp16BitsToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      u = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

double LoadAsDouble(const void* host, int64_t i, DType t) {
  switch (t) {
    case DType::kBf16:
      return Bf16BitsToFloat(static_cast<const uint16_t*>(host)[i]);
    case DType::kFp16:
      return Fp16BitsToFloat(static_cast<const uint16_t*>(host)[i]);
    case DType::kTf32:
    case DType::kFp32:
      return static_cast<const float*>(host)[i];
  }
  return 0;
}

absl::Status DeviceBuffer::Allocate(size_t bytes) {
  Free();
  XDEEP_CUDA_RETURN(cudaMalloc(&ptr_, bytes));
  bytes_ = bytes;
  return absl::OkStatus();
}

void DeviceBuffer::Free() {
  if (ptr_ != nullptr) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

StreamGate::~StreamGate() {
  if (host_flag_ != nullptr) {
    Open();
    cudaFreeHost(host_flag_);  // after the open: the hold kernel ends first
  }
}

absl::Status StreamGate::Close(cudaStream_t stream, absl::Duration timeout) {
  if (host_flag_ == nullptr) {
    void* p = nullptr;
    XDEEP_CUDA_RETURN(cudaHostAlloc(&p, sizeof(int), cudaHostAllocMapped));
    host_flag_ = static_cast<int*>(p);
    void* d = nullptr;
    XDEEP_CUDA_RETURN(cudaHostGetDevicePointer(&d, p, 0));
    device_flag_ = static_cast<int*>(d);
  }
  __atomic_store_n(host_flag_, 0, __ATOMIC_SEQ_CST);
  closed_ = true;
  closed_at_ = absl::Now();
  timeout_ = timeout;
  XDEEP_CUDA_RETURN(
      LaunchHold(device_flag_, static_cast<uint64_t>(absl::ToInt64Nanoseconds(timeout)), stream));
  return absl::OkStatus();
}

void StreamGate::Open() {
  if (host_flag_ != nullptr) __atomic_store_n(host_flag_, 1, __ATOMIC_SEQ_CST);
  if (closed_ && absl::Now() - closed_at_ >= timeout_) ++expired_;
  closed_ = false;
}

}  // namespace cuda

bool BuiltWithCuda() { return true; }

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

absl::Status SelectDevice(int local_rank) {
  const int n = CudaDeviceCount();
  if (n == 0) return absl::FailedPreconditionError("no CUDA device visible");
  XDEEP_CUDA_RETURN(cudaSetDevice(local_rank % n));
  return absl::OkStatus();
}

absl::StatusOr<GpuInfo> QueryGpu() {
  int dev = 0;
  XDEEP_CUDA_RETURN(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  XDEEP_CUDA_RETURN(cudaGetDeviceProperties(&p, dev));
  GpuInfo g;
  g.name = p.name;
  g.count = CudaDeviceCount();
  g.memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  g.sm_count = p.multiProcessorCount;
  g.compute_capability = absl::StrCat(p.major, ".", p.minor);
  return g;
}

void AddGpuVersions(std::map<std::string, std::string>* v) {
  int rt = 0, drv = 0, nccl = 0;
  auto fmt = [](int x) { return absl::StrCat(x / 1000, ".", (x % 1000) / 10); };
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) (*v)["cuda_runtime"] = fmt(rt);
  if (cudaDriverGetVersion(&drv) == cudaSuccess) (*v)["cuda_driver_api"] = fmt(drv);
  const size_t lt = cublasLtGetVersion();
  (*v)["cublaslt"] = absl::StrCat(lt / 10000, ".", (lt / 100) % 100, ".", lt % 100);
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    (*v)["nccl"] = absl::StrCat(nccl / 10000, ".", (nccl / 100) % 100, ".", nccl % 100);
  }
}

}  // namespace xdeep::profiler
