// [parallel] table of a workload (see parallel_constraints.h, parallel_table.h).
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tuner/parallel_table.h"

namespace xdeep::tuner {
namespace {

// sp: Megatron sequence parallelism inside the tensor-parallel group; cp:
// context parallelism (the sequence split across ranks, attention over all).
const std::vector<std::string> kStrategies = {"dp",    "tp",    "pp",    "sp",  "cp",
                                              "zero1", "zero2", "zero3", "fsdp"};
const std::vector<std::string> kShardings = {"none", "zero1", "zero2", "zero3", "fsdp"};

absl::Status Error(std::string_view source, const toml::node* node, std::string_view what,
                   std::string_view fix) {
  const int line = node != nullptr ? static_cast<int>(node->source().begin.line) : 1;
  return absl::InvalidArgumentError(absl::StrCat(std::string(source), ":", line, ": ",
                                                 std::string(what), "; ", std::string(fix)));
}

absl::Status ReadList(const toml::table& table, std::string_view source, const char* key,
                      const std::vector<std::string>& allowed, std::vector<std::string>* out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return absl::OkStatus();
  const toml::array* list = node->as_array();
  const std::string fix = absl::StrCat("write e.g. ", key, " = [\"", allowed[0],
                                       "\"] with names from ", absl::StrJoin(allowed, ", "));
  if (list == nullptr || list->empty()) {
    return Error(source, node, absl::StrCat("'", key, "' must be a non-empty list of names"), fix);
  }
  for (const toml::node& item : *list) {
    auto name = item.value_exact<std::string>();
    if (!name || std::find(allowed.begin(), allowed.end(), *name) == allowed.end()) {
      return Error(source, &item,
                   absl::StrCat("unknown name in '", key, "'",
                                name ? absl::StrCat(": '", *name, "'") : std::string()),
                   fix);
    }
    out->push_back(*name);
  }
  return absl::OkStatus();
}

absl::Status ReadDegree(const toml::table& table, std::string_view source, const char* key,
                        int* out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return absl::OkStatus();
  auto v = node->value_exact<int64_t>();
  if (!v || *v < 1 || *v > 4096) {
    return Error(source, node, absl::StrCat("'", key, "' must be a whole number from 1 to 4096"),
                 absl::StrCat("write e.g. ", key, " = 2"));
  }
  *out = static_cast<int>(*v);
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckStrategyNames(const std::vector<std::string>& names, std::string_view where) {
  for (const std::string& n : names) {
    if (std::find(kStrategies.begin(), kStrategies.end(), n) == kStrategies.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown strategy '", n, "' in ",
                                                     std::string(where), "; use ",
                                                     absl::StrJoin(kStrategies, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseParallelTable(const toml::table& table, std::string_view source,
                                ParallelConstraints* out) {
  const std::set<std::string> keys = {
      "strategies", "tp",       "max_tp",    "pp",      "max_pp", "cp", "max_cp",
      "sharding",   "pipeline_schedule", "recompute", "launcher"};
  for (const auto& [key, node] : table) {
    if (!keys.count(std::string(key.str()))) {
      return Error(source, &node,
                   absl::StrCat("unknown key '", std::string(key.str()), "' in [parallel]"),
                   absl::StrCat("use one of: ", absl::StrJoin(keys, ", ")));
    }
  }
  ParallelConstraints p;
  if (auto s = ReadList(table, source, "strategies", kStrategies, &p.strategies); !s.ok()) return s;
  if (auto s = ReadList(table, source, "sharding", kShardings, &p.sharding); !s.ok()) return s;
  for (auto [key, target] : {std::pair{"tp", &p.tp},
                             {"max_tp", &p.max_tp},
                             {"pp", &p.pp},
                             {"max_pp", &p.max_pp},
                             {"cp", &p.cp},
                             {"max_cp", &p.max_cp}}) {
    if (auto s = ReadDegree(table, source, key, target); !s.ok()) return s;
  }
  for (auto [fixed, most, name] :
       {std::tuple{p.tp, p.max_tp, "tp"}, {p.pp, p.max_pp, "pp"}, {p.cp, p.max_cp, "cp"}}) {
    if (fixed > 0 && most > 0) {
      return Error(source, table.get(name),
                   absl::StrCat("give either '", name, "' or 'max_", name, "', not both"),
                   absl::StrCat("'", name, "' fixes the degree, 'max_", name, "' bounds it"));
    }
  }
  auto has = [&](const char* s) {
    return std::find(p.strategies.begin(), p.strategies.end(), s) != p.strategies.end();
  };
  const char* missing = p.strategies.empty()     ? nullptr
                        : p.tp > 1 && !has("tp") ? "tp"
                        : p.pp > 1 && !has("pp") ? "pp"
                        : p.cp > 1 && !has("cp") ? "cp"
                                                 : nullptr;
  if (missing != nullptr) {
    return Error(source, table.get(missing),
                 "a degree above 1 for a strategy that 'strategies' leaves out",
                 "add it to strategies or remove the degree");
  }
  if (const toml::node* n = table.get("pipeline_schedule")) {
    auto v = n->value_exact<std::string>();
    if (!v || (*v != "1f1b" && *v != "interleaved")) {
      return Error(source, n, "'pipeline_schedule' must be \"1f1b\" or \"interleaved\"",
                   "write the schedule your pipeline implements, or leave it out for either");
    }
    p.pipeline_schedule = *v;
  }
  if (const toml::node* n = table.get("recompute")) {
    auto v = n->value_exact<bool>();
    auto mode = n->value_exact<std::string>();
    if (!v && !(mode && *mode == "selective")) {
      return Error(source, n, "'recompute' must be true, false or \"selective\"",
                   "true: always recompute activations; false: never; \"selective\": only the "
                   "attention core (Megatron's --recompute-activations); leave it out for any");
    }
    p.recompute = v ? (*v ? "on" : "off") : "selective";
  }
  if (const toml::node* n = table.get("launcher")) {
    auto v = n->value_exact<std::string>();
    if (!v || (*v != "srun" && *v != "torchrun" && *v != "accelerate" && *v != "deepspeed")) {
      return Error(source, n,
                   "'launcher' must be \"srun\", \"torchrun\", \"accelerate\" or \"deepspeed\"",
                   "name what starts the training processes (srun: one task per GPU)");
    }
    p.launcher = *v;
  }
  *out = std::move(p);
  return absl::OkStatus();
}

}  // namespace xdeep::tuner
