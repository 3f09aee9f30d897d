// Hardware profiles: built-in figures for common GPUs and fabrics, probe-report
// ingestion, GEMM-throughput interpolation and the collective time model.
//
// Collective time follows the latency-bandwidth (Hockney) model with the
// nccl-tests bus-bandwidth convention (NCCL tests doc, "PERFORMANCE.md"):
// t = alpha(n) + S * f(n) / busbw, f = 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather / reduce-scatter, 1 for send/recv.
#include "tuner/hardware_profile.h"

#include "tuner/gemm_answer_book.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "tuner/gemm_kernel_table.h"
#include "tuner/grad_sync_overlap.h"
#include "tuner/modeling/model.h"
#include "tuner/modeling/model_selection.h"
#include "tuner/modeling/pmnf.h"
#include "tuner/network_model.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

std::string_view DTypeName(DType d) {
  switch (d) {
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
  }
  return "?";
}

std::string HardwareProfile::Label() const {
  if (builtin) return absl::StrCat("built-in profile ", name);
  return absl::StrCat("measured ", host.empty() ? name : host, " ", date);
}

namespace {

// ------------------------------------------------------------ built-in data

struct BuiltinSpec {
  const char* name;
  const char* gpu;
  int gpus_per_node;
  int64_t memory_bytes;
  double bw_gbps;      // achieved device copy bandwidth (not the datasheet)
  double bf16_tflops;  // achieved large-GEMM rate
  double fp32_tflops;  // plain fp32 (no TF32) GEMM
  double tf32_tflops;
  int sms;
  double intra_busbw;  // NCCL all-reduce bus bandwidth inside a node, large sizes
  double intra_latency_s;
  double attention_eff;
};

// Figures: HBM copy ~90 % of the datasheet; NVLink-4 all-reduce busbw ~360
// GB/s without NVLS and NDR 400 Gb/s rails ~45 GB/s per GPU (NVIDIA DGX H100
// reference architecture / nccl-tests figures); A100: NVLink-3 ~230 GB/s.
// Across nodes: the fabric (tuner/fabric.h, the GPU's DGX SuperPOD reference
// architecture). The GEMM rate is the GEMM model's peak parameter, the
// attention efficiency the profile's FlashAttention (sdpa) rate against the
// block's first GEMM (strategy_model.cc):
//  * h100-sxm: calibrated against measurement, one tensor-parallel rank's
//    slice of published layouts' blocks on one H100 80GB HBM3 (700 W, torch
//    2.11, CUDA 13; bench/scale/block_compute.py, data/2026-11-27_h100x1_
//    block_compute.json): 771 is the peak at which the GEMM model reproduces
//    the 72 measured GEMMs' total time (Llama 3 405B tp 8, GPT 22B-1T tp 8,
//    BLOOM tp 4; the model had been 3.4 % fast at 800), 0.44 the efficiency
//    at which it reproduces the measured FlashAttention forward + backward of
//    Llama 3 405B at tp 8 (8K causal and the 128K context-parallel rank's
//    8K x 64K; 0.36 and 0.44 alone; the model had been 42 / 29 % fast at 0.6).
//  * a100-sxm: not measured here. 268 is the published maximum achievable
//    bf16 matmul rate of an A100 SXM (Bekman, ml-engineering,
//    compute/accelerator "Maximum Achievable Matmul FLOPS comparison table":
//    267.9 TFLOP/s, CUDA 12.1); attention from FlashAttention-2's paper
//    (Dao 2023: ~50-75 % of the GEMM rate, causal, forward + backward).
//  * h200-sxm: the H100's chip, not measured; its figures are the old
//    H100 estimates scaled by the memory's speed.
const BuiltinSpec kBuiltins[] = {
    {"h100-sxm", "NVIDIA H100 80GB HBM3", 8, 85029158912LL, 2900, 771, 51, 400, 132, 360, 15e-6,
     0.44},
    {"h200-sxm", "NVIDIA H200", 8, 150754820096LL, 4200, 820, 51, 410, 132, 360, 15e-6, 0.6},
    {"a100-sxm", "NVIDIA A100-SXM4-80GB", 8, 85899345920LL, 1750, 268, 19.5, 140, 108, 230, 15e-6,
     0.55},
    {"a100-sxm-40gb", "NVIDIA A100-SXM4-40GB", 8, 42505273344LL, 1400, 268, 19.5, 140, 108, 230,
     15e-6, 0.55},
};

// Two cuBLAS workspaces (see HardwareProfile::allocator_workspace_bytes):
// 32 MiB each from Hopper on, 4096 * 2 KiB + 16 * 8 KiB before.
int64_t CublasWorkspaces(const std::string& gpu_name) {
  for (const char* newer : {"H100", "H200", "H800", "H20", "GH200", "B100", "B200", "B300"}) {
    if (gpu_name.find(newer) != std::string::npos) return 2 * (int64_t{32} << 20);
  }
  return 2 * (int64_t{4096} * 2048 + 16 * 8192);
}

HardwareProfile FromSpec(const BuiltinSpec& s) {
  HardwareProfile hw;
  hw.name = s.name;
  hw.builtin = true;
  hw.gpu_name = s.gpu;
  hw.gpus_per_node = s.gpus_per_node;
  hw.memory_bytes = s.memory_bytes;
  // CUDA context (~0.5 GiB with lazy module loading) and NCCL's buffers.
  hw.reserved_bytes = int64_t{1} << 30;
  hw.allocator_workspace_bytes = CublasWorkspaces(hw.gpu_name);
  hw.memory_bandwidth_gbps = s.bw_gbps;
  hw.attention_efficiency = s.attention_eff;
  hw.sm_count = s.sms;
  hw.fabric = DefaultFabricFor(hw.gpu_name);
  // The GEMM model at the spec's large-GEMM rates and bandwidth, its shape
  // parameters at GemmFit's defaults (no points to fit them to).
  for (auto [dtype, tflops] : {std::pair{DType::kBf16, s.bf16_tflops}, {DType::kFp16, s.bf16_tflops},
                               {DType::kTf32, s.tf32_tflops}, {DType::kFp32, s.fp32_tflops}}) {
    GemmFit& f = hw.gemm_fits[static_cast<int>(dtype)];
    f.valid = true;
    f.element_bytes = ElementBytes(dtype);
    f.sms = s.sms;
    f.peak_flops = tflops * 1e12;
    f.bandwidth = s.bw_gbps * 1e9;
    f.note = absl::StrFormat("built in: %.0f TFLOP/s, %.0f GB/s", tflops, s.bw_gbps);
  }
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kReduceScatter, CollectiveOp::kSendRecv}) {
    const double lat_scale = op == CollectiveOp::kAllReduce ? 1.0 : 0.6;
    for (int r : {2, 4, 8}) {
      hw.collectives.push_back({op, FabricScope::kIntraNode, r,
                                s.intra_latency_s * lat_scale * (1 + 0.15 * std::log2(r)),
                                op == CollectiveOp::kSendRecv ? s.intra_busbw / 2 : s.intra_busbw});
    }
  }
  return hw;
}

