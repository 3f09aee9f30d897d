// What a Slurm partition offers: node count and GPUs per node, read from
// slurmctld (the daemon runs where Slurm's commands work). Nodes come from
// `sinfo --json`; partitions from `scontrol -o show partition`, as text:
// Slurm 22.05 has no JSON form of partitions (`sinfo --json` lists nodes
// only, with no default-partition mark; `scontrol` has no --json).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace xdeep::daemon {

struct PartitionShape {
  std::string partition;
  int nodes = 0;          // nodes in the partition that are usable
  int gpus_per_node = 0;  // GPUs on the smallest such node
  int cpus_per_node = 0;
  // TRESBillingWeights of the partition (0 when unset).
  double gpu_billing_weight = 0;
  double cpu_billing_weight = 0;
  // The partition's MaxTime in seconds; 0 = UNLIMITED (or not known).
  double max_time_s = 0;
};

// One line of `scontrol -o show partition`: the partition's name, whether
// it is the default, and the settings a shape carries (MaxTime,
// TRESBillingWeights); `shape.nodes` etc. stay 0 until the nodes are read.
struct PartitionSettings {
  bool is_default = false;
  PartitionShape shape;
};
std::vector<PartitionSettings> ParsePartitions(std::string_view scontrol_output);

// The partition named `name` (empty: the default one) among `partitions`;
// NotFound with a message naming the fix when there is none.
absl::StatusOr<PartitionShape> FindPartition(const std::vector<PartitionSettings>& partitions,
                                             std::string_view name);

// Counts the usable nodes of `shape.partition` in `sinfo --json` output and
// the GPUs and CPUs of the smallest; Unavailable when none is usable,
// InvalidArgument when the text is not sinfo's JSON.
absl::StatusOr<PartitionShape> AddSinfoNodes(std::string_view sinfo_json, PartitionShape shape);

// A partition's shape as scontrol and sinfo tell it now.
absl::StatusOr<PartitionShape> AskSlurmForShape(const std::string& partition);

class SlurmInventory {
 public:
  using Fetch = std::function<absl::StatusOr<PartitionShape>(const std::string& partition)>;
  explicit SlurmInventory(std::chrono::seconds ttl = std::chrono::seconds(30),
                          Fetch fetch = AskSlurmForShape)
      : ttl_(ttl), fetch_(std::move(fetch)) {}
  // Cached for `ttl`; asks scontrol and sinfo when stale. One request
  // refreshes at a time; meanwhile the others answer from the stale shape
  // rather than wait: the refresher may be the heavy lane's nice-19 thread,
  // whose scontrol and sinfo run at nice 19 too, and ordinary requests
  // waiting on it were the 3-6x p99 outliers of issue #27's bounded test.
  absl::StatusOr<PartitionShape> Shape(const std::string& partition);
  // The cached shape while it is fresh, without asking Slurm (NotFound
  // otherwise): what a decision made on gRPC's own thread may use.
  absl::StatusOr<PartitionShape> FreshShape(const std::string& partition);

 private:
  struct Entry {
    PartitionShape shape;
    std::chrono::steady_clock::time_point at;
  };
  std::chrono::seconds ttl_;
  Fetch fetch_;
  std::mutex mu_;
  std::mutex refresh_mu_;  // held while sinfo runs
  std::map<std::string, Entry> cache_;
};

}  // namespace xdeep::daemon
