// The probe report: JSON conversion and files.
#include "profiler/report.h"

#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "profiler/atomic_file.h"

namespace xdeep::profiler {
namespace {

using nlohmann::json;

// The shape fields of a framework entry's network (model gpt or resnet), by
// JSON key: one list for writing and reading.
template <typename Entry>  // FrameworkEntry, const or not
auto ShapeFields(Entry& e) {
  std::vector<std::pair<const char*, decltype(&e.batch)>> f = {{"batch", &e.batch}};
  if (e.model == "resnet") {
    f.insert(f.end(), {{"depth", &e.depth}, {"image", &e.image}, {"classes", &e.classes}});
  } else {
    f.insert(f.end(), {{"layers", &e.layers},
                       {"hidden", &e.hidden},
                       {"heads", &e.heads},
                       {"ffn", &e.ffn},
                       {"seq", &e.seq},
                       {"vocab", &e.vocab}});
  }
  return f;
}

// A framework entry's optional times, by JSON key (0: not measured).
template <typename Entry>
auto OptionalTimes(Entry& e) {
  return std::array{
      std::pair{"ddp_median_s", &e.ddp_median_s}, std::pair{"fsdp_median_s", &e.fsdp_median_s},
      std::pair{"step_host_s", &e.step_host_s}, std::pair{"fsdp_step_host_s", &e.fsdp_step_host_s},
      std::pair{"elementwise_s", &e.elementwise_s}, std::pair{"tp_median_s", &e.tp_median_s},
      std::pair{"tp_step_host_s", &e.tp_step_host_s}, std::pair{"attention_s", &e.attention_s},
      std::pair{"loss_s", &e.loss_s}, std::pair{"llama_median_s", &e.llama_median_s},
      std::pair{"llama_tp_median_s", &e.llama_tp_median_s},
      std::pair{"late_median_s", &e.late_median_s}, std::pair{"late_min_s", &e.late_min_s},
      std::pair{"late_p95_s", &e.late_p95_s}, std::pair{"late_after_s", &e.late_after_s},
      std::pair{"hf_gpt_median_s", &e.hf_gpt_median_s},
      std::pair{"hf_gpt2_median_s", &e.hf_gpt2_median_s},
      std::pair{"hf_gpt2_min_s", &e.hf_gpt2_min_s},
      std::pair{"hf_gpt2_step_host_s", &e.hf_gpt2_step_host_s},
      std::pair{"hf_llama_median_s", &e.hf_llama_median_s},
      std::pair{"hf_llama_min_s", &e.hf_llama_min_s},
      std::pair{"hf_llama_step_host_s", &e.hf_llama_step_host_s},
      std::pair{"hf_gpt_neox_median_s", &e.hf_gpt_neox_median_s},
      std::pair{"hf_gpt_neox_min_s", &e.hf_gpt_neox_min_s},
      std::pair{"hf_gpt_neox_step_host_s", &e.hf_gpt_neox_step_host_s}};
}

// Its optional counts, by JSON key (0: not measured).
template <typename Entry>
auto OptionalCounts(Entry& e) {
  return std::array{std::pair{"tp_linears", &e.tp_linears},
                    std::pair{"llama_tp_linears", &e.llama_tp_linears},
                    std::pair{"module_calls", &e.module_calls},
                    std::pair{"hf_gpt2_kernels", &e.hf_gpt2_kernels},
                    std::pair{"hf_gpt2_module_calls", &e.hf_gpt2_module_calls},
                    std::pair{"hf_llama_kernels", &e.hf_llama_kernels},
                    std::pair{"hf_llama_module_calls", &e.hf_llama_module_calls},
                    std::pair{"hf_gpt_neox_kernels", &e.hf_gpt_neox_kernels},
                    std::pair{"hf_gpt_neox_module_calls", &e.hf_gpt_neox_module_calls}};
}

// Thrown inside this file only and turned into a Status at the boundary.
struct FieldError {
  std::string message;
};

const json& Field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw FieldError{absl::StrCat(where, ": missing '", key, "'")};
  return j.at(key);
}

double Num(const json& j, const char* key, const std::string& where) {
  const json& v = Field(j, key, where);
  if (!v.is_number()) throw FieldError{absl::StrCat(where, ".", key, ": not a number")};
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0)
    throw FieldError{absl::StrCat(where, ".", key, ": negative or not finite")};
  return d;
}

