#include "tuner/probe_shapes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tuner/context_parallel.h"
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

std::vector<int> HeuristicMicroBatches(const Workload& w, int largest_probed) {
  const int limit = std::max(1, w.max_micro_batch);
  const int top = largest_probed > 0 ? std::min(limit, 2 * largest_probed) : limit;
  std::vector<int> out;
  for (int mb = 1; mb <= top; mb *= 2) out.push_back(mb);
  return out;
}

std::vector<int> ContextParallelDegrees(const Workload& w) {
  std::vector<int> out = {1};
  if (w.family != ModelFamily::kTransformer || MaterialisesScores(ResolvedAttention(w))) return out;
  const int seq = w.transformer.seq_len;
  for (int cp = 2; cp <= 64; cp *= 2) {
    // Search's rule: 2 x cp equal chunks, at least 2,048 tokens a rank.
    if (seq % (2 * cp) != 0 || seq / cp < 2048) break;
    if (w.parallel.max_cp > 0 && cp > w.parallel.max_cp) break;
    if (w.parallel.cp > 0 && cp != w.parallel.cp) continue;
    out.push_back(cp);
  }
  if (w.parallel.cp > 1) out.erase(out.begin());  // the workload fixes its degree
  return out;
}

std::vector<HeuristicGemm> HeuristicGemms(std::span<const Workload> workloads, int gpus_per_node,
                                          std::span<const int> largest_probed) {
  std::set<std::tuple<int64_t, int64_t, int64_t, int, DType>> seen;
  std::vector<HeuristicGemm> out;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const Workload& whole = workloads[i];
    const char* dtype_name = ModelDtype(whole);
    const DType dtype = std::string_view(dtype_name) == "fp32"   ? DType::kFp32
                        : std::string_view(dtype_name) == "tf32" ? DType::kTf32
                        : std::string_view(dtype_name) == "fp16" ? DType::kFp16
                                                                 : DType::kBf16;
    const std::vector<int> tps = TensorParallelDegrees(whole, gpus_per_node);
    const std::vector<int> mbs =
        HeuristicMicroBatches(whole, i < largest_probed.size() ? largest_probed[i] : 0);
    for (int cp : ContextParallelDegrees(whole)) {
      // A context-parallel rank runs the GEMMs of a sequence of seq / cp
      // tokens (PerRankWorkload), as the model times them.
      const Workload w = cp > 1 ? PerRankWorkload(whole, cp, false) : Workload();
      const Workload& rank = cp > 1 ? w : whole;
      // Layers alike in their GEMMs and splits ask the same: each kind once
      // (a deep model's blocks, up to the parser's 100k layers, are a few kinds).
      std::vector<const LayerCost*> kinds;
      std::set<std::string> kind_seen;
      for (const LayerCost& l : rank.layers) {
        std::string sig = absl::StrCat(l.tp_capable, l.vocab_parallel);
        for (size_t g = 0; g < l.gemms.size(); ++g) {
          absl::StrAppend(&sig, "|", std::bit_cast<uint64_t>(l.gemms[g].m_per_sample), ",",
                          l.gemms[g].n, ",", l.gemms[g].k, ",",
                          g < l.tp_split_m.size() && l.tp_split_m[g],
                          g < l.tp_split_n.size() && l.tp_split_n[g]);
        }
        if (!l.gemms.empty() && kind_seen.insert(std::move(sig)).second) kinds.push_back(&l);
      }
      for (int mb : mbs) {
        for (int tp : tps) {
          for (const LayerCost* layer : kinds) {
            const LayerCost& l = *layer;
            const int t = TpWays(l, rank.settings.tensor_parallel, tp);
            for (size_t g = 0; g < l.gemms.size(); ++g) {
              const RankGemm r = RankGemmShape(l, g, mb, t);
              const auto m = static_cast<int64_t>(std::llround(r.m));
              const auto n = static_cast<int64_t>(std::llround(r.n));
              const auto k = static_cast<int64_t>(std::llround(r.k));
              if (m < 1 || n < 1 || k < 1) continue;
              // As the model asks (StrategyModel): forward (m, n, k), dgrad
              // (m, k, n), wgrad (n, k, m).
              const std::tuple<int64_t, int64_t, int64_t, GemmLayout> passes[] = {
                  {m, n, k, GemmLayout::kForward},
                  {m, k, n, GemmLayout::kDgrad},
                  {n, k, m, GemmLayout::kWgrad}};
              for (const auto& [pm, pn, pk, layout] : passes) {
                if (!seen.insert({pm, pn, pk, static_cast<int>(layout), dtype}).second) continue;
                out.push_back({pm, pn, pk, layout, dtype,
                               absl::StrCat(whole.name, ".", l.name, ".mb", mb, ".tp", t,
                                            cp > 1 ? absl::StrCat(".cp", cp) : "")});
              }
            }
          }
        }
      }
    }
  }
  return out;
}

std::string HeuristicGemmsJson(const std::vector<HeuristicGemm>& gemms) {
  if (gemms.empty()) return "";
  static constexpr const char* kPass[] = {"fwd", "dgrad", "wgrad"};  // GemmLayout
  std::set<std::string> dtypes;
  nlohmann::json list = nlohmann::json::array();
  for (const HeuristicGemm& g : gemms) {
    const std::string dtype(DTypeName(g.dtype));
    dtypes.insert(dtype);
    list.push_back({{"m", g.m},
                    {"n", g.n},
                    {"k", g.k},
                    {"pass", kPass[static_cast<int>(g.layout)]},
                    {"dtype", dtype},
                    {"label", g.label}});
  }
  const nlohmann::json doc = {{"schema", "xdeep.gemm_shapes/1"},
                              {"dtypes", std::vector<std::string>(dtypes.begin(), dtypes.end())},
                              {"gemms", list}};
  return doc.dump() + "\n";
}

std::string GemmHeuristicShapesJson(std::span<const Workload> workloads, int gpus_per_node,
                                    std::span<const int> largest_probed) {
  return HeuristicGemmsJson(HeuristicGemms(workloads, gpus_per_node, largest_probed));
}

uint64_t ShapeSetFingerprint(const std::vector<HeuristicGemm>& gemms) {
  // FNV-1a over the shapes in their (deterministic) order.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const HeuristicGemm& g : gemms) {
    mix(g.m), mix(g.n), mix(g.k), mix(static_cast<uint64_t>(g.layout)),
        mix(static_cast<uint64_t>(g.dtype));
  }
  return h;
}

std::string HeuristicShapesWithPresets(std::span<const Workload> workloads, int gpus_per_node) {
  std::vector<Workload> asked(workloads.begin(), workloads.end());
  std::vector<int> largest_probed;
  for (const Workload& w : workloads) {
    const std::vector<int> timed = ProbeMicroBatches(w);
    largest_probed.push_back(timed.empty() ? 0 : timed.back());
  }
  for (const std::string& name : PresetWorkloadNames()) {
    absl::StatusOr<Workload> preset = PresetWorkload(name);
    if (preset.ok()) asked.push_back(*std::move(preset));
  }
  return GemmHeuristicShapesJson(asked, gpus_per_node, largest_probed);
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