// Linear interpolation in log2(ranks) over fits sorted by ranks; clamped for
// bandwidth, extrapolated along the last segment for latency (tree/ring
// latency grows with the rank count).
struct FitQuery {
  double latency_s = 0;
  double busbw = 0;
  bool found = false;
};

FitQuery InterpolateFits(const std::vector<CollectiveFit>& fits, CollectiveOp op, FabricScope scope,
                         int ranks) {
  const CollectiveFit* lo = nullptr;
  const CollectiveFit* hi = nullptr;
  const CollectiveFit* prev_of_last = nullptr;
  const CollectiveFit* last = nullptr;
  for (const CollectiveFit& f : fits) {
    if (f.op != op || f.scope != scope) continue;
    if (f.ranks <= ranks && (lo == nullptr || f.ranks > lo->ranks)) lo = &f;
    if (f.ranks >= ranks && (hi == nullptr || f.ranks < hi->ranks)) hi = &f;
    if (last == nullptr || f.ranks > last->ranks) {
      if (last != nullptr && (prev_of_last == nullptr || last->ranks > prev_of_last->ranks)) {
        prev_of_last = last;
      }
      last = &f;
    } else if (prev_of_last == nullptr || f.ranks > prev_of_last->ranks) {
      prev_of_last = &f;
    }
  }
  FitQuery q;
  if (lo == nullptr && hi == nullptr) return q;
  q.found = true;
  if (lo == nullptr) {
    q.latency_s = hi->latency_s;
    q.busbw = hi->busbw_gbps;
  } else if (hi == nullptr) {
    q.busbw = lo->busbw_gbps;
    q.latency_s = lo->latency_s;
    if (prev_of_last != nullptr && prev_of_last != lo) {
      const double x0 = std::log2(prev_of_last->ranks), x1 = std::log2(lo->ranks);
      const double slope = (lo->latency_s - prev_of_last->latency_s) / (x1 - x0);
      q.latency_s += std::max(0.0, slope) * (std::log2(ranks) - x1);
    }
  } else if (lo->ranks == hi->ranks) {
    q.latency_s = lo->latency_s;
    q.busbw = lo->busbw_gbps;
  } else {
    const double t =
        (std::log2(ranks) - std::log2(lo->ranks)) / (std::log2(hi->ranks) - std::log2(lo->ranks));
    q.latency_s = lo->latency_s + t * (hi->latency_s - lo->latency_s);
    q.busbw = lo->busbw_gbps + t * (hi->busbw_gbps - lo->busbw_gbps);
  }
  return q;
}

FitQuery FitOrFallback(const HardwareProfile& hw, CollectiveOp op, FabricScope scope, int ranks) {
  FitQuery q = InterpolateFits(hw.collectives, op, scope, ranks);
  if (q.found) return q;
  // Not measured for this op: the all-reduce figures stand in (NCCL runs all
  // of them on the same rings, so the bus bandwidth is shared).
  return InterpolateFits(hw.collectives, CollectiveOp::kAllReduce, scope, ranks);
}

}  // namespace

