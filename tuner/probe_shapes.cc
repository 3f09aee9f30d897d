#include "tuner/probe_shapes.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace xdeep::tuner {

std::vector<int> ProbeMicroBatches(const Workload& w, int cap, int max_layers) {
  std::set<std::tuple<double, int64_t, int64_t>> distinct;
  for (const LayerCost& l : w.layers) {
    for (const GemmShape& g : l.gemms) distinct.insert({g.m_per_sample, g.n, g.k});
  }
  int top = 0;  // log2 of the largest micro-batch probed
  while ((2 << top) <= std::min(std::max(1, w.max_micro_batch), cap)) ++top;
  const int per_mb = std::max<int>(1, distinct.size());
  const int count = std::clamp(max_layers / per_mb, std::min(2, top + 1), top + 1);
  std::vector<int> out;
  for (int i = 0; i < count; ++i) {
    const int e = count == 1 ? 0 : static_cast<int>(std::lround(double(i) * top / (count - 1)));
    if (out.empty() || out.back() != (1 << e)) out.push_back(1 << e);
  }
  return out;
}

namespace {
// What PyTorch's matmuls run in: 16-bit under autocast and mixed precision;
// fp32 stays fp32 (TF32 only where a site enables it).
const char* ProbeDtype(Precision p) {
  switch (p) {
    case Precision::kFp16Autocast:
      return "fp16";
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16Autocast:
    case Precision::kBf16Mixed:
      return "bf16";
  }
  return "bf16";
}
}  // namespace

std::string GemmShapesJson(std::span<const Workload> workloads,
                           std::span<const int> micro_batches) {
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  nlohmann::json layers = nlohmann::json::array();
  for (const Workload& w : workloads) {
    for (int mb : micro_batches) {
      for (const LayerCost& l : w.layers) {
        for (const GemmShape& g : l.gemms) {
          const auto tokens = static_cast<int64_t>(std::llround(g.m_per_sample * mb));
          if (tokens < 1 || !seen.insert({tokens, g.n, g.k}).second) continue;
          layers.push_back({{"name", absl::StrCat(w.name, ".", l.name, ".mb", mb)},
                            {"tokens", tokens},
                            {"in", g.k},
                            {"out", g.n}});
        }
      }
    }
  }
  const char* dtype = workloads.empty() ? "bf16" : ProbeDtype(workloads.front().precision);
  const nlohmann::json doc = {
      {"schema", "xdeep.gemm_shapes/1"}, {"dtypes", {dtype}}, {"layers", layers}};
  return doc.dump(1) + "\n";
}

}  // namespace xdeep::tuner
