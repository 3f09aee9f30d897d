// Element types the probes measure, with their names in reports and on the CLI.
#ifndef XDEEP_PROFILER_DTYPE_H_
#define XDEEP_PROFILER_DTYPE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace xdeep::profiler {

// tf32 is fp32 storage multiplied on the tensor cores with a 10-bit mantissa; it is a
// dtype here because training frameworks expose it as one (allow_tf32).
enum class DType { kBf16, kFp16, kTf32, kFp32 };

absl::string_view DTypeName(DType t);
absl::StatusOr<DType> ParseDType(absl::string_view name);
// Comma-separated list, e.g. "bf16,fp32".
absl::StatusOr<std::vector<DType>> ParseDTypeList(absl::string_view names);
// Bytes per stored element.
int DTypeBytes(DType t);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_DTYPE_H_
