// The jobs slurmctld holds (pending, running, and ended within MinJobAge), as
// `squeue --json` lists them. Slurm 22.05's squeue ignores -j, -t, -p and -u
// together with --json and always lists every job, so callers filter here.
// (`sacct --json` would keep jobs past MinJobAge, but needs accounting
// storage, which xdeep does not require: jobcomp records cover ended jobs.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace xdeep::daemon {

struct SlurmJob {
  uint32_t job_id = 0;
  std::string state;  // PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, ...
  std::string partition;
  int64_t start_time = 0;     // epoch seconds; 0 before the job starts
  std::string admin_comment;  // set by job_submit.lua ("xdeep:<decision>")
};

// Reads `squeue --json` output; InvalidArgument when it is not squeue's JSON.
absl::StatusOr<std::vector<SlurmJob>> ParseSqueueJson(std::string_view json);

// Pending, running, completing, suspended, requeued...: still in the queue.
bool JobInQueue(std::string_view state);

}  // namespace xdeep::daemon
