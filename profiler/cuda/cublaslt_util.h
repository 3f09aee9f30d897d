// cuBLASLt helpers shared by the GEMM and attention probes: Status from
// cublasStatus_t and the storage type of a probe dtype.
#ifndef XDEEP_PROFILER_CUDA_CUBLASLT_UTIL_H_
#define XDEEP_PROFILER_CUDA_CUBLASLT_UTIL_H_

#include <cublasLt.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "profiler/dtype.h"

namespace xdeep::profiler::cuda {

inline absl::Status LtStatus(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": cublasStatus_t ", static_cast<int>(s)));
}

// tf32 is stored as fp32; only the compute type differs.
inline cudaDataType_t StorageType(DType t) {
  switch (t) {
    case DType::kBf16:
      return CUDA_R_16BF;
    case DType::kFp16:
      return CUDA_R_16F;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace xdeep::profiler::cuda

#define XDEEP_LT_RETURN(expr)                                                                    \
  do {                                                                                           \
    if (absl::Status _s = ::xdeep::profiler::cuda::LtStatus((expr), #expr); !_s.ok()) return _s; \
  } while (0)

#endif  // XDEEP_PROFILER_CUDA_CUBLASLT_UTIL_H_
