// Element types the probes measure.
#include "profiler/dtype.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace xdeep::profiler {

absl::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kTf32:
      return "tf32";
    case DType::kFp32:
      return "fp32";
  }
  return "unknown";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "bf16" || n == "bfloat16") return DType::kBf16;
  if (n == "fp16" || n == "float16" || n == "half") return DType::kFp16;
  if (n == "tf32") return DType::kTf32;
  if (n == "fp32" || n == "float32" || n == "float") return DType::kFp32;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "' (expected bf16, fp16, tf32 or fp32)"));
}

absl::StatusOr<std::vector<DType>> ParseDTypeList(absl::string_view names) {
  std::vector<DType> out;
  for (absl::string_view part : absl::StrSplit(names, ',', absl::SkipWhitespace())) {
    absl::StatusOr<DType> t = ParseDType(absl::StripAsciiWhitespace(part));
    if (!t.ok()) return t.status();
    out.push_back(*t);
  }
  if (out.empty()) return absl::InvalidArgumentError("empty dtype list");
  return out;
}

int DTypeBytes(DType t) { return (t == DType::kBf16 || t == DType::kFp16) ? 2 : 4; }

}  // namespace xdeep::profiler
