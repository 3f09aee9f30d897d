// Partition shapes from scontrol and `sinfo --json` (see slurm_inventory.h).
#include "daemon/slurm_inventory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "absl/status/status.h"
#include "client/time_span.h"
#include "daemon/subprocess.h"
#include "daemon/text.h"

namespace xdeep::daemon {
namespace {

// "gpu:4", "gpu:h100:8(S:0-1)", "gpu:a100:4,shard:8" -> GPUs; "" or "(null)" -> 0.
int GpusFromGres(std::string_view gres) {
  // Socket bindings "(S:0,1)" hold ':' and ',' of their own: drop them first.
  std::string plain;
  int depth = 0;
  for (char c : gres) {
    if (c == '(') ++depth;
    if (depth == 0) plain.push_back(c);
    if (c == ')' && depth > 0) --depth;
  }
  int total = 0;
  for (std::string_view item : Split(plain, ',')) {
    std::vector<std::string_view> parts = Split(item, ':');
    if (parts.size() < 2 || parts[0] != "gpu") continue;
    total += ParseNumber<int>(parts.back()).value_or(0);
  }
  return total;
}

// A field of sinfo's JSON, or null when absent: value() would throw on a
// field of another type, and nothing may leave the daemon's parsers as an exception.
const nlohmann::json& FieldOf(const nlohmann::json& node, const char* key) {
  static const nlohmann::json kNull;
  const auto it = node.find(key);
  return it == node.end() ? kNull : *it;
}

std::string TextOf(const nlohmann::json& node, const char* key) {
  const nlohmann::json& v = FieldOf(node, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// sinfo --json gives a node's base state ("idle", "mixed", "down", ...) and
// its flags ("DRAIN", "FAIL", ...) apart; down, drained, failing, booting and
// unregistered nodes cannot run a job now.
bool Usable(const nlohmann::json& node) {
  static const std::set<std::string> kUnusableStates = {"down", "future", "unknown", "error"};
  static const std::set<std::string> kUnusableFlags = {
      "DRAIN",        "FAIL",        "MAINTENANCE",   "INVALID_REG",
      "POWERED_DOWN", "POWERING_UP", "POWERING_DOWN", "REBOOT_ISSUED"};
  const std::string state = TextOf(node, "state");
  if (state.empty() || kUnusableStates.contains(state)) return false;
  const nlohmann::json& flags = FieldOf(node, "state_flags");
  if (!flags.is_array()) return true;
  return std::none_of(flags.begin(), flags.end(), [](const nlohmann::json& f) {
    return f.is_string() && kUnusableFlags.contains(f.get<std::string>());
  });
}

// The value of `key=` in one `scontrol -o` line; nullopt when absent.
std::optional<std::string_view> Field(std::string_view line, std::string_view key) {
  for (std::string_view item : Split(line, ' ', true)) {
    if (item.size() > key.size() && item.starts_with(key) && item[key.size()] == '=') {
      return item.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

void ReadBillingWeights(std::string_view weights, PartitionShape* shape) {
  for (std::string_view item : Split(weights, ',', true)) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = item.substr(0, eq);
    double w = ParseNumber<double>(item.substr(eq + 1)).value_or(0);
    if (name == "GRES/gpu" || name.starts_with("GRES/gpu:")) shape->gpu_billing_weight = w;
    if (name == "CPU") shape->cpu_billing_weight = w;
  }
}

}  // namespace

std::vector<PartitionSettings> ParsePartitions(std::string_view scontrol_output) {
  std::vector<PartitionSettings> partitions;
  for (std::string_view line : Split(scontrol_output, '\n', true)) {
    std::optional<std::string_view> name = Field(line, "PartitionName");
    if (!name || name->empty()) continue;
    PartitionSettings p;
    p.shape.partition = std::string(*name);
    p.is_default = Field(line, "Default") == "YES";
    if (auto max_time = Field(line, "MaxTime")) {
      double seconds = 0;
      if (client::ParseSlurmTimeLimit(*max_time, &seconds)) p.shape.max_time_s = seconds;
    }
    if (auto weights = Field(line, "TRESBillingWeights")) ReadBillingWeights(*weights, &p.shape);
    partitions.push_back(std::move(p));
  }
  return partitions;
}

absl::StatusOr<PartitionShape> FindPartition(const std::vector<PartitionSettings>& partitions,
                                             std::string_view name) {
  for (const PartitionSettings& p : partitions) {
    if (name.empty() ? p.is_default : p.shape.partition == name) return p.shape;
  }
  return absl::NotFoundError(
      name.empty() ? std::string("Slurm has no default partition; name one with -p")
                   : fmt::format("Slurm has no partition '{}'; check the name with sinfo", name));
}

absl::StatusOr<PartitionShape> AddSinfoNodes(std::string_view sinfo_json, PartitionShape shape) {
  const nlohmann::json doc = nlohmann::json::parse(sinfo_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("nodes") ||
      !doc["nodes"].is_array()) {
    return absl::InvalidArgumentError("sinfo --json gave no node list");
  }
  std::set<std::string> nodes;
  int min_gpus = -1, min_cpus = -1;
  for (const nlohmann::json& node : doc["nodes"]) {
    if (!node.is_object()) continue;
    const nlohmann::json& partitions = FieldOf(node, "partitions");
    if (!partitions.is_array() ||
        std::find(partitions.begin(), partitions.end(), shape.partition) == partitions.end()) {
      continue;
    }
    if (!Usable(node)) continue;
    nodes.insert(TextOf(node, "name"));
    const nlohmann::json& cpus_field = FieldOf(node, "cpus");
    const int64_t cpus_read = cpus_field.is_number_integer() ? cpus_field.get<int64_t>() : 0;
    const int cpus = cpus_read > 0 && cpus_read < 1'000'000 ? static_cast<int>(cpus_read) : 0;
    const int gpus = GpusFromGres(TextOf(node, "gres"));
    min_gpus = min_gpus < 0 ? gpus : std::min(min_gpus, gpus);
    min_cpus = min_cpus < 0 ? cpus : std::min(min_cpus, cpus);
  }
  if (nodes.empty()) {
    return absl::UnavailableError(
        fmt::format("partition '{}' has no usable nodes right now", shape.partition));
  }
  shape.nodes = static_cast<int>(nodes.size());
  shape.gpus_per_node = std::max(min_gpus, 0);
  shape.cpus_per_node = std::max(min_cpus, 0);
  return shape;
}

absl::StatusOr<PartitionShape> AskSlurmForShape(const std::string& partition) {
  auto part = RunCommand({"scontrol", "-o", "show", "partition"}, std::chrono::seconds(10));
  if (!part.ok()) return part.status();
  if (part->exit_code != 0) {
    return absl::UnavailableError(fmt::format("scontrol show partition failed: {}", part->err));
  }
  auto shape = FindPartition(ParsePartitions(part->out), partition);
  if (!shape.ok()) return shape.status();
  auto run = RunCommand({"sinfo", "--json"}, std::chrono::seconds(10));
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::UnavailableError(fmt::format("sinfo failed: {}", run->err));
  }
  return AddSinfoNodes(run->out, *std::move(shape));
}

absl::StatusOr<PartitionShape> SlurmInventory::FreshShape(const std::string& partition) {
  std::lock_guard lock(mu_);
  auto it = cache_.find(partition);
  if (it == cache_.end() || std::chrono::steady_clock::now() - it->second.at >= ttl_) {
    return absl::NotFoundError("no fresh shape of partition " + partition);
  }
  return it->second.shape;
}

absl::StatusOr<PartitionShape> SlurmInventory::Shape(const std::string& partition) {
  // The cached shape, and whether it is still fresh.
  auto cached = [&]() -> std::pair<std::optional<PartitionShape>, bool> {
    std::lock_guard lock(mu_);
    auto it = cache_.find(partition);
    if (it == cache_.end()) return {std::nullopt, false};
    return {it->second.shape, std::chrono::steady_clock::now() - it->second.at < ttl_};
  };
  auto [shape, fresh] = cached();
  if (shape && fresh) return *shape;
  // One refresh at a time: when the entry expires under load, the requests
  // that find it stale do not each run their own sinfo (16 concurrent
  // launches ran 16, 18 ms of CPU each), and those that hold a stale shape
  // answer from it instead of waiting for the refresher.
  std::unique_lock refreshing(refresh_mu_, std::defer_lock);
  if (shape) {
    if (!refreshing.try_lock()) return *shape;
  } else {
    refreshing.lock();
  }
  std::tie(shape, fresh) = cached();
  if (shape && fresh) return *shape;
  auto fetched = fetch_(partition);
  if (!fetched.ok()) return fetched.status();
  std::lock_guard lock(mu_);
  cache_[partition] = {*fetched, std::chrono::steady_clock::now()};
  return fetched;
}

}  // namespace xdeep::daemon
