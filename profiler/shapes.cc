// The workload's GEMM shapes.
#include "profiler/shapes.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace xdeep::profiler {
namespace {

absl::StatusOr<int64_t> Positive(absl::string_view s, absl::string_view what) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || v <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("bad ", what, " '", s, "'"));
  }
  return v;
}

}  // namespace

std::vector<GemmSpec> LayerGemms(const std::string& name, int64_t tokens, int64_t in, int64_t out) {
  return {GemmSpec{tokens, out, in, "fwd", name}, GemmSpec{tokens, in, out, "dgrad", name},
          GemmSpec{out, in, tokens, "wgrad", name}};
}

absl::StatusOr<GemmSpec> ParseGemmArg(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, 'x');
  if (parts.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat("GEMM shape '", text, "' is not MxNxK"));
  }
  GemmSpec g;
  absl::StatusOr<int64_t> m = Positive(parts[0], "m"), n = Positive(parts[1], "n"),
                          k = Positive(parts[2], "k");
  if (!m.ok()) return m.status();
  if (!n.ok()) return n.status();
  if (!k.ok()) return k.status();
  g.m = *m, g.n = *n, g.k = *k;
  return g;
}

absl::StatusOr<std::vector<GemmSpec>> ParseLayerArg(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 4 || parts[0].empty()) {
    return absl::InvalidArgumentError(absl::StrCat("layer '", text, "' is not name:tokens:in:out"));
  }
  absl::StatusOr<int64_t> t = Positive(parts[1], "tokens"), i = Positive(parts[2], "in"),
                          o = Positive(parts[3], "out");
  if (!t.ok()) return t.status();
  if (!i.ok()) return i.status();
  if (!o.ok()) return o.status();
  return LayerGemms(std::string(parts[0]), *t, *i, *o);
}

absl::StatusOr<AttentionSpec> ParseAttentionArg(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() < 4 || parts.size() > 5 || (parts.size() == 5 && parts[4] != "causal")) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention '", text, "' is not batch:heads:seq:head_dim[:causal]"));
  }
  AttentionSpec a;
  int64_t* fields[] = {&a.batch, &a.heads, &a.seq, &a.head_dim};
  const char* names[] = {"batch", "heads", "seq", "head_dim"};
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<int64_t> v = Positive(parts[i], names[i]);
    if (!v.ok()) return v.status();
    *fields[i] = *v;
  }
  a.causal = parts.size() == 5;
  return a;
}

absl::StatusOr<ShapeSet> ParseShapesJson(const std::string& text) {
  using nlohmann::json;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return absl::InvalidArgumentError("shapes file is not a JSON object");
  if (j.value("schema", std::string()) != kShapesSchema) {
    return absl::InvalidArgumentError(
        absl::StrCat("shapes file schema must be '", kShapesSchema, "'"));
  }
  ShapeSet set;
  auto get_int = [](const json& o, const char* key, int64_t* out) {
    if (!o.contains(key) || !o[key].is_number_integer() || o[key].get<int64_t>() <= 0) return false;
    *out = o[key].get<int64_t>();
    return true;
  };
  for (const json& d : j.value("dtypes", json::array())) {
    if (!d.is_string()) return absl::InvalidArgumentError("dtypes must be strings");
    absl::StatusOr<DType> t = ParseDType(d.get<std::string>());
    if (!t.ok()) return t.status();
    set.dtypes.push_back(*t);
  }
  int idx = 0;
  for (const json& l : j.value("layers", json::array())) {
    int64_t tokens, in, out;
    if (!get_int(l, "tokens", &tokens) || !get_int(l, "in", &in) || !get_int(l, "out", &out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("layers[", idx, "] needs positive tokens, in, out"));
    }
    const std::string name = l.value("name", absl::StrCat("layer", idx));
    for (GemmSpec& g : LayerGemms(name, tokens, in, out)) set.gemms.push_back(g);
    ++idx;
  }
  idx = 0;
  for (const json& g : j.value("gemms", json::array())) {
    GemmSpec s;
    if (!get_int(g, "m", &s.m) || !get_int(g, "n", &s.n) || !get_int(g, "k", &s.k)) {
      return absl::InvalidArgumentError(absl::StrCat("gemms[", idx, "] needs positive m, n, k"));
    }
    s.layer = g.value("label", std::string());
    // How the operands are stored (GemmSpec::pass); a check shape keeps its layer's pass.
    s.pass = g.value("pass", std::string("plain"));
    if (s.pass != "fwd" && s.pass != "dgrad" && s.pass != "wgrad" && s.pass != "plain") {
      return absl::InvalidArgumentError(
          absl::StrCat("gemms[", idx, "].pass must be fwd, dgrad, wgrad or plain"));
    }
    if (g.contains("dtype")) {
      absl::StatusOr<DType> d =
          g["dtype"].is_string() ? ParseDType(g["dtype"].get<std::string>())
                                 : absl::InvalidArgumentError("not a string");
      if (!d.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("gemms[", idx, "].dtype: ", d.status().message()));
      }
      s.dtype = *d;
    }
    set.gemms.push_back(s);
    ++idx;
  }
  idx = 0;
  for (const json& a : j.value("attention", json::array())) {
    AttentionSpec s;
    if (!get_int(a, "batch", &s.batch) || !get_int(a, "heads", &s.heads) ||
        !get_int(a, "seq", &s.seq) || !get_int(a, "head_dim", &s.head_dim)) {
      return absl::InvalidArgumentError(
          absl::StrCat("attention[", idx, "] needs positive batch, heads, seq, head_dim"));
    }
    s.causal = a.value("causal", false);
    set.attention.push_back(s);
    ++idx;
  }
  if (set.gemms.empty() && set.attention.empty()) {
    return absl::InvalidArgumentError("shapes file lists no layers, gemms or attention");
  }
  return set;
}

absl::StatusOr<ShapeSet> ReadShapesFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open shapes file ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseShapesJson(ss.str());
}

}  // namespace xdeep::profiler
