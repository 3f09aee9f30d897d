// The partition's nodes as sinfo reports them, for limits the daemon cannot
// see: -C / --constraint (how many nodes have the features) and
// --mem-per-gpu / --mem-per-cpu (how many GPUs' worth of memory a node holds).
// Read from sinfo (the plugin links no libslurm); only plain constraint
// expressions are counted (names joined by & or |); counts, brackets and
// parentheses are left to Slurm. Text, not `sinfo --json`: Slurm 22.05's
// sinfo ignores -p / -n with --json and prints every node of the cluster at
// ~1.4 KB each (2,910 bytes for the 2-node test cluster against 126 for this
// format), too much to parse on srun's start-up path at a large site.
#pragma once

#include <string>

namespace xdeep::spank {

// The command line sinfo is run with; its output feeds PartitionNodes.
inline constexpr const char* kSinfoFormat = "%N|%P|%f|%m";

struct PartitionNodes {
  int matching = -1;   // nodes whose features satisfy the constraint; -1: not counted
  long memory_mb = 0;  // the smallest RealMemory among those nodes (0: unknown)
};

// From `sinfo -h -N -o kSinfoFormat` output: the distinct nodes of
// `partition` (empty: the default one, marked '*') with at least
// `min_memory_mb` (--mem); `constraint` may be empty. With a memory floor,
// `matching` counts the nodes that meet it.
PartitionNodes ReadPartitionNodes(const std::string& sinfo_output, const std::string& partition,
                                  const std::string& constraint, long min_memory_mb = 0);

// "1500", "1500M", "2G", "1T", "512K" -> MB; 0 when it is not a size.
long MemoryMb(const std::string& size);

// Runs sinfo (from PATH, with this process's SLURM_CONF) for at most
// `timeout_ms`; false with `error` when it cannot.
bool RunSinfo(int timeout_ms, std::string* output, std::string* error);

}  // namespace xdeep::spank
