// Strict TOML reading of the daemon configuration (see config.h).
#include "daemon/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "absl/status/status.h"
#include "tuner/toml_text.h"

namespace xdeep::daemon {
namespace {

// Reads one table against a fixed set of keys; the first problem wins.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string_view source, std::string name)
      : table_(table), source_(source), name_(std::move(name)) {}

  template <typename T>
  void Get(std::string_view key, T& out) {
    known_.emplace_back(key);
    const toml::node* node = table_.get(key);
    if (node == nullptr || !status_.ok()) return;
    if constexpr (std::is_same_v<T, std::string>) {
      if (auto v = node->value<std::string>(); v && node->is_string()) {
        out = *v;
        return;
      }
      Fail(*node, key, "a string");
    } else if constexpr (std::is_same_v<T, int>) {
      if (node->is_integer()) {
        out = static_cast<int>(*node->value<int64_t>());
        return;
      }
      Fail(*node, key, "an integer");
    } else if constexpr (std::is_same_v<T, int64_t>) {
      if (node->is_integer()) {
        out = *node->value<int64_t>();
        return;
      }
      Fail(*node, key, "an integer");
    } else if constexpr (std::is_same_v<T, double>) {
      if (node->is_number()) {
        out = *node->value<double>();
        return;
      }
      Fail(*node, key, "a number");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (node->is_boolean()) {
        out = *node->value<bool>();
        return;
      }
      Fail(*node, key, "true or false");
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      const toml::array* array = node->as_array();
      if (array != nullptr && (array->empty() || array->is_homogeneous(toml::node_type::string))) {
        out.clear();
        for (const toml::node& item : *array) out.push_back(*item.value<std::string>());
        return;
      }
      Fail(*node, key, "an array of strings");
    }
  }

  // Reads an optional value: set only when the key is present.
  template <typename T>
  void GetOptional(std::string_view key, std::optional<T>& out) {
    T value{};
    const bool present = table_.get(key) != nullptr;
    Get(key, value);
    if (present && status_.ok()) out = value;
  }

  // A key whose value is a table of named sub-tables ([policy.partition.gpu]);
  // calls `each(name, table)` for every entry.
  void Tables(std::string_view key,
              const std::function<absl::Status(const std::string&, const toml::table&)>& each) {
    known_.emplace_back(key);
    const toml::node* node = table_.get(key);
    if (node == nullptr || !status_.ok()) return;
    const toml::table* outer = node->as_table();
    if (outer == nullptr) {
      Fail(*node, key, "a table of named tables");
      return;
    }
    for (const auto& [name, inner] : *outer) {
      const toml::table* t = inner.as_table();
      if (t == nullptr) {
        status_ = absl::InvalidArgumentError(
            fmt::format("{}[{}.{}] {} must be a table: write [{}.{}.{}] and its keys below it",
                        Where(&inner), name_, key, name.str(), name_, key, name.str()));
        return;
      }
      if (absl::Status s = each(std::string(name.str()), *t); !s.ok()) {
        status_ = s;
        return;
      }
    }
  }

  // A numeric key must lie in [lo, hi].
  template <typename T>
  void Range(std::string_view key, T value, T lo, T hi) {
    if (!status_.ok() || (value >= lo && value <= hi)) return;
    const toml::node* node = table_.get(key);
    status_ = absl::InvalidArgumentError(
        fmt::format("{}[{}] {} = {} is out of range; use a value from {} to {}", Where(node), name_,
                    key, value, lo, hi));
  }

  template <typename T>
  void Range(std::string_view key, const std::optional<T>& value, T lo, T hi) {
    if (value) Range(key, *value, lo, hi);
  }

  // A string key must be one of `allowed`.
  void OneOf(std::string_view key, const std::optional<std::string>& value,
             const std::vector<std::string>& allowed) {
    if (value) OneOf(key, *value, allowed);
  }
  void OneOf(std::string_view key, const std::string& value,
             const std::vector<std::string>& allowed) {
    if (!status_.ok()) return;
    for (const auto& a : allowed)
      if (a == value) return;
    status_ = absl::InvalidArgumentError(
        fmt::format("{}[{}] {} = \"{}\" is not valid; use one of: {}", Where(table_.get(key)),
                    name_, key, value, fmt::join(allowed, ", ")));
  }

