// sinfo-backed partition shapes (see slurm_inventory.h).
#include "daemon/slurm_inventory.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "daemon/subprocess.h"
#include "daemon/text.h"

namespace xdeep::daemon {
namespace {

// "gpu:4", "gpu:h100:8(S:0-1)", "gpu:a100:4,shard:8" -> GPUs; "(null)" -> 0.
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

bool Usable(std::string_view state) {
  // Abbreviated states from %t; drained, down and failing nodes cannot run jobs.
  static const std::set<std::string_view> kUnusable = {"down",  "down*", "drain", "drain*",
                                                       "drng",  "fail",  "failg", "inval",
                                                       "maint", "boot",  "futr",  "unk"};
  return !kUnusable.contains(state);
}

}  // namespace

absl::StatusOr<PartitionShape> ParseSinfo(std::string_view sinfo_output,
                                          std::string_view partition) {
  PartitionShape shape;
  std::set<std::string> nodes;
  int min_gpus = -1, min_cpus = -1;
  for (std::string_view line : Split(sinfo_output, '\n', true)) {
    std::vector<std::string_view> f = Split(line, '|');
    if (f.size() != 5) continue;
    std::string_view part = f[0];
    bool is_default = !part.empty() && part.back() == '*';
    if (is_default) part.remove_suffix(1);
    if (partition.empty() ? !is_default : part != partition) continue;
    shape.partition = std::string(part);
    if (!Usable(f[4])) continue;
    nodes.insert(std::string(f[1]));
    int cpus = ParseNumber<int>(f[2]).value_or(0);
    int gpus = GpusFromGres(f[3]);
    min_gpus = min_gpus < 0 ? gpus : std::min(min_gpus, gpus);
    min_cpus = min_cpus < 0 ? cpus : std::min(min_cpus, cpus);
  }
  if (shape.partition.empty()) {
    return absl::NotFoundError(
        partition.empty()
            ? std::string("Slurm has no default partition; name one with -p")
            : fmt::format("Slurm has no partition '{}'; check the name with sinfo", partition));
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

void ParseBillingWeights(std::string_view out, PartitionShape* shape) {
  constexpr std::string_view kKey = "TRESBillingWeights=";
  size_t at = out.find(kKey);
  if (at == std::string_view::npos) return;
  std::string_view weights = out.substr(at + kKey.size());
  weights = weights.substr(0, weights.find_first_of(" \n"));
  for (std::string_view item : Split(weights, ',', true)) {
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = item.substr(0, eq);
    double w = ParseNumber<double>(item.substr(eq + 1)).value_or(0);
    if (name == "GRES/gpu" || name.starts_with("GRES/gpu:")) shape->gpu_billing_weight = w;
    if (name == "CPU") shape->cpu_billing_weight = w;
  }
}

std::optional<double> SlurmDurationSeconds(std::string_view text) {
  if (text == "UNLIMITED" || text == "INFINITE" || text == "infinite") return 0.0;
  long days = 0;
  bool has_days = false;
  if (size_t dash = text.find('-'); dash != std::string_view::npos) {
    auto d = ParseNumber<long>(text.substr(0, dash));
    if (!d || *d < 0) return std::nullopt;
    days = *d;
    has_days = true;
    text.remove_prefix(dash + 1);
  }
  std::vector<long> fields;
  for (std::string_view f : Split(text, ':')) {
    auto v = ParseNumber<long>(f);
    if (!v || *v < 0) return std::nullopt;
    fields.push_back(*v);
  }
  if (fields.empty() || fields.size() > 3) return std::nullopt;
  // Slurm's forms: M, M:S, H:M:S; with days D-H, D-H:M, D-H:M:S.
  long h = 0, m = 0, sec = 0;
  if (has_days) {
    h = fields[0];
    if (fields.size() > 1) m = fields[1];
    if (fields.size() > 2) sec = fields[2];
  } else if (fields.size() == 1) {
    m = fields[0];
  } else if (fields.size() == 2) {
    m = fields[0];
    sec = fields[1];
  } else {
    h = fields[0];
    m = fields[1];
    sec = fields[2];
  }
  return days * 86400.0 + h * 3600.0 + m * 60.0 + sec;
}

void ParseMaxTime(std::string_view out, PartitionShape* shape) {
  constexpr std::string_view kKey = "MaxTime=";
  size_t at = out.find(kKey);
  if (at == std::string_view::npos) return;
  std::string_view value = out.substr(at + kKey.size());
  value = value.substr(0, value.find_first_of(" \n"));
  shape->max_time_s = SlurmDurationSeconds(value).value_or(0);
}

absl::StatusOr<PartitionShape> SlurmInventory::Shape(const std::string& partition) {
  auto cached = [&]() -> std::optional<PartitionShape> {
    std::lock_guard lock(mu_);
    auto it = cache_.find(partition);
    if (it != cache_.end() && std::chrono::steady_clock::now() - it->second.at < ttl_) {
      return it->second.shape;
    }
    return std::nullopt;
  };
  if (auto shape = cached()) return *shape;
  // One refresh at a time: when the entry expires under load, the requests
  // that find it stale wait for one sinfo instead of each running their own
  // (16 concurrent launches ran 16 sinfo, 18 ms of CPU each).
  std::lock_guard refreshing(refresh_mu_);
  if (auto shape = cached()) return *shape;
  auto run = RunCommand({"sinfo", "-h", "-N", "-o", "%P|%N|%c|%G|%t"}, std::chrono::seconds(10));
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::UnavailableError(fmt::format("sinfo failed: {}", run->err));
  }
  auto shape = ParseSinfo(run->out, partition);
  if (!shape.ok()) return shape.status();
  auto part = RunCommand({"scontrol", "-o", "show", "partition", shape->partition},
                         std::chrono::seconds(10));
  if (part.ok() && part->exit_code == 0) {
    ParseBillingWeights(part->out, &*shape);
    ParseMaxTime(part->out, &*shape);
  }
  std::lock_guard lock(mu_);
  cache_[partition] = {*shape, std::chrono::steady_clock::now()};
  return shape;
}

}  // namespace xdeep::daemon