int64_t Int(const json& j, const char* key, const std::string& where) {
  const json& v = Field(j, key, where);
  if (!v.is_number_integer()) throw FieldError{absl::StrCat(where, ".", key, ": not an integer")};
  const int64_t i = v.get<int64_t>();
  if (i < 0) throw FieldError{absl::StrCat(where, ".", key, ": negative")};
  return i;
}

// An integer field held in an int (counts of GPUs, ranks, nodes): larger
// values would not survive the cast (found by fuzz_probe_report).
int Count(const json& j, const char* key, const std::string& where) {
  const int64_t i = Int(j, key, where);
  if (i > std::numeric_limits<int>::max()) throw FieldError{absl::StrCat(where, ".", key, ": too large")};
  return static_cast<int>(i);
}

std::string Str(const json& j, const char* key, const std::string& where) {
  const json& v = Field(j, key, where);
  if (!v.is_string()) throw FieldError{absl::StrCat(where, ".", key, ": not a string")};
  return v.get<std::string>();
}

std::string OptStr(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : "";
}

void OneOf(const std::string& value, std::initializer_list<const char*> allowed,
           const std::string& where) {
  for (const char* a : allowed) {
    if (value == a) return;
  }
  throw FieldError{absl::StrCat(where, ": unexpected value '", value, "'")};
}

void PutTiming(json& j, const Timing& t) {
  j["median_s"] = t.median_s;
  j["min_s"] = t.min_s;
  j["p95_s"] = t.p95_s;
  j["spread"] = t.spread;
  j["iterations"] = t.iterations;
}

Timing GetTiming(const json& j, const std::string& where) {
  Timing t;
  t.median_s = Num(j, "median_s", where);
  t.min_s = Num(j, "min_s", where);
  t.p95_s = Num(j, "p95_s", where);
  t.spread = Num(j, "spread", where);
  t.iterations = Int(j, "iterations", where);
  if (t.median_s <= 0) throw FieldError{absl::StrCat(where, ".median_s: must be positive")};
  return t;
}

const json& Array(const json& j, const char* key) {
  static const json kEmpty = json::array();
  if (!j.contains(key)) return kEmpty;
  if (!j.at(key).is_array()) throw FieldError{absl::StrCat("'", key, "' is not an array")};
  return j.at(key);
}

json KernelJson(const GemmKernel& k) {
  return {{"algo", k.algo},        {"tile_id", k.tile_id},     {"stages_id", k.stages_id},
          {"swizzle", k.swizzle},  {"reduction", k.reduction}, {"tile_m", k.tile_m},
          {"tile_n", k.tile_n},    {"split_k", k.split_k},     {"cluster_m", k.cluster_m},
          {"cluster_n", k.cluster_n}};
}

GemmKernel KernelFrom(const json& o, const std::string& where) {
  GemmKernel k;
  const std::string w = where + ".kernel";
  const json& j = Field(o, "kernel", where);
  k.algo = Count(j, "algo", w);
  k.tile_id = Count(j, "tile_id", w);
  k.stages_id = Count(j, "stages_id", w);
  k.swizzle = Count(j, "swizzle", w);
  k.reduction = Count(j, "reduction", w);
  k.tile_m = Count(j, "tile_m", w);
  k.tile_n = Count(j, "tile_n", w);
  k.split_k = Count(j, "split_k", w);
  k.cluster_m = Count(j, "cluster_m", w);
  k.cluster_n = Count(j, "cluster_n", w);
  return k;
}

json GemmShapeJson(const GemmEntry& e) {
  json o = {{"m", e.m}, {"n", e.n}, {"k", e.k}, {"dtype", e.dtype}, {"pass", e.pass}};
  if (!e.layer.empty()) o["layer"] = e.layer;
  if (e.kernel.known()) o["kernel"] = KernelJson(e.kernel);
  return o;
}

GemmEntry GemmShapeFrom(const json& o, const std::string& w) {
  GemmEntry e;
  e.m = Int(o, "m", w);
  e.n = Int(o, "n", w);
  e.k = Int(o, "k", w);
  e.dtype = Str(o, "dtype", w);
  OneOf(e.dtype, {"bf16", "fp16", "tf32", "fp32"}, w + ".dtype");
  e.pass = Str(o, "pass", w);
  OneOf(e.pass, {"fwd", "dgrad", "wgrad", "plain"}, w + ".pass");
  e.layer = OptStr(o, "layer");
  if (o.contains("kernel")) e.kernel = KernelFrom(o, w);
  return e;
}

}  // namespace

