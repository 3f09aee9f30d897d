// What a user's training script supports, from the workload's [parallel]
// table (docs/workload.md): the search never leaves it. Site policy
// (allowed_strategies) and --xdeep-strategies narrow it further.
#ifndef XDEEP_TUNER_PARALLEL_CONSTRAINTS_H_
#define XDEEP_TUNER_PARALLEL_CONSTRAINTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace xdeep::tuner {

struct ParallelConstraints {
  // Strategies the script implements: dp, tp, pp, sp (sequence parallel
  // with tp), cp (context parallel), zero1, zero2, zero3 (fsdp); empty: all.
  std::vector<std::string> strategies;
  int tp = 0, max_tp = 0;  // tensor-parallel degree: exactly / at most; 0: free
  int pp = 0, max_pp = 0;  // pipeline stages: exactly / at most; 0: free
  int cp = 0, max_cp = 0;  // context-parallel degree: exactly / at most; 0: free
  // Sharding stages with data parallelism: none, zero1, zero2, zero3 (fsdp); empty: all.
  std::vector<std::string> sharding;
  std::string pipeline_schedule;  // "1f1b", "interleaved"; empty: either
  std::string recompute;          // "on" (full), "off", "selective"; empty: any
  // How the script is started: "srun" (one task per GPU) or a per-node
  // launcher ("torchrun", "accelerate", "deepspeed"); empty: srun. It does not
  // change the search, only the launch (one task per node) and its variables.
  std::string launcher;

  bool empty() const {
    return strategies.empty() && !tp && !max_tp && !pp && !max_pp && !cp && !max_cp &&
           sharding.empty() && pipeline_schedule.empty() && recompute.empty();
  }
};

// Names in a strategy list the search understands; error text names the bad one.
absl::Status CheckStrategyNames(const std::vector<std::string>& names, std::string_view where);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_PARALLEL_CONSTRAINTS_H_