double BusFactor(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      return double(n - 1) / n;
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

namespace {
// Where each precision's GEMM fit starts: the device's SMs and bandwidth.
GemmFit GemmFitStart(const HardwareProfile& hw) {
  GemmFit start;
  start.sms = hw.sm_count > 0 ? hw.sm_count : start.sms;
  if (hw.memory_bandwidth_gbps > 0) start.bandwidth = hw.memory_bandwidth_gbps * 1e9;
  return start;
}
}  // namespace

void FitGemmModels(HardwareProfile* hw) {
  const GemmFit start = GemmFitStart(*hw);
  const DType all[] = {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32};
  for (DType d : all) hw->gemm_fits[static_cast<int>(d)] = FitGemm(hw->gemm, d, start);
  hw->gemm_kernels = GemmKernelTable::Build(hw->gemm, hw->gemm_heuristic, start);
  // Precisions the probe did not run: from a measured one, bf16 first.
  for (DType d : all) {
    GemmFit& f = hw->gemm_fits[static_cast<int>(d)];
    if (f.valid) continue;
    for (DType from : all) {
      const GemmFit& measured = hw->gemm_fits[static_cast<int>(from)];
      if (measured.valid && measured.points > 0) {
        f = ScaledGemmFit(measured, d);
        // Scaled by the precisions' dense-peak ratio against bf16.
        if (from != DType::kBf16 && from != DType::kFp16) {
          f.peak_flops *= from == DType::kTf32 ? 2.0 : 16.0;
        }
        break;
      }
    }
  }
}

GemmModel::GemmModel(const HardwareProfile& hw, DType dtype)
    : fit_(hw.gemm_fits[static_cast<int>(dtype)]), dtype_(dtype), kernels_(hw.gemm_kernels) {
  if (fit_.valid || hw.gemm.empty()) return;
  HardwareProfile fitted = hw;
  FitGemmModels(&fitted);
  fit_ = fitted.gemm_fits[static_cast<int>(dtype)];
  kernels_ = fitted.gemm_kernels;
}

double GemmModel::Seconds(double m, double n, double k, GemmLayout layout) const {
  if (kernels_) {
    if (const GemmKernel* kernel = kernels_->Find(dtype_, layout, m, n, k)) {
      return GemmKernelSeconds(kernels_->fit(dtype_), m, n, k, layout, *kernel);
    }
  }
  return GemmSeconds(fit_, m, n, k, layout);
}

double GemmTflops(const HardwareProfile& hw, DType dtype, double m, double n, double k,
                  GemmLayout layout) {
  return GemmModel(hw, dtype).Tflops(m, n, k, layout);
}

CollectiveLine CollectiveCoefficients(const HardwareProfile& hw, CollectiveOp op, int ranks,
                                      int ranks_per_node) {
  CollectiveLine line;
  if (ranks <= 1) return line;
  ranks_per_node = std::clamp(ranks_per_node, 1, ranks);
  if (op == CollectiveOp::kSendRecv && ranks_per_node >= 2) {
    // Point-to-point between two ranks of one node; across nodes below.
    const FitQuery q = FitOrFallback(hw, op, FabricScope::kIntraNode, 2);
    if (!q.found || q.busbw <= 0) return line;
    return {q.latency_s, 1.0 / (q.busbw * 1e9)};
  }
  if (op == CollectiveOp::kSendRecv) ranks = 2;
  if (ranks_per_node >= ranks) {
    const FitQuery q = FitOrFallback(hw, op, FabricScope::kIntraNode, ranks);
    if (!q.found || q.busbw <= 0) return line;
    return {q.latency_s, BusFactor(op, ranks) / (q.busbw * 1e9)};
  }
  // Across nodes: the network model (NCCL's ring / tree over the fabric),
  // with NVLink's bandwidth from the intra-node figures and, where the probe
  // ran across nodes, its measured rate per rail and latency.
  NodeLinks node;
  node.gpus_per_node = std::max(1, hw.gpus_per_node);
  if (ranks_per_node > 1) {
    const FitQuery intra = FitOrFallback(hw, op, FabricScope::kIntraNode, ranks_per_node);
    if (intra.found && intra.busbw > 0) node.nvlink_busbw = intra.busbw * 1e9;
  }
  {
    // Inter-node fits are the probe's (built-in profiles have none: their
    // fabric describes the network).
    const FitQuery q = FitOrFallback(hw, op, FabricScope::kInterNode, ranks);
    if (q.found && q.busbw > 0) {
      // The probe's busbw is per GPU of a node (one rail each); a node with
      // fewer NICs than GPUs shares them.
      node.measured_nic_bw = q.busbw * 1e9;
      // The measured latency (interpolated, or PMNF-extrapolated past the
      // largest group) is what the smallest message takes: NCCL's fastest
      // algorithm and protocol for it, scaled to match.
      const CollectiveLine modelled = NetworkCollective(hw.fabric, node, op, ranks, 1);
      double fastest = modelled.latency_s;
      for (int i = 1; i < modelled.lines; ++i) {
        fastest = std::min(fastest, modelled.line_latency_s[i]);
      }
      if (fastest > 0) node.latency_scale = std::max(0.0, q.latency_s) / fastest;
    }
  }
  return NetworkCollective(hw.fabric, node, op, ranks, ranks_per_node);
}

double CollectiveTime(const HardwareProfile& hw, CollectiveOp op, double bytes, int ranks,
                      int ranks_per_node) {
  return CollectiveCoefficients(hw, op, ranks, ranks_per_node).At(bytes);
}

absl::StatusOr<HardwareProfile> BuiltinHardwareProfile(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  for (const BuiltinSpec& s : kBuiltins) {
    if (lower == s.name) return FromSpec(s);
  }
  // Common aliases.
  if (lower == "h100" || lower == "h100-80gb") return FromSpec(kBuiltins[0]);
  if (lower == "h200") return FromSpec(kBuiltins[1]);
  if (lower == "a100" || lower == "a100-80gb") return FromSpec(kBuiltins[2]);
  return absl::NotFoundError(absl::StrCat("unknown built-in hardware profile '", std::string(name),
                                          "'; use one of ",
                                          absl::StrJoin(BuiltinHardwareProfileNames(), ", ")));
}

std::vector<std::string> BuiltinHardwareProfileNames() {
  std::vector<std::string> names;
  for (const BuiltinSpec& s : kBuiltins) names.emplace_back(s.name);
  return names;
}

// ------------------------------------------------------------ probe reports

namespace {

using json = nlohmann::json;

// The Kokkos device kernels' figures (profiler/kokkos_probes.h): the fused AdamW update
// for the optimizer step, the median of layer norm, softmax and bias + GeLU for
// elementwise work. The CUDA entries stay out: they would change every existing
// profile's optimizer time, which was validated against copy bandwidth.
struct KokkosDeviceFigures {
  double optimizer_gbps = 0;
  double elementwise_gbps = 0;
};
KokkosDeviceFigures KokkosDeviceBandwidth(const json& bandwidth) {
  KokkosDeviceFigures out;
  std::vector<double> elementwise;
  for (const json& b : bandwidth) {
    if (!b.is_object() || b.value("backend", std::string()) != "kokkos" ||
        b.value("space", std::string()) != "device") {
      continue;
    }
    const std::string kernel = b.value("kernel", std::string());
    const double gbps = b.value("gbps", 0.0);
    if (!(gbps > 0 && gbps < 1e5)) continue;  // absurd figures are not measurements
    if (kernel == "adam_update") out.optimizer_gbps = std::max(out.optimizer_gbps, gbps);
    if (kernel == "layer_norm" || kernel == "softmax" || kernel == "bias_gelu")
      elementwise.push_back(gbps);
  }
  if (!elementwise.empty()) out.elementwise_gbps = modeling::Median(elementwise);
  return out;
}

absl::Status ReportError(absl::string_view source, absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", path, ": ", what));
}

std::optional<CollectiveOp> ParseOp(const std::string& s) {
  if (s == "all_reduce") return CollectiveOp::kAllReduce;
  if (s == "all_gather") return CollectiveOp::kAllGather;
  if (s == "reduce_scatter") return CollectiveOp::kReduceScatter;
  if (s == "send_recv") return CollectiveOp::kSendRecv;
  return std::nullopt;  // broadcast / all_to_all: not used by the strategies modelled
}

// The cuBLASLt kernel a report entry names (profiler/report.h GemmKernel); not
// known where the entry has none or one without a tile.
GemmKernel GemmKernelOf(const nlohmann::json& entry) {
  GemmKernel k;
  auto it = entry.find("kernel");
  if (it == entry.end() || !it->is_object()) return k;
  auto number = [&](const char* key, int otherwise) {
    auto v = it->find(key);
    return v != it->end() && v->is_number_integer() ? v->get<int>() : otherwise;
  };
  k.tile_m = number("tile_m", 0);
  k.tile_n = number("tile_n", 0);
  k.split_k = std::max(1, number("split_k", 1));
  k.algo = number("algo", -1);  // known() also wants the tile
  return k;
}

std::optional<DType> ParseDType(const std::string& s) {
  if (s == "bf16") return DType::kBf16;
  if (s == "fp16") return DType::kFp16;
  if (s == "fp32") return DType::kFp32;
  if (s == "tf32") return DType::kTf32;
  return std::nullopt;
}

// A GEMM entry's shape, precision, layout and kernel (tflops left 0); none
// for a precision the model does not use yet (fp8 and friends).
std::optional<GemmPoint> GemmPointOf(const json& g) {
  auto dt = ParseDType(g.value("dtype", std::string()));
  if (!dt) return std::nullopt;
  const std::string pass = g.value("pass", std::string("plain"));
  return GemmPoint{g.value("m", int64_t{0}), g.value("n", int64_t{0}), g.value("k", int64_t{0}),
                   *dt,
                   0.0,
                   pass == "fwd"     ? GemmLayout::kForward
                   : pass == "wgrad" ? GemmLayout::kWgrad
                                     : GemmLayout::kDgrad,
                   GemmKernelOf(g)};
}

// The heuristic's answers of a report ($.gemm_algos): each with its shape and
// the kernel cuBLASLt would run; precisions the model does not use are skipped.
absl::StatusOr<std::vector<GemmPoint>> HeuristicAnswersOf(const json& algos,
                                                          const std::string& source_name) {
  std::vector<GemmPoint> out;
  if (!algos.is_array()) return out;
  int i = 0;
  for (const json& g : algos) {
    const std::string path = absl::StrCat("$.gemm_algos[", i++, "]");
    if (!g.is_object()) return ReportError(source_name, path, "not an object");
    std::optional<GemmPoint> p = GemmPointOf(g);
    if (!p) continue;
    if (p->m <= 0 || p->n <= 0 || p->k <= 0 || !p->kernel.known()) {
      return ReportError(source_name, path, "needs positive m, n, k and a kernel with its tile");
    }
    out.push_back(*p);
  }
  return out;
}

// What cuBLASLt's heuristic answers depend on: the GPU model and the library
// and driver versions the report records.
std::string HeuristicKey(const json& doc) {
  const json none = json::object();
  auto object = [&](const char* key) -> const json& {
    auto it = doc.find(key);
    return it != doc.end() && it->is_object() ? *it : none;
  };
  const json& gpu = object("gpu");
  const json& versions = object("versions");
  auto text = [](const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string("?");
  };
  return absl::StrCat("gpu=", text(gpu, "name"), " cc=", text(gpu, "compute_capability"),
                      " cublaslt=", text(versions, "cublaslt"),
                      " driver=", text(versions, "cuda_driver_api"),
                      " runtime=", text(versions, "cuda_runtime"));
}

// The network a framework entry ran (model gpt or resnet), as the model
// builds its layers.
absl::StatusOr<Workload> ProbedNetwork(const json& f, const std::string& model) {
  Workload w;
  if (model == "resnet") {
    auto layers = CnnLayerTable(absl::StrCat("resnet", f.value("depth", 0)), f.value("image", 0),
                                f.value("classes", 0), w.precision);
    if (!layers.ok()) {
      return absl::InvalidArgumentError(
          "needs a ResNet shape (depth 18, 34, 50, 101 or 152, image >= 32, classes)");
    }
    w.layers = *std::move(layers);
    return w;
  }
  TransformerShape& t = w.transformer;
  t.layers = f.value("layers", 0);
  t.hidden = f.value("hidden", 0);
  t.heads = t.kv_heads = f.value("heads", 0);
  t.ffn = f.value("ffn", 0);
  t.seq_len = f.value("seq", 0);
  t.vocab = f.value("vocab", 0);
  t.tied_embeddings = true;
  if (t.layers <= 0 || t.heads <= 0 || t.hidden % t.heads != 0 || t.ffn <= 0 || t.seq_len <= 0 ||
      t.vocab <= 0) {
    return absl::InvalidArgumentError(
        "needs a GPT shape (layers, hidden divisible by heads, ffn, seq, vocab)");
  }
  BuildTransformerLayers(w);
  return w;
}

// One network's FSDP2-wrapped probe passes on `ranks` ranks: its unit and
// tensor counts, and what FSDP added to each plain pass.
struct FsdpProbe {
  int ranks = 0;
  double units = 0, tensors = 0;
  std::vector<double> added_s;
  std::vector<double> step_host_s;  // the AdamW step over its DTensors
};

// The AdamW step's host time over FSDP2's DTensors as a fixed part plus a
// part per parameter tensor, from the probe's two networks (median per
// network: tensors, seconds). Each of a foreach step's ~10 calls over the
// tensor lists goes through DTensor's dispatch once (its sharding
// propagation, whatever the count), and each tensor through its unwrapping
// and rewrapping: on the 2x H100 library runs 8 and 9 the tiny GPT's 36
// tensors took 3.4-3.6 ms, ResNet-50's 161 took 11.6-12.0 -- 1.3 ms + 64 us
// a tensor, not the 100 us a tensor the GPT alone reads, which charged timm
// ViT-H/14's 389 tensors 34 ms (bench/validate/data/calibration/
// 2026-11-27_h100x2_library_run9). With one network, or where a part would
// come out negative, it is all per tensor (the median over networks). A
// plain step's fixed part (0.3 ms on those runs) is within a probe pass's
// spread: it stays per tensor.
StepHostCost FitStepHost(const std::vector<std::pair<double, double>>& by_network) {
  if (by_network.empty()) return {};
  if (by_network.size() == 2) {
    const auto& [ta, sa] = by_network[0];
    const auto& [tb, sb] = by_network[1];
    if (std::abs(tb - ta) > 0.5) {
      const double per_tensor = (sb - sa) / (tb - ta);
      const double fixed = sa - per_tensor * ta;
      if (per_tensor > 0 && fixed >= 0) return {.fixed_s = fixed, .per_tensor_s = per_tensor};
    }
  }
  std::vector<double> per;
  for (const auto& [t, sec] : by_network) per.push_back(sec / t);
  return {.fixed_s = 0, .per_tensor_s = modeling::Median(per)};
}

// The networks' FSDP probes on the most ranks timed: as training runs them.
std::vector<const FsdpProbe*> OnMostRanks(const FsdpProbe& gpt, const FsdpProbe& cnn) {
  std::vector<const FsdpProbe*> out;
  for (const FsdpProbe* p : {&gpt, &cnn}) {
    if (p->ranks == std::max(gpt.ranks, cnn.ranks)) out.push_back(p);
  }
  return out;
}

// FSDP2's host seconds per unit and per parameter tensor from the probe's
// GPT and ResNet-50 (median added time of each): two equations in two
// unknowns. With one network, or where the two disagree so that one cost
// would come out negative, the built-in split between the two
// (fsdp_tensor_host_kernels / fsdp_unit_host_kernels) scales to what was
// measured. None where nothing was.
std::optional<std::pair<double, double>> FsdpHostCosts(const std::vector<const FsdpProbe*>& probes,
                                                       const HardwareProfile& hw) {
  std::vector<std::pair<const FsdpProbe*, double>> seen;
  for (const FsdpProbe* p : probes) {
    if (!p->added_s.empty() && p->units + p->tensors > 0) {
      seen.emplace_back(p, modeling::Median(p->added_s));
    }
  }
  if (seen.empty()) return std::nullopt;
  if (seen.size() == 2) {
    const auto& [a, da] = seen[0];
    const auto& [b, db] = seen[1];
    const double det = a->units * b->tensors - b->units * a->tensors;
    if (std::abs(det) > 1e-9) {
      const double unit = (da * b->tensors - db * a->tensors) / det;
      const double tensor = (a->units * db - b->units * da) / det;
      if (unit >= 0 && tensor >= 0) return std::pair(unit, tensor);
    }
  }
  const double ratio = hw.fsdp_tensor_host_kernels / hw.fsdp_unit_host_kernels;
  double added = 0, weight = 0;
  for (const auto& [p, d] : seen) {
    added += d;
    weight += p->units + ratio * p->tensors;
  }
  const double unit = added / weight;
  return std::pair(unit, ratio * unit);
}

// The plain pass's wall time on several ranks over one rank's, per network
// (medians), the median over networks; none without both.
std::optional<double> SideBySideHostFactor(
    const std::map<std::string, std::map<int, std::vector<double>>>& plain_by_ranks) {
  std::vector<double> ratios;
  for (const auto& [network, by_ranks] : plain_by_ranks) {
    const auto one = by_ranks.find(1);
    const auto most = std::prev(by_ranks.end());
    if (one != by_ranks.end() && most->first > 1) {
      ratios.push_back(modeling::Median(most->second) / modeling::Median(one->second));
    }
  }
  if (ratios.empty()) return std::nullopt;
  return modeling::Median(ratios);
}

absl::StatusOr<HardwareProfile> ProfileFromReport(std::string_view json_text,
                                                  const std::string& source_name) {
  json doc = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return ReportError(source_name, "$", "not a JSON object; pass the file xdeep-probe wrote");
  }
  const auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string() || *schema != "xdeep.probe_report/1") {
    return ReportError(source_name, "$.schema",
                       "unknown or missing schema; expected \"xdeep.probe_report/1\"");
  }
  HardwareProfile hw;
  hw.builtin = false;
  hw.host = doc.value("host", std::string("unknown-host"));
  hw.date = doc.value("created", std::string("unknown-date"));
  hw.name = hw.host;
  hw.gpus_per_node = doc.value("gpus_per_node", 0);
  const auto gpu = doc.find("gpu");
  if (gpu == doc.end() || !gpu->is_object()) {
    return ReportError(source_name, "$.gpu",
                       "no GPU section (a CPU-only report); probe a GPU node to tune GPU jobs");
  }
  hw.gpu_name = gpu->value("name", std::string());
  hw.memory_bytes = gpu->value("memory_bytes", int64_t{0});
  if (hw.memory_bytes <= 0) {
    return ReportError(source_name, "$.gpu.memory_bytes", "missing or not positive");
  }
  if (hw.gpus_per_node <= 0) hw.gpus_per_node = gpu->value("count", 1);
  hw.sm_count = gpu->value("sm_count", 0);
  if (hw.sm_count <= 0) hw.sm_count = 132;
  hw.reserved_bytes = int64_t{1} << 30;
  hw.allocator_workspace_bytes = CublasWorkspaces(hw.gpu_name);

  const json empty = json::array();
  auto section = [&](const char* key) -> const json& {
    auto it = doc.find(key);
    return (it != doc.end() && it->is_array()) ? *it : empty;
  };
  int i = 0;
  for (const json& g : section("gemm")) {
    const std::string path = absl::StrCat("$.gemm[", i++, "]");
    if (!g.is_object()) return ReportError(source_name, path, "not an object");
    std::optional<GemmPoint> p = GemmPointOf(g);
    if (!p) continue;
    p->tflops = g.value("tflops", 0.0);
    if (p->tflops <= 0 && g.value("median_s", 0.0) > 0) {
      p->tflops = 2.0 * p->m * p->n * p->k / g.value("median_s", 0.0) / 1e12;
    }
    if (p->m <= 0 || p->n <= 0 || p->k <= 0 || p->tflops <= 0) {
      return ReportError(source_name, path, "needs positive m, n, k and tflops (or median_s)");
    }
    hw.gemm.push_back(*p);
  }
  auto answers = HeuristicAnswersOf(section("gemm_algos"), source_name);
  if (!answers.ok()) return answers.status();
  hw.gemm_heuristic = *std::move(answers);
  if (hw.gemm.empty()) {
    return ReportError(source_name, "$.gemm",
                       "no GEMM measurements; rerun xdeep-probe with the compute probes");
  }
  double best_bw = 0;
  for (const json& b : section("bandwidth")) {
    if (b.value("space", std::string("device")) != "device") continue;
    const std::string kernel = b.value("kernel", std::string());
    if (kernel == "copy" || kernel == "triad") best_bw = std::max(best_bw, b.value("gbps", 0.0));
  }
  hw.memory_bandwidth_gbps = best_bw;
  const KokkosDeviceFigures kokkos = KokkosDeviceBandwidth(section("bandwidth"));
  hw.optimizer_bandwidth_gbps = kokkos.optimizer_gbps;

  // Attention efficiency: mean ratio of attention to the best GEMM rate.
  double best_gemm = 0;
  for (const GemmPoint& p : hw.gemm) best_gemm = std::max(best_gemm, p.tflops);
  double ratio_sum = 0;
  int ratio_n = 0;
  for (const json& a : section("attention")) {
    const double t = a.value("tflops", 0.0);
    if (t > 0 && best_gemm > 0) {
      ratio_sum += t / best_gemm;
      ++ratio_n;
    }
  }
  if (ratio_n > 0) hw.attention_efficiency = std::clamp(ratio_sum / ratio_n, 0.05, 1.0);

  // The framework's host time per kernel (profiler/framework_probe.py), in the
  // step-time model's units: the probe's launch-bound forward + backward of a
  // tiny GPT (and of a ResNet) over the kernels this model
  // counts for that network (forward's, and twice as many in backward), its
  // device share taken out as the model puts host and device together
  // (HostAndDevice: sqrt(host² + device²)). The median of the launch-bound GPU
  // entries per kind of network; where the GPU was busy half the time or more,
  // the wall time says little about the host's.
  std::vector<double> per_kernel, per_kernel_cnn, step_cv, rank_cv, elementwise_gbps,
      optimizer_per_tensor;
  std::map<int, std::vector<double>> ddp_per_launch_by_ranks;
  FsdpProbe fsdp_gpt, fsdp_cnn;
  std::map<int, std::vector<double>> tp_per_linear_by_ranks;
  struct TpPass {
    double tp_s, plain_s, linears;
  };
  std::map<int, std::vector<TpPass>> tp_passes_by_ranks;
  std::map<std::string, std::map<int, std::vector<double>>> plain_by_ranks;
  i = 0;
  for (const json& f : section("framework")) {
    const std::string path = absl::StrCat("$.framework[", i++, "]");
    if (!f.is_object()) return ReportError(source_name, path, "not an object");
    const std::string model = f.value("model", std::string());
    const double elementwise_s = f.value("elementwise_s", 0.0);
    if ((model != "gpt" && model != "resnet") || f.value("device", std::string("cuda")) != "cuda" ||
        (elementwise_s <= 0 && f.value("gpu_busy_fraction", 1.0) >= 0.5)) {
      continue;
    }
    const double wall_s = f.value("median_s", 0.0);
    const double busy = f.value("gpu_busy_fraction", 0.0);
    if (wall_s <= 0) return ReportError(source_name, path, "needs median_s > 0");
    auto probed_or = ProbedNetwork(f, model);
    if (!probed_or.ok()) return ReportError(source_name, path, probed_or.status().message());
    const Workload& probed = *probed_or;
    if (elementwise_s > 0) {
      // The memory-bound GPT: the model's elementwise bytes over their GPU time.
      double bytes = 0;
      for (const LayerCost& l : probed.layers) {
        const ElementwiseTraffic e = ElementwiseBytes(l);
        bytes += (e.fwd + e.bwd) * std::max(1, f.value("batch", 1));
      }
      elementwise_gbps.push_back(bytes / elementwise_s / 1e9);
      continue;
    }
    int forward_kernels = 0, ddp_launches = 0, tensors = 0;
    std::set<std::string> units;  // the root unit (embeddings, stem, head) named ""
    DdpBuckets buckets;  // the probe trains in fp32 parameters and gradients
    for (const LayerCost& l : probed.layers) {
      forward_kernels += l.kernels - l.library_kernels;  // as the model counts host time
      ddp_launches += 2 * ParamTensors(l) + l.buffer_tensors;
      tensors += ParamTensors(l);
      if (l.params > 0) units.insert(l.unit);
    }
    for (auto l = probed.layers.rbegin(); l != probed.layers.rend(); ++l) {
      buckets.Add(4.0 * l->params, ParamTensors(*l));
    }
    // Ranks in step: the host's spread from how far the slowest trails, as
    // the model's straggler term has it (StragglerFactor).
    const int ranks = f.value("ranks", 1);
    plain_by_ranks[model][ranks].push_back(wall_s);
    const double straggle = ranks > 1 ? std::max(1.0, f.value("straggle", 1.0)) : 1.0;
    if (straggle > 1) rank_cv.push_back((straggle - 1) / (StragglerFactor(ranks, 1.0) - 1));
    // The FSDP2-wrapped pass: what FSDP adds on the host, for this network's
    // units and tensors; where passes ran on several ranks, those alone (each
    // unit's collectives wait for the other ranks, as in training). The model
    // times a synchronous pass as (plain + FSDP's work) x the straggle, so the
    // straggle comes out before the plain pass does.
    const double fsdp_s = f.value("fsdp_median_s", 0.0);
    FsdpProbe& fsdp = model == "resnet" ? fsdp_cnn : fsdp_gpt;
    if (fsdp_s > 0 && ranks >= fsdp.ranks) {
      if (ranks > fsdp.ranks) fsdp = FsdpProbe{.ranks = ranks};
      fsdp.units = static_cast<double>(units.size());
      fsdp.tensors = tensors;
      fsdp.added_s.push_back(std::max(0.0, fsdp_s / straggle - wall_s));
      const double step_s = f.value("fsdp_step_host_s", 0.0);
      if (step_s > 0 && tensors > 0) fsdp.step_host_s.push_back(step_s);
    }
    // The TP-split pass: what DTensor's dispatch adds per split Linear, the
    // straggle out first as for FSDP.
    const double tp_s = f.value("tp_median_s", 0.0);
    const int tp_linears = f.value("tp_linears", 0);
    if (tp_s > 0 && tp_linears > 0) {
      tp_per_linear_by_ranks[ranks].push_back(std::max(0.0, tp_s / straggle - wall_s) / tp_linears);
      tp_passes_by_ranks[ranks].push_back({tp_s / straggle, wall_s, double(tp_linears)});
    }
    // The DDP-wrapped pass: what the reducer adds on the host over the launches
    // the step-time model counts for it (the all-reduce it times itself). On
    // several ranks each bucket's all-reduce is a real NCCL call whose ranks
    // meet, as in training, so those entries alone where there are any, the
    // straggle out first as for FSDP.
    const double ddp_s = f.value("ddp_median_s", 0.0);
    if (ddp_s > 0 && ddp_launches > 0) {
      // Each bucket's NCCL call counted as ddp_bucket_host_launches launches.
      ddp_per_launch_by_ranks[ranks].push_back(
          std::max(0.0, ddp_s / straggle - wall_s) /
          (ddp_launches + hw.ddp_bucket_host_launches * buckets.count()));
    }
    // The other figures are one process's: single-GPU training's host.
    if (ranks > 1) continue;
    const double step_host_s = f.value("step_host_s", 0.0);
    if (step_host_s > 0 && tensors > 0) optimizer_per_tensor.push_back(step_host_s / tensors);
    (model == "resnet" ? per_kernel_cnn : per_kernel)
        .push_back(wall_s * std::sqrt(1.0 - busy * busy) / (3.0 * forward_kernels));
    // Pass-to-pass spread, from the 95th percentile as if normal.
    const double p95_s = f.value("p95_s", 0.0);
    if (p95_s > wall_s) step_cv.push_back((p95_s - wall_s) / (1.645 * wall_s));
  }
  std::vector<std::string> host_parts;  // for the label
  if (!per_kernel.empty() && !per_kernel_cnn.empty()) {
    // One host speed for the process, read from both of its passes: each
    // pass's window (~0.6 s of the GPT's, ~2 s of the ResNet's, seconds
    // apart) reads the host at the level of its moment, and these hosts switch
    // between levels ~1.5x apart within seconds (bench/validate/data/checks/
    // 2026-11-26_h100x1_host_check_pinned). Over the 21 library runs of both
    // cards the training rows followed the GPT's window alone and the
    // ResNet's alone about as well (step time 10.1 and 10.0 %), and the
    // geometric mean of the two (the ResNet's figure over the op ratio of the
    // two networks, cnn_host_op_ratio) better than either (9.7 %;
    // bench/validate/README.md, "h23h, session 23"). Each
    // network then keeps its own cost per op: the CNN figure is the same speed
    // times that ratio.
    const double gpt = modeling::Median(per_kernel), cnn = modeling::Median(per_kernel_cnn);
    hw.host_overhead_per_kernel_s = std::sqrt(gpt * cnn / hw.cnn_host_op_ratio);
    hw.host_overhead_per_kernel_cnn_s = hw.host_overhead_per_kernel_s * hw.cnn_host_op_ratio;
    host_parts.push_back(absl::StrFormat(
        "%.1f us per kernel from the framework probe, %.1f us for CNNs (its GPT's pass %.1f us, "
        "its ResNet's %.1f us over their op ratio %.2f)",
        hw.host_overhead_per_kernel_s * 1e6, hw.host_overhead_per_kernel_cnn_s * 1e6, gpt * 1e6,
        cnn / hw.cnn_host_op_ratio * 1e6, hw.cnn_host_op_ratio));
  } else if (!per_kernel.empty()) {
    hw.host_overhead_per_kernel_s = modeling::Median(per_kernel);
    host_parts.push_back(absl::StrFormat("%.1f us per kernel from the framework probe",
                                         hw.host_overhead_per_kernel_s * 1e6));
  } else if (!per_kernel_cnn.empty()) {
    hw.host_overhead_per_kernel_cnn_s = modeling::Median(per_kernel_cnn);
    host_parts.push_back(
        absl::StrFormat("%.1f us for CNNs", hw.host_overhead_per_kernel_cnn_s * 1e6));
  }
  if (!ddp_per_launch_by_ranks.empty()) {
    const auto& [ranks, per_launch] = *ddp_per_launch_by_ranks.rbegin();
    hw.ddp_host_per_launch_s = modeling::Median(per_launch);
    host_parts.push_back(absl::StrFormat("%.1f us per DDP reducer launch on %d rank%s",
                                         hw.ddp_host_per_launch_s * 1e6, ranks,
                                         ranks > 1 ? "s" : ""));
  }
  const std::vector<const FsdpProbe*> fsdp_probes = OnMostRanks(fsdp_gpt, fsdp_cnn);
  if (const auto fsdp = FsdpHostCosts(fsdp_probes, hw)) {
    std::tie(hw.fsdp_host_per_unit_s, hw.fsdp_host_per_tensor_s) = *fsdp;
    const int ranks = fsdp_probes.front()->ranks;
    hw.fsdp_host_ranks = ranks;
    host_parts.push_back(absl::StrFormat(
        "FSDP %.2f ms per unit + %.0f us per tensor on %d rank%s", hw.fsdp_host_per_unit_s * 1e3,
        hw.fsdp_host_per_tensor_s * 1e6, ranks, ranks > 1 ? "s" : ""));
  }
  if (!tp_per_linear_by_ranks.empty()) {
    // On the most ranks: each split Linear's collectives wait for the others.
    const auto& [ranks, per_linear] = *tp_per_linear_by_ranks.rbegin();
    hw.tp_host_per_linear_s = modeling::Median(per_linear);
    const auto one = tp_passes_by_ranks.find(1);
    if (ranks > 1 && one != tp_passes_by_ranks.end()) {
      // One rank: the dispatch alone per split Linear. Several: the whole TP
      // pass (plain launches and dispatch) slower by the ranks' meetings.
      std::vector<double> dispatch, sync;
      for (const TpPass& p : one->second) {
        dispatch.push_back(std::max(0.0, p.tp_s - p.plain_s) / p.linears);
      }
      const double d = modeling::Median(dispatch);
      for (const TpPass& p : tp_passes_by_ranks.rbegin()->second) {
        sync.push_back(p.tp_s / (p.plain_s + p.linears * d));
      }
      hw.tp_rank_sync_factor = std::max(1.0, modeling::Median(sync));
      hw.tp_host_per_linear_s = d * hw.tp_rank_sync_factor;
    }
    host_parts.push_back(absl::StrFormat("TP %.0f us per split Linear on %d rank%s",
                                         hw.tp_host_per_linear_s * 1e6, ranks,
                                         ranks > 1 ? "s" : ""));
    if (hw.tp_rank_sync_factor > 1) {
      host_parts.push_back(absl::StrFormat("TP's pass %.2fx on its ranks (in the figure per split Linear)",
                                           hw.tp_rank_sync_factor));
    }
  }
  std::vector<std::pair<double, double>> fsdp_points;
  for (const FsdpProbe* p : fsdp_probes) {
    if (!p->step_host_s.empty()) fsdp_points.emplace_back(p->tensors, modeling::Median(p->step_host_s));
  }
  if (!optimizer_per_tensor.empty()) {
    hw.optimizer_host.per_tensor_s = modeling::Median(optimizer_per_tensor);
    host_parts.push_back(absl::StrFormat("optimizer step %.1f us per tensor",
                                         hw.optimizer_host.per_tensor_s * 1e6));
  }
  if (!fsdp_points.empty()) {
    hw.fsdp_optimizer_host = FitStepHost(fsdp_points);
    host_parts.push_back(absl::StrFormat("%.2f ms + %.1f us under FSDP",
                                         hw.fsdp_optimizer_host.fixed_s * 1e3,
                                         hw.fsdp_optimizer_host.per_tensor_s * 1e6));
  }
  if (const auto factor = SideBySideHostFactor(plain_by_ranks)) {
    hw.side_by_side_host_factor = *factor;
    host_parts.push_back(absl::StrFormat("%.2fx per rank side by side", *factor));
  }
  if (!rank_cv.empty()) {
    // Measured where it acts; one process's 95th percentile is a stand-in.
    hw.host_step_cv = modeling::Median(rank_cv);
    host_parts.push_back(
        absl::StrFormat("rank-to-rank spread %.0f %% of ranks in step", 100 * hw.host_step_cv));
  } else if (!step_cv.empty()) {
    hw.host_step_cv = modeling::Median(step_cv);
    host_parts.push_back(absl::StrFormat("pass-to-pass spread %.0f %%", 100 * hw.host_step_cv));
  }
  std::string framework_note =
      host_parts.empty() ? "" : absl::StrCat(" (host ", absl::StrJoin(host_parts, ", "), ")");
  if (!elementwise_gbps.empty()) {
    hw.elementwise_bandwidth_gbps = modeling::Median(elementwise_gbps);
    absl::StrAppendFormat(&framework_note, " (elementwise kernels at %.0f GB/s)",
                          hw.elementwise_bandwidth_gbps);
  } else if (kokkos.elementwise_gbps > 0) {
    // No framework measurement: the Kokkos layer norm / softmax / bias + GeLU kernels
    // are closer to training's elementwise work than a copy.
    hw.elementwise_bandwidth_gbps = kokkos.elementwise_gbps;
  }
  if (kokkos.optimizer_gbps > 0 || kokkos.elementwise_gbps > 0) {
    std::vector<std::string> parts;
    if (kokkos.optimizer_gbps > 0)
      parts.push_back(absl::StrFormat("optimizer at %.0f GB/s", kokkos.optimizer_gbps));
    if (kokkos.elementwise_gbps > 0 && elementwise_gbps.empty())
      parts.push_back(absl::StrFormat("elementwise at %.0f GB/s", kokkos.elementwise_gbps));
    if (!parts.empty()) {
      absl::StrAppend(&framework_note, " (", absl::StrJoin(parts, ", "),
                      " from the Kokkos device probes)");
    }
  }

  // Collectives: least-squares fit of t = alpha + beta * bytes per (op, scope,
  // ranks); busbw = f(n) / beta; inter-node busbw per rail (per GPU of a node).
  struct Acc {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    int gpus_per_node = 1;
  };
  std::map<std::tuple<int, int, int>, Acc> acc;
  i = 0;
  for (const json& c : section("collectives")) {
    const std::string path = absl::StrCat("$.collectives[", i++, "]");
    if (!c.is_object()) return ReportError(source_name, path, "not an object");
    auto op = ParseOp(c.value("op", std::string()));
    if (!op) continue;
    const std::string scope_s = c.value("scope", std::string("intra_node"));
    const FabricScope scope =
        scope_s == "inter_node" ? FabricScope::kInterNode : FabricScope::kIntraNode;
    const int ranks = c.value("ranks", 0);
    const int nodes = std::max(1, c.value("nodes", 1));
    const double bytes = c.value("bytes", 0.0), t = c.value("median_s", 0.0);
    if (ranks < 2 || bytes <= 0 || t <= 0) {
      return ReportError(source_name, path, "needs ranks >= 2, bytes > 0 and median_s > 0");
    }
    Acc& a = acc[{static_cast<int>(*op), static_cast<int>(scope), ranks}];
    a.sx += bytes;
    a.sy += t;
    a.sxx += bytes * bytes;
    a.sxy += bytes * t;
    ++a.n;
    a.gpus_per_node = std::max(1, ranks / nodes);
  }
  for (const auto& [key, a] : acc) {
    const auto [op_i, scope_i, ranks] = key;
    const CollectiveOp op = static_cast<CollectiveOp>(op_i);
    double alpha, beta;
    const double den = a.n * a.sxx - a.sx * a.sx;
    if (a.n >= 2 && den > 0) {
      beta = (a.n * a.sxy - a.sx * a.sy) / den;
      alpha = (a.sy - beta * a.sx) / a.n;
    } else {
      alpha = 0;
      beta = a.sy / a.sx;
    }
    if (beta <= 0) {  // flat in size (latency-bound only): take the mean as latency
      alpha = a.sy / a.n;
      beta = 1e-12;
    }
    alpha = std::max(0.0, alpha);
    double busbw = BusFactor(op, ranks) / beta / 1e9;
    if (static_cast<FabricScope>(scope_i) == FabricScope::kInterNode &&
        op != CollectiveOp::kSendRecv) {
      busbw /= a.gpus_per_node;
    }
    hw.collectives.push_back({op, static_cast<FabricScope>(scope_i), ranks, alpha, busbw});
  }
  // Rank-count extrapolation: where latency was measured at three or more rank
  // counts of one op and scope, an Extra-P PMNF fit (xdeep::modeling) of
  // latency over ranks extends it to 65536 ranks, in powers of two, instead
  // of the straight-line extrapolation the interpolation would do; bandwidth
  // stays at the largest measured rank count's.
  std::string extrapolated;
  {
    std::map<std::pair<int, int>, std::vector<const CollectiveFit*>> groups;
    for (const CollectiveFit& f : hw.collectives) {
      groups[{static_cast<int>(f.op), static_cast<int>(f.scope)}].push_back(&f);
    }
    std::vector<CollectiveFit> extra;
    for (auto& [key, fits] : groups) {
      if (fits.size() < 3) continue;
      std::sort(fits.begin(), fits.end(),
                [](const CollectiveFit* a, const CollectiveFit* b) { return a->ranks < b->ranks; });
      std::vector<double> x, y;
      for (const CollectiveFit* f : fits) {
        x.push_back(f->ranks);
        y.push_back(f->latency_s);
      }
      // xdeep's default modeler: Extra-P's model unless the robust one
      // extrapolates clearly better (tuner/modeling/model_selection.h).
      auto selected = modeling::FitCurveSelected(x, y);
      if (!selected.ok()) continue;  // keep the interpolation's extrapolation
      const modeling::Model* model = &selected->model;
      const CollectiveFit& last = *fits.back();
      double floor = last.latency_s;
      for (int r = 2 * last.ranks; r <= 65536; r *= 2) {
        // Never below the largest measurement: latency does not fall with ranks.
        floor = std::max(floor, model->Evaluate(static_cast<double>(r)));
        extra.push_back({last.op, last.scope, r, floor, last.busbw_gbps});
      }
      // Every fitted model in the label: expression, modeler, CV error.
      static const std::string kRanks[] = {"ranks"};
      static constexpr const char* kOpNames[] = {"all_reduce", "all_gather", "reduce_scatter",
                                                 "send_recv"};  // CollectiveOp's order
      absl::StrAppend(&extrapolated, extrapolated.empty() ? "" : "; ",
                      kOpNames[static_cast<int>(last.op)],
                      last.scope == FabricScope::kIntraNode ? " intra-node" : " inter-node",
                      " past ", last.ranks, " ranks: ", selected->Explain(kRanks));
    }
    hw.collectives.insert(hw.collectives.end(), extra.begin(), extra.end());
  }
  // Whatever the report lacks comes from the closest built-in profile, and the
  // label says so.
  const bool has_intra =
      std::any_of(hw.collectives.begin(), hw.collectives.end(),
                  [](const CollectiveFit& f) { return f.scope == FabricScope::kIntraNode; });
  const bool has_inter =
      std::any_of(hw.collectives.begin(), hw.collectives.end(),
                  [](const CollectiveFit& f) { return f.scope == FabricScope::kInterNode; });
  hw.fabric = DefaultFabricFor(hw.gpu_name);
  std::string filled;
  if (!has_intra || !has_inter || hw.memory_bandwidth_gbps <= 0) {
    const BuiltinSpec* base = &kBuiltins[0];
    if (absl::StrContains(hw.gpu_name, "H200")) base = &kBuiltins[1];
    if (absl::StrContains(hw.gpu_name, "A100"))
      base = hw.memory_bytes < (int64_t{50} << 30) ? &kBuiltins[3] : &kBuiltins[2];
    const HardwareProfile ref = FromSpec(*base);
    std::vector<std::string> what;
    for (const CollectiveFit& f : ref.collectives) {
      if ((f.scope == FabricScope::kIntraNode && !has_intra) ||
          (f.scope == FabricScope::kInterNode && !has_inter)) {
        hw.collectives.push_back(f);
      }
    }
    if (!has_intra) what.push_back("intra-node collectives");

    if (hw.memory_bandwidth_gbps <= 0) {
      hw.memory_bandwidth_gbps = ref.memory_bandwidth_gbps;
      what.push_back("memory bandwidth");
    }
    if (!what.empty()) {
      filled =
          absl::StrCat(" (", absl::StrJoin(what, ", "), " from built-in profile ", base->name, ")");
    }
  }
  if (!has_inter) {
    absl::StrAppend(&filled, " (inter-node collectives from the fabric model, ", hw.fabric.name,
                    ")");
  }
  if (!extrapolated.empty()) {
    extrapolated =
        absl::StrCat(" (collective latency extrapolated by a PMNF fit: ", extrapolated, ")");
  }
  FitGemmModels(&hw);
  const GemmFit& bf16 = hw.gemm_fits[static_cast<int>(DType::kBf16)];
  const std::string gemm_note =
      bf16.points > 0 ? absl::StrCat(" (bf16 GEMM model ", bf16.note, ")") : "";
  hw.date += filled + extrapolated + framework_note + gemm_note;
  return hw;
}

