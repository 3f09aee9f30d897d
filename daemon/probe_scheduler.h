// ProbeScheduler: runs xdeep-probe as a Slurm batch job on a configured partition
// and hands back its validated report (issue 5, item 5). Slurm is the distributed
// engine: the daemon only submits (sbatch), polls (squeue) and cancels (scancel);
// it never starts processes on compute nodes itself. Every wait has a deadline, and
// a job still queued or running past it is cancelled, so a stuck partition costs
// the daemon a bounded wait and the site nothing more.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/subprocess.h"
#include "profiler/report.h"

namespace xdeep::daemon {

// Runs one command with a time limit (RunCommand's signature); tests inject fakes.
using CommandRunner = std::function<absl::StatusOr<CommandResult>(
    const std::vector<std::string>& argv, std::chrono::milliseconds timeout)>;

// What the poll loop waits with; tests pass a simulated clock.
struct ProbeClock {
  std::function<absl::Time()> now = [] { return absl::Now(); };
  std::function<void(absl::Duration)> sleep = [](absl::Duration d) { absl::SleepFor(d); };
};

enum class ProbeSet {
  kCompute,      // one GPU (GEMMs at the workload's shapes, bandwidth), or the CPU suite
  kCollectives,  // NCCL collectives over nodes x gpus_per_node ranks
};

// Where a probe job's wait stands, after each poll of its state.
struct ProbeWait {
  std::string job_id;
  std::string state;       // squeue's (PENDING, RUNNING, ...); empty: not known yet
  absl::Duration elapsed;  // since submission
  absl::Duration at_most;  // the wait's limit (queue time included)
};

struct ProbeRequest {
  std::string partition;
  // The job's Slurm time limit (-t), rounded up to whole minutes.
  absl::Duration time_limit = absl::Minutes(2);
  ProbeSet set = ProbeSet::kCompute;
  int nodes = 1;            // collectives only; the compute set uses one node
  int gpus_per_node = 0;    // 0: the partition has no GPUs, so the CPU (Kokkos) suite runs
  std::string shapes_file;  // compute on GPUs: the workload's xdeep.gemm_shapes/1 file
  // Compute on GPUs: GEMMs (xdeep.gemm_shapes/1) whose kernel cuBLASLt's
  // heuristic is asked for after the timed set (`--suite gemm-heuristic`,
  // nothing timed), merged into the report's gemm_algos; empty: none.
  std::string heuristic_shapes_file;
  // Compute on GPUs: the heuristic step alone (no timed set, no framework
  // probe): its report holds the answers (gemm_algos) and no GEMM timings.
  bool heuristic_only = false;
  // Called after every poll of the job's state; may be empty.
  std::function<void(const ProbeWait&)> on_wait;
  // Asked after every poll; true cancels the job (Cancelled). May be empty.
  std::function<bool()> cancelled;
};

// "probe job 42 (compute set, partition gpu): RUNNING, 0:40 elapsed, at most 5:00":
// what runs, for how long so far, and the longest the wait may take.
std::string DescribeWait(const ProbeRequest& request, const ProbeWait& wait);

struct ProbeSchedulerOptions {
  std::string probe_path;   // xdeep-probe as the compute nodes see it
  std::string reports_dir;  // on a file system the compute nodes share
  // argv of the framework probe (ProbeConfig::framework_probe); empty: not run.
  std::vector<std::string> framework_probe;
  std::string job_name = "xdeep-probe";
  absl::Duration poll_interval = absl::Seconds(1);
  absl::Duration command_timeout = absl::Seconds(30);  // one sbatch / squeue / scancel
};

struct ProbeOutcome {
  std::string job_id;
  std::string report_path;
  std::string log_path;  // the job's stdout / stderr (sbatch -o)
  profiler::Report report;
};

// A job's state as squeue shows it, reduced to what the wait needs.
struct JobState {
  bool in_queue = false;  // pending, running, completing, ...
  std::string state;      // squeue's job_state (COMPLETED, FAILED, TIMEOUT...); empty once purged
};

class ProbeScheduler {
 public:
  explicit ProbeScheduler(ProbeSchedulerOptions options, CommandRunner runner = RunCommand,
                          ProbeClock clock = {});

  // Submits one probe job and waits until it has left the queue, for at most `wait`
  // (queue time included). Errors, most specific first:
  //   InvalidArgument     the request (no partition, collectives without GPUs, ...);
  //   Unavailable         sbatch refused the job or could not be run;
  //   DeadlineExceeded    `wait` passed (the job is cancelled) or Slurm's time limit hit;
  //   Aborted             the job ended without writing a report;
  //   DataLoss            the report is not a valid xdeep.probe_report/1, or lacks the
  //                       figures the set produces;
  //   FailedPrecondition  the report lists probe errors (kept on disk for a look);
  //   Cancelled           request.cancelled() turned true (the job is cancelled).
  absl::StatusOr<ProbeOutcome> Run(const ProbeRequest& request, absl::Duration wait);

  // The pieces of Run, public so they are tested without Slurm.
  absl::Status Validate(const ProbeRequest& request) const;
  // The sbatch argv for `request`, writing the report to `report_path`.
  std::vector<std::string> SubmitCommand(const ProbeRequest& request,
                                         const std::string& report_path,
                                         const std::string& log_path) const;
  // xdeep-probe's own --time-limit: under the job's, so the probe's watchdog writes
  // its report (with errors) before Slurm kills the step, and the steps after
  // it (`after_s`, AfterStepsSeconds) still end within the job's limit.
  static int ProbeTimeLimitSeconds(absl::Duration job_time_limit, int after_s = 0);
  // Seconds the job keeps after the timed set for `request`'s later steps: the
  // heuristic's watchdog plus srun's start-up and the merge, or 0.
  static int AfterStepsSeconds(const ProbeRequest& request);
  // `sbatch --parsable` prints "jobid" or "jobid;cluster".
  static absl::StatusOr<std::string> ParseJobId(const std::string& sbatch_out);
  // Job `job_id` in `squeue --json`'s answer (Slurm 22.05 lists every job there).
  static JobState ParseSqueue(const CommandResult& result, const std::string& job_id);
  // Reads and checks the report a job of `request` wrote.
  static absl::StatusOr<profiler::Report> CheckReport(const std::string& path,
                                                      const ProbeRequest& request);

 private:
  absl::StatusOr<JobState> Poll(const std::string& job_id);
  void Cancel(const std::string& job_id);
  std::chrono::milliseconds CommandTimeout() const;

  ProbeSchedulerOptions options_;
  CommandRunner runner_;
  ProbeClock clock_;
};

}  // namespace xdeep::daemon
