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
    } else if constexpr (std::is_same_v<T, double>) {
      if (node->is_number()) {
        out = *node->value<double>();
        return;
      }
      Fail(*node, key, "a number");
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      const toml::array* array = node->as_array();
      if (array != nullptr && array->is_homogeneous(toml::node_type::string)) {
        out.clear();
        for (const toml::node& item : *array) out.push_back(*item.value<std::string>());
        return;
      }
      Fail(*node, key, "an array of strings");
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

  // A string key must be one of `allowed`.
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
         r.Get("worker_threads", config.server.worker_threads);
         r.Get("shutdown_grace_ms", config.server.shutdown_grace_ms);
         r.Range("worker_threads", config.server.worker_threads, 1, 256);
         r.Range("shutdown_grace_ms", config.server.shutdown_grace_ms, 0, 600000);
         return r.Finish();
       }},
      {"store",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "store");
         r.Get("path", config.store.path);
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
      {"identity",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "identity");
         r.Get("mode", config.identity.mode);
         r.Get("munge_socket", config.identity.munge_socket);
         r.OneOf("mode", config.identity.mode, {"munge", "none"});
         return r.Finish();
       }},
      {"policy",
       [&](const toml::table& t, std::string_view src) {
         TableReader r(t, src, "policy");
         r.Get("max_nodes", config.policy.max_nodes);
         r.Get("price_per_gpu_hour", config.policy.price_per_gpu_hour);
         r.Get("currency", config.policy.currency);
         r.Get("default_partition", config.policy.default_partition);
         r.Range("max_nodes", config.policy.max_nodes, 1, 100000);
         r.Range("price_per_gpu_hour", config.policy.price_per_gpu_hour, 0.0, 1e6);
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
