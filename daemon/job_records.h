// Slurm's own record of each finished job, as etc/slurm/xdeep-jobcomp.sh
// (slurmctld's jobcomp/script) spools it: the authority for what a job used.
// The daemon drains the spool on its ledger pass, charges each record once
// (Ledger::ChargeJob is idempotent per job run) and only then deletes it, so
// a crash between the two charges nothing twice and loses nothing.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/ledger.h"

namespace xdeep::daemon {

// One spooled record: the jobcomp environment as KEY=value lines (the first
// occurrence of a key wins), then slurmctld's record of the job as
// SCONTROL=<line> lines. The decision is the AdminComment "xdeep:<id>"
// job_submit.lua set; the GPUs are Slurm's JOB_GRES (allocated).
absl::StatusOr<JobUsage> ParseJobRecord(std::string_view text);

// What slurmctld's record (`scontrol -d -o show job`, its lines) says of job
// `job_id`: the decision in its AdminComment and the GPUs it was allocated.
struct ControllerFields {
  std::string decision_id;
  std::optional<int> gpus;  // nullopt: not in the record or unreadable
  bool duplicated = false;  // AdminComment or JOB_GRES twice: user text forged one
};
ControllerFields ReadControllerRecord(std::span<const std::string_view> lines, uint32_t job_id);

// GPUs in a JOB_GRES value ("gpu:4", "gpu:a100:2,gpu:v100:1", "(null)").
std::optional<int> GpusInJobGres(std::string_view job_gres);

// Tasks in a job array's index expression ("0-9:2,15%4" -> 6); nullopt when
// it cannot be read.
std::optional<int> CountArrayTasks(std::string_view indices);

// GPUs in a job's TRES request ("gres:gpu:4", "gres:gpu:a100:2,gres:fpga:1",
// "gres/gpu=4"): 0 when it asks none, nullopt when it cannot be read.
std::optional<int> GpusInTres(std::string_view tres);

// GPUs per node of a partition, for records whose TRES names no GPUs.
using GpusPerNodeFn = std::function<int(const std::string& partition)>;

// Charges every record in `spool` that concerns xdeep (a decision named by
// the controller, or any job on a strictly enforced partition); deletes the
// records it charged or that concern nobody. Returns records charged.
// `charged` (optional) sees each charged record: learning takes the job's
// final state from it.
int DrainJobRecords(const std::string& spool, const PolicyConfig& policy, Ledger& ledger,
                    const GpusPerNodeFn& gpus_per_node, int64_t now_unix,
                    const std::function<void(const JobUsage&)>& charged = nullptr);

}  // namespace xdeep::daemon