// The path of the first floating-point number of `j` outside +-2^31, if any.
// json::value() casts a float read into an integer field without a range
// check, undefined past the integer's range (found by fuzz_probe_report); no
// measured figure comes near 2^31 unless written as an integer.
std::optional<std::string> OutOfRangeNumber(const json& j, const std::string& path) {
  if (j.is_number_float()) {
    return std::fabs(j.get<double>()) < 2147483648.0 ? std::nullopt : std::optional(path);
  }
  int i = 0;
  for (auto it = j.begin(); (j.is_object() || j.is_array()) && it != j.end(); ++it, ++i) {
    const std::string where =
        j.is_object() ? absl::StrCat(path, ".", it.key()) : absl::StrCat(path, "[", i, "]");
    if (auto bad = OutOfRangeNumber(*it, where)) return bad;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<HardwareProfile> HardwareProfileFromProbeReport(std::string_view json_text,
                                                               std::string_view source_view) {
  const std::string source_name(source_view);
  const json doc = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (auto bad = doc.is_discarded() ? std::nullopt : OutOfRangeNumber(doc, "$")) {
    return ReportError(source_name, *bad, "number out of range; pass the file xdeep-probe wrote");
  }
  // json::value() throws where a field holds another type than its default
  // (found by tests/fuzz/fuzz_probe_report): a bad report, not a crash.
  try {
    return ProfileFromReport(json_text, source_name);
  } catch (const json::exception& e) {
    return ReportError(source_name, "$",
                       absl::StrCat("a field has the wrong type (", e.what(),
                                    "); pass the file xdeep-probe wrote, unedited"));
  }
}

absl::StatusOr<HeuristicAnswers> HeuristicAnswersFromProbeReport(std::string_view json_text,
                                                                 std::string_view source_view) {
  const std::string source_name(source_view);
  const json doc = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return ReportError(source_name, "$", "not a JSON object; pass the file xdeep-probe wrote");
  }
  if (auto bad = OutOfRangeNumber(doc, "$")) {
    return ReportError(source_name, *bad, "number out of range; pass the file xdeep-probe wrote");
  }
  if (doc.value("schema", json()) != "xdeep.probe_report/1") {
    return ReportError(source_name, "$.schema",
                       "unknown or missing schema; expected \"xdeep.probe_report/1\"");
  }
  try {
    HeuristicAnswers out;
    out.key = HeuristicKey(doc);
    auto answers = HeuristicAnswersOf(doc.value("gemm_algos", json()), source_name);
    if (!answers.ok()) return answers.status();
    out.answers = *std::move(answers);
    return out;
  } catch (const json::exception& e) {
    return ReportError(source_name, "$",
                       absl::StrCat("a field has the wrong type (", e.what(),
                                    "); pass the file xdeep-probe wrote, unedited"));
  }
}

void SetHeuristicAnswers(HardwareProfile* hw, std::vector<GemmPoint> answers) {
  hw->gemm_heuristic = std::move(answers);
  hw->gemm_kernels = GemmKernelTable::Build(hw->gemm, hw->gemm_heuristic, GemmFitStart(*hw));
}

}  // namespace xdeep::tuner