  // Call last: any key not asked for is an error.
  absl::Status Finish() {
    if (!status_.ok()) return status_;
    for (const auto& [key, node] : table_) {
      bool found = false;
      for (const auto& k : known_) found = found || k == key.str();
      if (!found) {
        return absl::InvalidArgumentError(
            fmt::format("{}unknown key '{}' in [{}]; remove it or use one of: {}", Where(&node),
                        key.str(), name_, fmt::join(known_, ", ")));
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string Where(const toml::node* node) const {
    if (node == nullptr) return fmt::format("{}: ", source_);
    return fmt::format("{}:{}: ", source_, node->source().begin.line);
  }
  void Fail(const toml::node& node, std::string_view key, std::string_view want) {
    status_ = absl::InvalidArgumentError(
        fmt::format("{}[{}] {} must be {}", Where(&node), name_, key, want));
  }

  const toml::table& table_;
  std::string_view source_;
  std::string name_;
  std::vector<std::string> known_;
  absl::Status status_;
};

using SectionParser = std::function<absl::Status(const toml::table&, std::string_view)>;

}  // namespace

absl::StatusOr<DaemonConfig> ParseDaemonConfig(std::string_view text, std::string_view source) {
  if (auto st = tuner::CheckTomlText(text, source); !st.ok()) return st;
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(fmt::format("{}:{}: {}; fix the TOML syntax", source,
                                                  e.source().begin.line, e.description()));
  }

  DaemonConfig config;
  config.source = std::string(source);
  const std::map<std::string, SectionParser, std::less<>> sections = {
      {"server",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "server");
         r.Get("listen", config.server.listen);
         r.Get("admit_socket", config.server.admit_socket);
         r.Get("worker_threads", config.server.worker_threads);
         r.Get("heavy_after_ms", config.server.heavy_after_ms);
         r.Range("heavy_after_ms", config.server.heavy_after_ms, 1, 600000);
         r.Get("shutdown_grace_ms", config.server.shutdown_grace_ms);
         r.Get("ledger_interval_s", config.server.ledger_interval_s);
         r.Range("ledger_interval_s", config.server.ledger_interval_s, 1, 3600);
         r.Range("worker_threads", config.server.worker_threads, 1, 256);
         r.Range("shutdown_grace_ms", config.server.shutdown_grace_ms, 0, 600000);
         return r.Finish();
       }},
      {"store",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "store");
         r.Get("path", config.store.path);
         r.Get("jobcomp_spool", config.store.jobcomp_spool);
         return r.Finish();
       }},
      {"log",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "log");
         r.Get("level", config.log.level);
         r.Get("file", config.log.file);
         r.OneOf("level", config.log.level, {"trace", "debug", "info", "warn", "error"});
         return r.Finish();
       }},
      {"hardware",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "hardware");
         r.Get("profile", config.hardware.profile);
         r.Get("probe_reports", config.hardware.probe_reports);
         return r.Finish();
       }},
      {"fabric",
       [&](const toml::table& t, std::string_view src) {
         // Numbers and strings only; FabricFromKeys knows the keys and
         // ranges. Each key is checked on its own (with `builtin`, which
         // others change) so the error names its line.
         std::vector<tuner::FabricKey>& keys = config.hardware.fabric;
         std::vector<int> lines;
         for (const auto& [key, node] : t) {
           tuner::FabricKey k;
           k.key = std::string(key.str());
           if (auto text = node.value_exact<std::string>()) {
             k.text = *text;
             k.is_text = true;
           } else if (auto number = node.value<double>()) {
             k.number = *number;
           } else {
             return absl::InvalidArgumentError(
                 fmt::format("{}:{}: [fabric] {} must be a number or a string", src,
                             node.source().begin.line, key.str()));
           }
           keys.push_back(std::move(k));
           lines.push_back(static_cast<int>(node.source().begin.line));
         }
         std::vector<tuner::FabricKey> base;
         for (const tuner::FabricKey& k : keys) {
           if (k.key == "builtin") base.push_back(k);
         }
         for (size_t i = 0; i < keys.size(); ++i) {
           std::vector<tuner::FabricKey> one = base;
           if (keys[i].key != "builtin") one.push_back(keys[i]);
           auto checked =
               tuner::FabricFromKeys(one, tuner::Fabric{}, fmt::format("{}:{}", src, lines[i]));
           if (!checked.ok()) return checked.status();
         }
         return absl::OkStatus();
       }},
      {"identity",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "identity");
         r.Get("mode", config.identity.mode);
         r.Get("munge_socket", config.identity.munge_socket);
         r.Get("controller_users", config.identity.controller_users);
         r.OneOf("mode", config.identity.mode, {"munge", "none"});
         return r.Finish();
       }},
      {"policy",
       [&](const toml::table& t, std::string_view src) {
         PolicyConfig& p = config.policy;
         TableReader r(t, src, "policy");
         r.Get("enforcement", p.enforcement);
         r.Get("tuning_default", p.tuning_default);
         r.Get("max_nodes", p.max_nodes);
         r.Get("max_gpus", p.max_gpus);
         r.Get("allowed_strategies", p.allowed_strategies);
         r.Get("min_parallel_efficiency", p.min_parallel_efficiency);
         r.Get("price_per_gpu_hour", p.price_per_gpu_hour);
         r.Get("price_per_node_hour", p.price_per_node_hour);
         r.Get("billing", p.billing);
         r.Get("price_per_billing_unit_hour", p.price_per_billing_unit_hour);
         r.Get("currency", p.currency);
         r.Get("default_partition", p.default_partition);
         r.Get("admins", p.admins);
         r.Get("reservation_ttl_s", p.reservation_ttl_s);
         r.Get("admission_window_s", p.admission_window_s);
         r.Get("budget_period", p.budget_period);
         r.Get("cost_tolerance_pct", p.cost_tolerance_pct);
         r.Get("time_value_per_hour", p.time_value_per_hour);
         r.Range("cost_tolerance_pct", p.cost_tolerance_pct, 0.0, 1000.0);
         r.Range("time_value_per_hour", p.time_value_per_hour, 0.0, 1e7);
         r.Get("segment_restart_s", p.segment_restart_s);
         r.Range("segment_restart_s", p.segment_restart_s, 0.0, 86400.0);
         r.Get("learning_scope", p.learning_scope);
         r.Get("learning_max_ratio", p.learning_max_ratio);
         r.Get("search_max_candidates", p.search_max_candidates);
         r.Get("search_max_seconds", p.search_max_seconds);
         r.Range("search_max_candidates", p.search_max_candidates, int64_t{1000},
                 int64_t{1} << 40);
         r.Range("search_max_seconds", p.search_max_seconds, 1, 3600);
         r.OneOf("learning_scope", p.learning_scope, {"user", "account", "site"});
         r.Range("learning_max_ratio", p.learning_max_ratio, 1.5, 1000.0);
         r.OneOf("enforcement", p.enforcement, {"advisory", "strict"});
         r.OneOf("billing", p.billing, {"policy", "slurm"});
         r.OneOf("budget_period", p.budget_period, {"daily", "weekly", "monthly", "total"});
         r.Range("max_nodes", p.max_nodes, 1, 100000);
         r.Range("max_gpus", p.max_gpus, 0, 10000000);
         r.Range("min_parallel_efficiency", p.min_parallel_efficiency, 0.0, 1.0);
         r.Range("price_per_gpu_hour", p.price_per_gpu_hour, 0.0, 1e6);
         r.Range("price_per_node_hour", p.price_per_node_hour, 0.0, 1e7);
         r.Range("price_per_billing_unit_hour", p.price_per_billing_unit_hour, 0.0, 1e6);
         r.Range("reservation_ttl_s", p.reservation_ttl_s, 60, 90 * 86400);
         r.Range("admission_window_s", p.admission_window_s, 10, 86400);
         for (const std::string& s : p.allowed_strategies) {
           r.OneOf("allowed_strategies", s,
                   {"dp", "tp", "pp", "sp", "cp", "zero1", "zero2", "zero3", "fsdp"});
         }
         r.Tables("partition", [&](const std::string& name, const toml::table& pt) {
           PartitionPolicy& pp = p.partitions[name];
           TableReader pr(pt, src, "policy.partition." + name);
           std::optional<std::string> tuning;
           pr.GetOptional("tuning", tuning);
           pr.OneOf("tuning", tuning, {"on", "off"});
           if (tuning) pp.tuning_default = *tuning == "on";
           pr.GetOptional("price_per_gpu_hour", pp.price_per_gpu_hour);
           pr.GetOptional("price_per_node_hour", pp.price_per_node_hour);
           pr.GetOptional("max_nodes", pp.max_nodes);
           pr.GetOptional("enforcement", pp.enforcement);
           pr.Range("price_per_gpu_hour", pp.price_per_gpu_hour, 0.0, 1e6);
           pr.Range("price_per_node_hour", pp.price_per_node_hour, 0.0, 1e7);
           pr.Range("max_nodes", pp.max_nodes, 1, 100000);
           pr.OneOf("enforcement", pp.enforcement, {"advisory", "strict"});
           return pr.Finish();
         });
         return r.Finish();
       }},
      {"budget",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "budget");
         for (auto [key, target] : {std::pair{"user", &config.policy.user_budgets},
                                    std::pair{"account", &config.policy.account_budgets}}) {
           auto* budgets = target;
           const std::string kind = key;
           r.Tables(key, [&, budgets, kind](const std::string& name, const toml::table& bt) {
             BudgetLimit& b = (*budgets)[name];
             TableReader br(bt, src, "budget." + kind + "." + name);
             br.Get("limit", b.limit);
             br.Range("limit", b.limit, 0.0, 1e12);
             if (kind == "account") br.Get("members", b.members);
             if (bt.get("limit") == nullptr) {
               return absl::InvalidArgumentError(
                   fmt::format("{}:{}: [budget.{}.{}] has no limit; add limit = AMOUNT", src,
                               bt.source().begin.line, kind, name));
             }
             return br.Finish();
           });
         }
         return r.Finish();
       }},
      {"probes",
       [&](const toml::table& t, std::string_view src) {
         ProbeConfig& p = config.policy.probes;
         TableReader r(t, src, "probes");
         r.Get("partition", p.partition);
         r.Get("time_limit_s", p.time_limit_s);
         r.Get("max_wait_s", p.max_wait_s);
         r.Get("budget", p.budget);
         r.Get("probe_path", p.probe_path);
         r.Get("on_launch", p.on_launch);
         r.Get("reports_dir", p.reports_dir);
         r.Get("framework_probe", p.framework_probe);
         r.Get("heuristic_interval_s", p.heuristic_interval_s);
         r.Get("heuristic_answers_max", p.heuristic_answers_max);
         r.Range("heuristic_interval_s", p.heuristic_interval_s, 0, 86400 * 30);
         r.Range("heuristic_answers_max", p.heuristic_answers_max, 1000, 10000000);
         r.Range("time_limit_s", p.time_limit_s, 10, 86400);
         r.Range("max_wait_s", p.max_wait_s, 0, 3600);
         r.Range("budget", p.budget, 0.0, 1e9);
         return r.Finish();
       }},
  };

  std::vector<std::string> names;
  for (const auto& [name, parser] : sections) names.push_back(name);
  for (const auto& [key, node] : root) {
    auto it = sections.find(key.str());
    if (it == sections.end()) {
      return absl::InvalidArgumentError(fmt::format("{}:{}: unknown section [{}]; use one of: [{}]",
                                                    source, node.source().begin.line, key.str(),
                                                    fmt::join(names, "], [")));
    }
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: '{}' must be a table: write [{}] and its keys below it", source,
                      node.source().begin.line, key.str(), key.str()));
    }
    if (absl::Status s = it->second(*table, source); !s.ok()) return s;
  }
  return config;
}

