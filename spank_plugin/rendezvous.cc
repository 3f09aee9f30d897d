// Rendezvous variables (see rendezvous.h).
#include "spank_plugin/rendezvous.h"

namespace xdeep::spank {

using client::AppLauncher;
using client::PerNode;
using client::RunDecision;
using client::Variables;

int RendezvousPort(uint32_t job_id, uint32_t step_id, int first, int last) {
  const uint64_t span = static_cast<uint64_t>(last - first + 1);
  // Neighbouring steps of one job and neighbouring jobs get different ports.
  const uint64_t key = static_cast<uint64_t>(job_id) * 7919u + step_id;
  return first + static_cast<int>(key % span);
}

Variables StepRendezvous(const StepFacts& s, const RunDecision& d) {
  // A per-node launcher starts the decided GPUs' processes in each task.
  const int per_node = PerNode(d.launcher) ? d.gpus_per_node : s.tasks_on_node;
  Variables v = {
      {"MASTER_ADDR", s.master_addr},
      {"MASTER_PORT", std::to_string(s.master_port)},
      {"XDEEP_NODE_RANK", std::to_string(s.node_id)},
      {"XDEEP_NPROC_PER_NODE", std::to_string(per_node)},
  };
  if (d.launcher == AppLauncher::kTorchrun) {
    // torchrun takes every option from PET_<OPTION> when it is not given.
    v.insert(v.end(), {{"PET_NNODES", std::to_string(s.nnodes)},
                       {"PET_NPROC_PER_NODE", std::to_string(per_node)},
                       {"PET_NODE_RANK", std::to_string(s.node_id)},
                       {"PET_MASTER_ADDR", s.master_addr},
                       {"PET_MASTER_PORT", std::to_string(s.master_port)}});
  }
  return v;
}

Variables TaskRendezvous(const StepFacts& s, const RunDecision& d, int global_rank,
                         int local_rank) {
  if (PerNode(d.launcher)) return {};
  return {
      {"RANK", std::to_string(global_rank)},
      {"WORLD_SIZE", std::to_string(s.ntasks)},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(s.tasks_on_node)},
      {"GROUP_RANK", std::to_string(s.node_id)},
  };
}

}  // namespace xdeep::spank
