#include "tuner/probe_shapes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tuner/gemm_rank_shape.h"

namespace xdeep::tuner {

namespace {
// The (tokens per sample, n, k) of every distinct GEMM of a workload at tp = 1.
std::set<std::tuple<double, int64_t, int64_t>> DistinctGemms(const Workload& w) {
  std::set<std::tuple<double, int64_t, int64_t>> distinct;
  for (const LayerCost& l : w.layers) {
    for (const GemmShape& g : l.gemms) distinct.insert({g.m_per_sample, g.n, g.k});
  }
  return distinct;
}
}  // namespace

std::vector<int> ProbeMicroBatches(const Workload& w, int max_layers, double max_operand_bytes) {
  const auto distinct = DistinctGemms(w);
  const double element = w.precision == Precision::kFp32 ? 4 : 2;
  auto fits = [&](int mb) {
    for (const auto& [m_per_sample, n, k] : distinct) {
      const double m = m_per_sample * mb;
      if ((m * k + double(k) * n + m * n) * element > max_operand_bytes) return false;
    }
    return true;
  };
  int top = 0;  // log2 of the largest micro-batch probed
  while ((2 << top) <= std::max(1, w.max_micro_batch) && fits(2 << top)) ++top;
  const int per_mb = std::max<int>(1, distinct.size());
  const int count = std::clamp(max_layers / per_mb, std::min(3, top + 1), top + 1);
  std::vector<int> out;
  for (int i = 0; i < count; ++i) {
    const int e = count == 1 ? 0 : static_cast<int>(std::lround(double(i) * top / (count - 1)));
    if (out.empty() || out.back() != (1 << e)) out.push_back(1 << e);
  }
  return out;
}

int LargestProbedMicroBatch(const Workload& w, const HardwareProfile& hw) {
  const auto distinct = DistinctGemms(w);
  if (distinct.empty() || hw.builtin) return 0;
  const DType dtype = w.precision == Precision::kFp32           ? DType::kFp32
                      : w.precision == Precision::kFp16Autocast ? DType::kFp16
                                                                : DType::kBf16;
  // Micro-batch -> how many of the distinct GEMMs the profile measured there
  // (in any orientation: xdeep-probe times forward, dgrad and wgrad).
  std::map<int64_t, std::set<std::tuple<double, int64_t, int64_t>>> found;
  for (const GemmPoint& p : hw.gemm) {
    if (p.dtype != dtype) continue;
    for (const auto& g : distinct) {
      const auto& [m_per_sample, n, k] = g;
      const int64_t dims[3] = {p.m, p.n, p.k};
      for (int i = 0; i < 3; ++i) {
        const int64_t a = dims[(i + 1) % 3], b = dims[(i + 2) % 3];
        if (!((a == n && b == k) || (a == k && b == n))) continue;
        const double mb = dims[i] / m_per_sample;
        if (mb >= 1 && mb == std::floor(mb)) found[static_cast<int64_t>(mb)].insert(g);
      }
    }
  }
  int best = 0;
  for (const auto& [mb, gemms] : found) {
    if (gemms.size() == distinct.size()) best = static_cast<int>(std::max<int64_t>(best, mb));
  }
  return best;
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

namespace {
// The precision the step-time model looks GEMMs up at (StrategyModel's
// BytesFor): fp32 convolutions run as TF32 (cuDNN's default), fp32 Linears
// stay fp32.
const char* ModelDtype(const Workload& w) {
  if (w.precision == Precision::kFp32) return w.family == ModelFamily::kCnn ? "tf32" : "fp32";
  return ProbeDtype(w.precision);
}
}  // namespace

std::vector<int> TensorParallelDegrees(const Workload& w, int gpus_per_node) {
  const int most = w.parallel.max_tp > 0 ? w.parallel.max_tp : gpus_per_node;
  std::vector<int> out;
  for (int tp = 1; tp <= std::max(1, gpus_per_node); ++tp) {
    if (tp > most || (w.parallel.tp > 0 && tp != w.parallel.tp)) continue;
    if (tp > 1) {
      // Search's rule: tp splits heads, key-value heads and the MLP of a transformer.
      if (w.family != ModelFamily::kTransformer) break;
      const TransformerShape& t = w.transformer;
      if (t.heads % tp != 0 || t.kv_heads % tp != 0 || t.ffn % tp != 0) continue;
    }
    // Search's GPUs per node: powers of two below the node size, and the node size.
    bool divides = gpus_per_node % tp == 0;
    for (int g = 1; g < gpus_per_node && !divides; g *= 2) divides = g % tp == 0;
    if (divides) out.push_back(tp);
  }
  return out;
}

std::vector<int> HeuristicMicroBatches(const Workload& w) {
  const std::vector<int> timed = ProbeMicroBatches(w);
  const int top = std::min(std::max(1, w.max_micro_batch), timed.empty() ? 1 : 2 * timed.back());
  std::vector<int> out;
  for (int mb = 1; mb <= top; mb *= 2) out.push_back(mb);
  return out;
}

std::string GemmHeuristicShapesJson(std::span<const Workload> workloads, int gpus_per_node) {
  std::set<std::tuple<int64_t, int64_t, int64_t, int, std::string>> seen;
  std::set<std::string> dtypes;
  nlohmann::json gemms = nlohmann::json::array();
  for (const Workload& w : workloads) {
    const char* dtype = ModelDtype(w);
    const std::vector<int> tps = TensorParallelDegrees(w, gpus_per_node);
    for (int mb : HeuristicMicroBatches(w)) {
      for (int tp : tps) {
        for (const LayerCost& l : w.layers) {
          const int t = TpWays(l, w.settings.tensor_parallel, tp);
          for (size_t g = 0; g < l.gemms.size(); ++g) {
            const RankGemm r = RankGemmShape(l, g, mb, t);
            const auto m = static_cast<int64_t>(std::llround(r.m));
            const auto n = static_cast<int64_t>(std::llround(r.n));
            const auto k = static_cast<int64_t>(std::llround(r.k));
            if (m < 1 || n < 1 || k < 1) continue;
            // As the model asks (StrategyModel): forward (m, n, k), dgrad
            // (m, k, n), wgrad (n, k, m).
            const std::tuple<int64_t, int64_t, int64_t, int, const char*> passes[] = {
                {m, n, k, 0, "fwd"}, {m, k, n, 1, "dgrad"}, {n, k, m, 2, "wgrad"}};
            for (const auto& [pm, pn, pk, layout, pass] : passes) {
              if (!seen.insert({pm, pn, pk, layout, dtype}).second) continue;
              gemms.push_back({{"m", pm},
                               {"n", pn},
                               {"k", pk},
                               {"pass", pass},
                               {"dtype", dtype},
                               {"label", absl::StrCat(w.name, ".", l.name, ".mb", mb, ".tp", t)}});
            }
          }
        }
      }
    }
    if (!gemms.empty()) dtypes.insert(dtype);
  }
  if (gemms.empty()) return "";
  const nlohmann::json doc = {{"schema", "xdeep.gemm_shapes/1"},
                              {"dtypes", std::vector<std::string>(dtypes.begin(), dtypes.end())},
                              {"gemms", gemms}};
  return doc.dump() + "\n";
}

std::string HeuristicShapesWithPresets(std::span<const Workload> workloads, int gpus_per_node) {
  std::vector<Workload> asked(workloads.begin(), workloads.end());
  for (const std::string& name : PresetWorkloadNames()) {
    absl::StatusOr<Workload> preset = PresetWorkload(name);
    if (preset.ok()) asked.push_back(*std::move(preset));
  }
  return GemmHeuristicShapesJson(asked, gpus_per_node);
}

ProbeShapeFiles ProbeShapesFor(const Workload* workload, int gpus_per_node) {
  ProbeShapeFiles out;
  std::span<const Workload> named;
  if (workload != nullptr) {
    out.timed = GemmShapesJson(std::span(workload, 1), ProbeMicroBatches(*workload));
    named = std::span(workload, 1);
  }
  out.heuristic = HeuristicShapesWithPresets(named, gpus_per_node);
  return out;
}

}  // namespace xdeep::tuner
