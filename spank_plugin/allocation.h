// The allocation an srun runs inside (salloc, sbatch), as slurmctld's own
// record says: `scontrol -d show job ID`, which asks the controller for that
// one job. (Slurm 22.05 has no `scontrol --json`, and its `squeue --json`
// ignores -j and lists every job: unbounded on srun's start-up path.) Its
// per-node GPUs (the GRES= of each `Nodes=` detail line) count every way a
// job asks for GPUs: --gres=gpu[:type]:N, --gpus, --gpus-per-task and
// --gpus-per-node, which the SLURM_* variables of the allocation only partly
// describe (--gres sets none of them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xdeep::spank {

struct Allocation {
  int nodes = 0;
  std::vector<int> gpus_on_node;  // per node, in the order Slurm lists them
  int gpus_per_node = 0;          // the fewest GPUs any of its nodes holds
  int gpus = 0;                   // in all
  // How it asked for GPUs, for the explanation: "gpu:2 per node",
  // "gpu:3 per job", "gpu:2 per task"; empty when it asked none.
  std::string gpu_request;
  double time_left_s = 0;  // until its time limit; 0: none (INFINITE)
};

// Reads job `job_id` from `scontrol -d show job ID` output (Slurm 22.05's
// layout: `Key=Value` fields, one `Nodes=HOSTLIST ... GRES=...` line per
// group of nodes alike). The time left is TimeLimit - RunTime (no clock or
// time zone involved). False with `error` when it is another job's record or
// it cannot be read.
bool ParseAllocationScontrol(const std::string& text, uint32_t job_id, Allocation* out,
                             std::string* error);

// GPUs in one node's gres_detail entry ("gpu:2(IDX:0-1)",
// "gpu:h100:4(IDX:0-3),nic:1"); 0 when it holds none.
int GpusInGresDetail(const std::string& detail);

// Runs scontrol for at most `timeout_ms` and parses its answer.
bool ReadAllocation(uint32_t job_id, int timeout_ms, Allocation* out, std::string* error);

}  // namespace xdeep::spank
