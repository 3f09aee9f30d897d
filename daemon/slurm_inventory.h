// What a Slurm partition offers: node count and GPUs per node, read from
// slurmctld through sinfo (the daemon runs where Slurm's commands work).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

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

// Seconds in a Slurm duration as scontrol prints it ("UNLIMITED", "1-00:00:00",
// "02:30:00", "30:00") or as --time takes it (a lone number is minutes);
// 0 for UNLIMITED / INFINITE; nullopt when it is not one.
std::optional<double> SlurmDurationSeconds(std::string_view text);

// Reads MaxTime from `scontrol -o show partition` output (Slurm 22.05 has no
// JSON form of partitions: `sinfo --json` lists nodes only, `scontrol` has
// no --json).
void ParseMaxTime(std::string_view scontrol_output, PartitionShape* shape);

// Reads GRES/gpu and CPU weights from `scontrol -o show partition` output.
void ParseBillingWeights(std::string_view scontrol_output, PartitionShape* shape);

// Parses `sinfo -h -N -o "%P|%N|%c|%G|%t"` output for `partition` (empty =
// the default partition, marked with '*'). Exposed for tests.
absl::StatusOr<PartitionShape> ParseSinfo(std::string_view sinfo_output,
                                          std::string_view partition);

class SlurmInventory {
 public:
  explicit SlurmInventory(std::chrono::seconds ttl = std::chrono::seconds(30)) : ttl_(ttl) {}
  // Cached for `ttl`; asks sinfo when stale.
  absl::StatusOr<PartitionShape> Shape(const std::string& partition);

 private:
  struct Entry {
    PartitionShape shape;
    std::chrono::steady_clock::time_point at;
  };
  std::chrono::seconds ttl_;
  std::mutex mu_;
  std::mutex refresh_mu_;  // held while sinfo runs
  std::map<std::string, Entry> cache_;
};

}  // namespace xdeep::daemon