Timing TimingFrom(const ProbeResult& r) {
  return Timing{r.per_op.median, r.per_op.min, r.per_op.p95, r.per_op.spread, r.operations};
}

Report NewReport() {
  Report r;
  r.created = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) r.host = host;
  return r;
}

absl::StatusOr<Report> MergeReports(const std::vector<Report>& reports) {
  if (reports.empty()) return absl::InvalidArgumentError("nothing to merge");
  Report out = NewReport();
  out.host = reports.front().host;
  out.nodes = out.ranks = 0;
  for (const Report& r : reports) {
    if (r.gpu) {
      if (out.gpu && out.gpu->name != r.gpu->name) {
        return absl::InvalidArgumentError(absl::StrCat("reports are from different GPUs: '",
                                                       out.gpu->name, "' and '", r.gpu->name, "'"));
      }
      if (!out.gpu || r.gpu->count > out.gpu->count) out.gpu = r.gpu;
    }
    for (const auto& [k, v] : r.versions) {
      auto [it, inserted] = out.versions.emplace(k, v);
      if (!inserted && it->second != v) it->second += "," + v;
    }
    out.nodes = std::max(out.nodes, r.nodes);
    out.ranks = std::max(out.ranks, r.ranks);
    out.gpus_per_node = std::max(out.gpus_per_node, r.gpus_per_node);
    out.elapsed_s += r.elapsed_s;
    out.gemm.insert(out.gemm.end(), r.gemm.begin(), r.gemm.end());
    out.gemm_algos.insert(out.gemm_algos.end(), r.gemm_algos.begin(), r.gemm_algos.end());
    out.attention.insert(out.attention.end(), r.attention.begin(), r.attention.end());
    out.bandwidth.insert(out.bandwidth.end(), r.bandwidth.begin(), r.bandwidth.end());
    out.collectives.insert(out.collectives.end(), r.collectives.begin(), r.collectives.end());
    out.framework.insert(out.framework.end(), r.framework.begin(), r.framework.end());
    out.errors.insert(out.errors.end(), r.errors.begin(), r.errors.end());
  }
  return out;
}

nlohmann::json ToJson(const Report& r) {
  json j;
  j["schema"] = r.schema;
  j["created"] = r.created;
  j["host"] = r.host;
  if (r.gpu) {
    j["gpu"] = {{"name", r.gpu->name},
                {"count", r.gpu->count},
                {"memory_bytes", r.gpu->memory_bytes},
                {"sm_count", r.gpu->sm_count},
                {"compute_capability", r.gpu->compute_capability}};
  }
  j["versions"] = r.versions;
  j["nodes"] = r.nodes;
  j["ranks"] = r.ranks;
  j["gpus_per_node"] = r.gpus_per_node;
  j["elapsed_s"] = r.elapsed_s;
  j["gemm"] = json::array();
  for (const GemmEntry& e : r.gemm) {
    json o = GemmShapeJson(e);
    PutTiming(o, e.timing);
    o["tflops"] = e.tflops;
    j["gemm"].push_back(o);
  }
  if (!r.gemm_algos.empty()) {
    j["gemm_algos"] = json::array();
    for (const GemmEntry& e : r.gemm_algos) j["gemm_algos"].push_back(GemmShapeJson(e));
  }
  j["attention"] = json::array();
  for (const AttentionEntry& e : r.attention) {
    json o = {{"batch", e.batch},       {"heads", e.heads}, {"seq", e.seq},
              {"head_dim", e.head_dim}, {"dtype", e.dtype}, {"causal", e.causal}};
    PutTiming(o, e.timing);
    o["tflops"] = e.tflops;
    j["attention"].push_back(o);
  }
  j["bandwidth"] = json::array();
  for (const BandwidthEntry& e : r.bandwidth) {
    json o = {{"kernel", e.kernel}, {"space", e.space}, {"backend", e.backend}, {"bytes", e.bytes}};
    PutTiming(o, e.timing);
    o["gbps"] = e.gbps;
    j["bandwidth"].push_back(o);
  }
  j["collectives"] = json::array();
  for (const CollectiveEntry& e : r.collectives) {
    json o = {{"op", e.op},       {"ranks", e.ranks}, {"nodes", e.nodes},
              {"scope", e.scope}, {"bytes", e.bytes}, {"dtype", e.dtype}};
    PutTiming(o, e.timing);
    o["algbw_gbps"] = e.algbw_gbps;
    o["busbw_gbps"] = e.busbw_gbps;
    j["collectives"].push_back(o);
  }
  j["framework"] = json::array();
  for (const FrameworkEntry& e : r.framework) {
    json o = {{"name", e.name},   {"version", e.version}, {"device", e.device},
              {"model", e.model}, {"ranks", e.ranks},     {"kernels", e.kernels}};
    for (auto [key, field] : ShapeFields(e)) o[key] = *field;
    PutTiming(o, e.timing);
    o["gpu_busy_fraction"] = e.gpu_busy_fraction;
    for (auto [key, field] : OptionalTimes(e)) {
      if (*field > 0) o[key] = *field;
    }
    for (auto [key, field] : OptionalCounts(e)) {
      if (*field > 0) o[key] = *field;
    }
    if (e.straggle > 0) o["straggle"] = e.straggle;
    j["framework"].push_back(o);
  }
  j["errors"] = json::array();
  for (const ErrorEntry& e : r.errors)
    j["errors"].push_back({{"probe", e.probe}, {"message", e.message}});
  return j;
}