void ApplySiteFabric(const HardwareConfig& config, tuner::HardwareProfile* hw) {
  if (config.fabric.empty()) return;
  // Checked when the file was read, so it cannot fail here.
  auto fabric = tuner::FabricFromKeys(config.fabric, hw->fabric, "xdeepd.toml");
  if (fabric.ok()) hw->fabric = *fabric;
}

bool PolicyConfig::TuningDefault(const std::string& partition) const {
  auto it = partitions.find(partition);
  return it != partitions.end() && it->second.tuning_default ? *it->second.tuning_default
                                                             : tuning_default;
}

int PolicyConfig::MaxNodes(const std::string& partition) const {
  auto it = partitions.find(partition);
  return it != partitions.end() && it->second.max_nodes ? *it->second.max_nodes : max_nodes;
}

double PolicyConfig::PricePerGpuHour(const std::string& partition) const {
  auto it = partitions.find(partition);
  return it != partitions.end() && it->second.price_per_gpu_hour ? *it->second.price_per_gpu_hour
                                                                 : price_per_gpu_hour;
}

double PolicyConfig::PricePerNodeHour(const std::string& partition) const {
  auto it = partitions.find(partition);
  return it != partitions.end() && it->second.price_per_node_hour ? *it->second.price_per_node_hour
                                                                  : price_per_node_hour;
}

bool PolicyConfig::Strict(const std::string& partition) const {
  auto it = partitions.find(partition);
  const std::string& mode =
      it != partitions.end() && it->second.enforcement ? *it->second.enforcement : enforcement;
  return mode == "strict";
}

bool PolicyConfig::IsAdmin(uint32_t uid, const std::string& user_name) const {
  for (const std::string& a : admins) {
    if (a == user_name || a == std::to_string(uid)) return true;
  }
  return false;
}

absl::StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(fmt::format(
        "{}: cannot read the configuration file; check the path given to --config", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseDaemonConfig(text.str(), path);
}

}  // namespace xdeep::daemon
