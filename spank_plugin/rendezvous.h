// What a tuned step's processes need to find each other: the variables
// torch.distributed reads (MASTER_ADDR / MASTER_PORT, RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE) for srun-native launches, and for per-node
// launchers (torchrun, accelerate, deepspeed: one Slurm task per node) the
// node's rank and the process count they hand on. Pure functions of the
// step's Slurm facts; step_runtime.cc reads those facts in slurmstepd.
#pragma once

#include <cstdint>
#include <string>

#include "client/run_decision.h"

namespace xdeep::spank {

struct StepFacts {
  uint32_t job_id = 0, step_id = 0;
  int node_id = 0, nnodes = 1;  // this node in the step (SLURM_NODEID), the step's nodes
  int ntasks = 1;               // the step's tasks
  int tasks_on_node = 1;        // tasks of the step on this node
  std::string master_addr;      // the step's first node, as an address others can reach
  int master_port = 0;
};

// A port for the step's rendezvous from `first`..`last`: a function of the job
// and step ids, so every node derives the same one without talking.
int RendezvousPort(uint32_t job_id, uint32_t step_id, int first, int last);

// Variables for the whole step (set before the tasks start): MASTER_ADDR,
// MASTER_PORT, XDEEP_NODE_RANK, XDEEP_NPROC_PER_NODE, and for a per-node
// launcher torchrun's PET_* defaults (so a bare `torchrun train.py` runs the
// decided layout).
client::Variables StepRendezvous(const StepFacts& step, const client::RunDecision& decision);

// Variables of one task: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// GROUP_RANK for srun-native launches; none for per-node launchers, which
// give their own processes these.
client::Variables TaskRendezvous(const StepFacts& step, const client::RunDecision& decision,
                                 int global_rank, int local_rank);

}  // namespace xdeep::spank