absl::StatusOr<Report> ReportFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("report is not a JSON object");
  if (!j.contains("schema") || !j["schema"].is_string()) {
    return absl::InvalidArgumentError("report has no 'schema' string");
  }
  if (j["schema"].get<std::string>() != kReportSchema) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported report schema '",
                                                   j["schema"].get<std::string>(),
                                                   "' (this reader knows ", kReportSchema, ")"));
  }
  Report r;
  try {
    r.created = Str(j, "created", "report");
    r.host = OptStr(j, "host");
    if (j.contains("gpu") && !j["gpu"].is_null()) {
      const json& g = j["gpu"];
      GpuInfo gi;
      gi.name = Str(g, "name", "gpu");
      gi.count = Count(g, "count", "gpu");
      gi.memory_bytes = g.contains("memory_bytes") ? Int(g, "memory_bytes", "gpu") : 0;
      gi.sm_count = g.contains("sm_count") ? Count(g, "sm_count", "gpu") : 0;
      gi.compute_capability = OptStr(g, "compute_capability");
      r.gpu = gi;
    }
    if (j.contains("versions")) {
      if (!j["versions"].is_object()) throw FieldError{"'versions' is not an object"};
      for (auto& [k, v] : j["versions"].items()) {
        if (!v.is_string()) throw FieldError{absl::StrCat("versions.", k, ": not a string")};
        r.versions[k] = v.get<std::string>();
      }
    }
    r.nodes = j.contains("nodes") ? Count(j, "nodes", "report") : 1;
    r.ranks = j.contains("ranks") ? Count(j, "ranks", "report") : 1;
    r.gpus_per_node =
        j.contains("gpus_per_node") ? Count(j, "gpus_per_node", "report") : 0;
    r.elapsed_s = j.contains("elapsed_s") ? Num(j, "elapsed_s", "report") : 0;
    int i = 0;
    for (const json& o : Array(j, "gemm")) {
      const std::string w = absl::StrCat("gemm[", i++, "]");
      GemmEntry e = GemmShapeFrom(o, w);
      e.timing = GetTiming(o, w);
      e.tflops = Num(o, "tflops", w);
      r.gemm.push_back(e);
    }
    i = 0;
    for (const json& o : Array(j, "gemm_algos")) {
      const std::string w = absl::StrCat("gemm_algos[", i++, "]");
      GemmEntry e = GemmShapeFrom(o, w);
      if (!e.kernel.known()) throw FieldError{w + ": missing 'kernel'"};
      r.gemm_algos.push_back(e);
    }
    i = 0;
    for (const json& o : Array(j, "attention")) {
      const std::string w = absl::StrCat("attention[", i++, "]");
      AttentionEntry e;
      e.batch = Int(o, "batch", w);
      e.heads = Int(o, "heads", w);
      e.seq = Int(o, "seq", w);
      e.head_dim = Int(o, "head_dim", w);
      e.dtype = Str(o, "dtype", w);
      e.causal = o.value("causal", false);
      e.timing = GetTiming(o, w);
      e.tflops = Num(o, "tflops", w);
      r.attention.push_back(e);
    }
    i = 0;
    for (const json& o : Array(j, "bandwidth")) {
      const std::string w = absl::StrCat("bandwidth[", i++, "]");
      BandwidthEntry e;
      e.kernel = Str(o, "kernel", w);
      e.space = Str(o, "space", w);
      OneOf(e.space, {"device", "host"}, w + ".space");
      e.backend = Str(o, "backend", w);
      e.bytes = Int(o, "bytes", w);
      e.timing = GetTiming(o, w);
      e.gbps = Num(o, "gbps", w);
      r.bandwidth.push_back(e);
    }
    i = 0;
    for (const json& o : Array(j, "collectives")) {
      const std::string w = absl::StrCat("collectives[", i++, "]");
      CollectiveEntry e;
      e.op = Str(o, "op", w);
      OneOf(e.op,
            {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "send_recv", "all_to_all"},
            w + ".op");
      e.ranks = Count(o, "ranks", w);
      e.nodes = Count(o, "nodes", w);
      e.scope = Str(o, "scope", w);
      OneOf(e.scope, {"intra_node", "inter_node"}, w + ".scope");
      e.bytes = Int(o, "bytes", w);
      e.dtype = Str(o, "dtype", w);
      e.timing = GetTiming(o, w);
      e.algbw_gbps = Num(o, "algbw_gbps", w);
      e.busbw_gbps = Num(o, "busbw_gbps", w);
      r.collectives.push_back(e);
    }
    i = 0;
    for (const json& o : Array(j, "framework")) {
      const std::string w = absl::StrCat("framework[", i++, "]");
      FrameworkEntry e;
      e.name = Str(o, "name", w);
      e.version = OptStr(o, "version");
      if (o.contains("device")) e.device = Str(o, "device", w);
      OneOf(e.device, {"cuda", "cpu"}, w + ".device");
      e.model = Str(o, "model", w);
      OneOf(e.model, {"gpt", "resnet"}, w + ".model");
      if (o.contains("ranks")) {
        e.ranks = Count(o, "ranks", w);
        if (e.ranks < 1) throw FieldError{absl::StrCat(w, ".ranks: must be at least 1")};
      }
      for (auto [key, field] : ShapeFields(e)) {
        *field = Count(o, key, w);
        if (*field <= 0) throw FieldError{absl::StrCat(w, ".", key, ": must be positive")};
      }
      e.kernels = Int(o, "kernels", w);
      if (e.kernels <= 0) throw FieldError{absl::StrCat(w, ".kernels: must be positive")};
      e.timing = GetTiming(o, w);
      e.gpu_busy_fraction = Num(o, "gpu_busy_fraction", w);
      for (auto [key, field] : OptionalTimes(e)) {
        if (!o.contains(key)) continue;
        *field = Num(o, key, w);
        if (*field <= 0) throw FieldError{absl::StrCat(w, ".", key, ": must be positive")};
      }
      for (auto [key, field] : OptionalCounts(e)) {
        if (!o.contains(key)) continue;
        *field = Count(o, key, w);
        if (*field <= 0) throw FieldError{absl::StrCat(w, ".", key, ": must be positive")};
      }
      if (o.contains("straggle")) {
        e.straggle = Num(o, "straggle", w);
        if (!(e.straggle >= 1)) throw FieldError{absl::StrCat(w, ".straggle: must be at least 1")};
      }
      r.framework.push_back(e);
    }
    i = 0;
    for (const json& o : Array(j, "errors")) {
      const std::string w = absl::StrCat("errors[", i++, "]");
      r.errors.push_back({Str(o, "probe", w), Str(o, "message", w)});
    }
  } catch (const FieldError& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad probe report: ", e.message));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad probe report: ", e.what()));
  }
  return r;
}

absl::StatusOr<Report> ParseReport(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("probe report is not valid JSON");
  return ReportFromJson(j);
}

absl::Status WriteReport(const Report& r, const std::string& path) {
  return WriteFileAtomically(path, ToJson(r).dump(2) + "\n");
}

absl::StatusOr<Report> ReadReport(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseReport(ss.str());
}

}  // namespace xdeep::profiler
