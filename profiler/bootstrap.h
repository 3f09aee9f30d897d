// Where this rank sits (rank, world, local rank, nodes) and how ranks find each other.
//
// Ranks come from srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_NODELIST)
// or, for testing without Slurm, from torchrun-style RANK / WORLD_SIZE / LOCAL_RANK /
// MASTER_ADDR / MASTER_PORT. Explicit RANK/WORLD_SIZE win over Slurm's variables.
//
// NCCL needs one ncclUniqueId on every rank. xdeep never starts processes itself
// (Slurm does), so rank 0 publishes the id over a small TCP rendezvous: it listens on
// MASTER_PORT, every other rank connects (retrying until rank 0 is up), says who it is,
// and receives the blob. Every step has a deadline, so a dead or missing rank ends the
// probe with an error naming the ranks that never came, instead of a hang.
#ifndef XDEEP_PROFILER_BOOTSTRAP_H_
#define XDEEP_PROFILER_BOOTSTRAP_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace xdeep::profiler {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  int nodes = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source = "single";  // single | env | slurm
  // master_addr is a Slurm node name (first of the step's nodelist). A NodeName need
  // not resolve (NodeAddr may differ, as with several slurmd on one host): peers then
  // ask Slurm for the node's address (scontrol show node).
  bool master_is_slurm_node = false;
};

using EnvLookup = std::function<const char*(const char*)>;

// Reads the process environment (or `lookup`, for tests).
absl::StatusOr<DistEnv> DistEnvFromEnvironment(const EnvLookup& lookup = nullptr);

// First host of a Slurm hostlist: "gpu[03-05,09],cpu1" -> "gpu03".
absl::StatusOr<std::string> FirstHostOfNodelist(absl::string_view nodelist);
// Tasks on the first node from SLURM_STEP_TASKS_PER_NODE: "4(x2),3" -> 4.
int FirstTasksPerNode(absl::string_view tasks_per_node);

// Rank 0 sends `root_blob` to every other rank; every rank returns the blob. Rank 0
// returns once all world_size-1 peers have it. Fails within `timeout` if a peer never
// connects, rank 0 is unreachable, or a peer claims a wrong world size or a taken rank.
absl::StatusOr<std::string> ExchangeRootBlob(const DistEnv& env, const std::string& root_blob,
                                             absl::Duration timeout);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_BOOTSTRAP_H_
