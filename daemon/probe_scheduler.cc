// ProbeScheduler (see probe_scheduler.h): sbatch, squeue polling, scancel, and the
// report check.
#include "daemon/probe_scheduler.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "daemon/slurm_jobs.h"

namespace xdeep::daemon {
namespace {

// One word for sh: sbatch --wrap puts the string into "#!/bin/sh" as it is.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// The heuristic step's own watchdog: thousands of shapes take seconds.
constexpr int kHeuristicTimeLimitS = 60;
// srun's start-up of the heuristic step and the merge of its answers.
constexpr int kHeuristicOverheadS = 10;
// The least a timed compute set is given (56 distinct GEMM layers took under
// 30 s on an H200, ProbeMicroBatches): a shorter one would time almost nothing.
constexpr int kMinTimedSetS = 30;

int64_t WholeMinutes(absl::Duration d) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(absl::ToDoubleMinutes(d))));
}

// The last lines of the job's log, for an error message that says why.
std::string LogTail(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "(no log)";
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!Trim(line).empty()) lines.push_back(line);
  }
  if (lines.empty()) return "(empty log)";
  std::string out;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i) {
    out += (out.empty() ? "" : " | ") + lines[i];
  }
  return out;
}

const char* SetName(ProbeSet set) {
  return set == ProbeSet::kCollectives ? "collectives" : "compute";
}

}  // namespace

ProbeScheduler::ProbeScheduler(ProbeSchedulerOptions options, CommandRunner runner,
                               ProbeClock clock)
    : options_(std::move(options)), runner_(std::move(runner)), clock_(std::move(clock)) {}

std::chrono::milliseconds ProbeScheduler::CommandTimeout() const {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.command_timeout));
}

absl::Status ProbeScheduler::Validate(const ProbeRequest& r) const {
  if (options_.probe_path.empty()) return absl::InvalidArgumentError("no xdeep-probe path");
  if (options_.reports_dir.empty()) return absl::InvalidArgumentError("no reports directory");
  if (r.partition.empty()) return absl::InvalidArgumentError("probe job: no partition");
  if (r.time_limit <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("probe job: time limit must be positive");
  }
  if (r.nodes < 1 || r.gpus_per_node < 0) {
    return absl::InvalidArgumentError(
        fmt::format("probe job: bad layout {} nodes x {} GPUs", r.nodes, r.gpus_per_node));
  }
  if (r.set == ProbeSet::kCollectives && r.gpus_per_node == 0) {
    return absl::InvalidArgumentError(
        fmt::format("probe job: collectives need GPUs; partition {} has none", r.partition));
  }
  if (r.set == ProbeSet::kCompute && r.nodes != 1) {
    return absl::InvalidArgumentError("probe job: the compute set runs on one node");
  }
  if (r.heuristic_only && (r.set != ProbeSet::kCompute || r.gpus_per_node == 0 ||
                           r.heuristic_shapes_file.empty() || !r.shapes_file.empty())) {
    return absl::InvalidArgumentError(
        "probe job: a heuristic-only job runs the GPU compute set's heuristic step on a shapes "
        "file alone");
  }
  if (const int after_s = AfterStepsSeconds(r);
      after_s > 0 && ProbeTimeLimitSeconds(r.time_limit, after_s) < kMinTimedSetS) {
    // The smallest whole-minute limit that leaves the timed set its minimum.
    int64_t minutes = 1;
    while (ProbeTimeLimitSeconds(absl::Minutes(minutes), after_s) < kMinTimedSetS) ++minutes;
    return absl::InvalidArgumentError(fmt::format(
        "probe job: a time limit of {} s leaves the GPU compute set {} s after the heuristic "
        "step's {} s (at least {} s needed); set [probes] time_limit_s to {} or more",
        absl::ToInt64Seconds(r.time_limit), ProbeTimeLimitSeconds(r.time_limit, after_s), after_s,
        kMinTimedSetS, minutes * 60));
  }
  for (const std::string* file : {&r.shapes_file, &r.heuristic_shapes_file}) {
    if (file->empty()) continue;
    if (r.set != ProbeSet::kCompute || r.gpus_per_node == 0) {
      return absl::InvalidArgumentError("probe job: a shapes file is for the GPU compute set");
    }
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*file, ec)) {
      return absl::InvalidArgumentError(
          fmt::format("probe job: shapes file {} does not exist", *file));
    }
  }
  return absl::OkStatus();
}

int ProbeScheduler::ProbeTimeLimitSeconds(absl::Duration job_time_limit, int after_s) {
  // Slurm kills the job at its limit: leave a fifth (at least 10 s) for the
  // watchdog to write the report and for srun to start, and the later steps'
  // time, or a timed set that runs to its watchdog ends the job in TIMEOUT.
  const int64_t job_s = WholeMinutes(job_time_limit) * 60;
  return static_cast<int>(job_s - std::max<int64_t>(10, job_s / 5) - after_s);
}

int ProbeScheduler::AfterStepsSeconds(const ProbeRequest& r) {
  const bool heuristic_after = r.set == ProbeSet::kCompute && r.gpus_per_node > 0 &&
                               !r.heuristic_only && !r.heuristic_shapes_file.empty();
  return heuristic_after ? kHeuristicTimeLimitS + kHeuristicOverheadS : 0;
}

std::vector<std::string> ProbeScheduler::SubmitCommand(const ProbeRequest& r,
                                                       const std::string& report_path,
                                                       const std::string& log_path) const {
  const bool gpus = r.gpus_per_node > 0;
  const int nodes = r.set == ProbeSet::kCollectives ? r.nodes : 1;
  // Compute: one task on one GPU. Collectives: one task per GPU, as training runs.
  const int tasks_per_node = r.set == ProbeSet::kCollectives ? r.gpus_per_node : 1;
  std::vector<std::string> argv = {"sbatch",
                                   "--parsable",
                                   "-p",
                                   r.partition,
                                   "-t",
                                   std::to_string(WholeMinutes(r.time_limit)),
                                   "-N",
                                   std::to_string(nodes),
                                   fmt::format("--ntasks-per-node={}", tasks_per_node),
                                   "-J",
                                   options_.job_name,
                                   "-o",
                                   log_path};
  // The framework probe also times FSDP and the ranks' spread as two-GPU
  // training runs them, where the node has two GPUs: the compute job holds two
  // then (the probe budget charges the node's GPUs either way); the GPU probes
  // use the first.
  const bool framework =
      r.set == ProbeSet::kCompute && gpus && !r.heuristic_only && !options_.framework_probe.empty();
  const int framework_ranks = framework ? std::min(2, r.gpus_per_node) : 0;
  if (gpus) {
    argv.push_back(fmt::format("--gpus-per-node={}", std::max(tasks_per_node, framework_ranks)));
  }

  std::vector<std::string> step = {"srun", options_.probe_path};
  if (r.set == ProbeSet::kCollectives) {
    step.push_back("collectives");
  } else if (r.heuristic_only) {
    // Shapes a decision found without an answer: the heuristic alone.
    step.insert(step.end(), {"compute", "--suite", "gemm-heuristic", "--shapes",
                             r.heuristic_shapes_file, "--no-anchors"});
  } else {
    step.insert(step.end(), {"compute", "--suite", gpus ? "gpu" : "cpu"});
    if (!r.shapes_file.empty()) step.insert(step.end(), {"--shapes", r.shapes_file});
  }
  step.insert(
      step.end(),
      {"--time-limit", std::to_string(ProbeTimeLimitSeconds(r.time_limit, AfterStepsSeconds(r))),
       "--out", report_path});
  auto words = [](const std::vector<std::string>& argv) {
    std::string line;
    for (const std::string& word : argv) line += (line.empty() ? "" : " ") + ShellQuote(word);
    return line;
  };
  std::string wrap = words(step);
  // Steps after the GPU set whose figures are merged into its report. The
  // job's exit status stays the compute set's, and a step that fails leaves
  // the report as it was.
  std::string steps;
  if (r.set == ProbeSet::kCompute && gpus && !r.heuristic_only &&
      !r.heuristic_shapes_file.empty()) {
    // The kernel cuBLASLt's heuristic picks for each GEMM the search may
    // consider (nothing timed; ~1 ms a shape): the GEMM model times those
    // shapes on their kernel's tile grid (tuner/gemm_kernel_table.h).
    const std::string out = report_path + ".heuristic.json";
    steps +=
        fmt::format(" {} && {};",
                    words({"srun", options_.probe_path, "compute", "--suite", "gemm-heuristic",
                           "--shapes", r.heuristic_shapes_file, "--no-anchors", "--time-limit",
                           std::to_string(kHeuristicTimeLimitS), "--out", out}),
                    words({options_.probe_path, "merge", report_path, out, "--out", report_path}));
  }
  if (framework) {
    // The framework's figures: one rank, then two where the job holds two
    // GPUs. A framework probe that fails (no PyTorch there) adds nothing.
    for (int ranks = 1; ranks <= framework_ranks; ++ranks) {
      const std::string out = report_path + (ranks == 1 ? ".framework.json" : ".framework2.json");
      std::vector<std::string> fw = {"srun", "timeout", "120"};
      fw.insert(fw.end(), options_.framework_probe.begin(), options_.framework_probe.end());
      if (ranks > 1) fw.insert(fw.end(), {"--ranks", std::to_string(ranks)});
      fw.insert(fw.end(), {"--out", out});
      steps += fmt::format(
          " {} && {};", words(fw),
          words({options_.probe_path, "merge", report_path, out, "--out", report_path}));
    }
  }
  if (!steps.empty()) {
    wrap = fmt::format("{}; rc=$?; if [ -e {} ]; then{} fi; exit $rc", wrap,
                       ShellQuote(report_path), steps);
  }
  argv.insert(argv.end(), {"--wrap", wrap});
  return argv;
}

absl::StatusOr<std::string> ProbeScheduler::ParseJobId(const std::string& sbatch_out) {
  std::string id = Trim(sbatch_out);
  if (size_t semi = id.find(';'); semi != std::string::npos) id.resize(semi);
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return absl::UnavailableError(fmt::format("sbatch printed no job id: '{}'", Trim(sbatch_out)));
  }
  return id;
}

JobState ProbeScheduler::ParseSqueue(const CommandResult& result, const std::string& job_id) {
  JobState s;
  if (result.exit_code != 0) return s;
  absl::StatusOr<std::vector<SlurmJob>> jobs = ParseSqueueJson(result.out);
  if (!jobs.ok()) return s;
  // Without accounting, a finished job stays listed for MinJobAge and is then
  // purged: not listed means gone.
  for (const SlurmJob& job : *jobs) {
    if (std::to_string(job.job_id) != job_id) continue;
    s.state = job.state;
    s.in_queue = JobInQueue(job.state);
  }
  return s;
}

absl::StatusOr<JobState> ProbeScheduler::Poll(const std::string& job_id) {
  absl::StatusOr<CommandResult> r = runner_({"squeue", "--json"}, CommandTimeout());
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 || !ParseSqueueJson(r->out).ok()) {
    // slurmctld busy or restarting: not an answer about the job; ask again.
    return absl::UnavailableError(fmt::format("squeue: {}", Trim(r->err)));
  }
  return ParseSqueue(*r, job_id);
}

void ProbeScheduler::Cancel(const std::string& job_id) {
  // Best effort: if scancel fails the job still ends at its own time limit.
  (void)runner_({"scancel", job_id}, CommandTimeout());
}

absl::StatusOr<profiler::Report> ProbeScheduler::CheckReport(const std::string& path,
                                                             const ProbeRequest& request) {
  absl::StatusOr<profiler::Report> report = profiler::ReadReport(path);
  if (!report.ok()) {
    return absl::DataLossError(fmt::format("probe report {} is invalid: {}", path,
                                           std::string(report.status().message())));
  }
  if (!report->errors.empty()) {
    std::string what;
    for (const profiler::ErrorEntry& e : report->errors) {
      what += fmt::format("{}{}: {}", what.empty() ? "" : "; ", e.probe, e.message);
    }
    return absl::FailedPreconditionError(
        fmt::format("probe report {} lists errors: {}", path, what));
  }
  // A report that parses but holds none of the set's figures would feed nothing (or,
  // worse, a default) into the hardware profile.
  bool has_figures = false;
  if (request.set == ProbeSet::kCollectives) {
    has_figures = !report->collectives.empty();
  } else if (request.heuristic_only) {
    has_figures = !report->gemm_algos.empty();
  } else if (request.gpus_per_node > 0) {
    has_figures = !report->gemm.empty();
  } else {
    has_figures = std::any_of(report->bandwidth.begin(), report->bandwidth.end(),
                              [](const profiler::BandwidthEntry& b) { return b.gbps > 0; });
  }
  if (!has_figures) {
    return absl::DataLossError(
        fmt::format("probe report {} holds no {} figures", path, SetName(request.set)));
  }
  return report;
}

namespace {

// "1:05:09", "4:07": a wait's figures as a clock shows them.
std::string ClockText(absl::Duration d) {
  const int64_t s = std::max<int64_t>(0, absl::ToInt64Seconds(d));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

std::string DescribeWait(const ProbeRequest& request, const ProbeWait& wait) {
  const std::string set = request.set == ProbeSet::kCollectives
                              ? fmt::format("collectives over {} nodes", request.nodes)
                          : request.heuristic_only    ? std::string("cuBLASLt heuristic")
                          : request.gpus_per_node > 0 ? std::string("compute set")
                                                      : std::string("CPU suite");
  return fmt::format("probe job {} ({}, partition {}): {}, {} elapsed, at most {}", wait.job_id,
                     set, request.partition, wait.state.empty() ? "submitted" : wait.state,
                     ClockText(wait.elapsed), ClockText(wait.at_most));
}

namespace {
// Makes report names unique within this process: the daemon runs a
// scheduler per job, and a heuristic-only job may start in the same second as
// another probe.
std::atomic<int> submitted{0};
}  // namespace

absl::StatusOr<ProbeOutcome> ProbeScheduler::Run(const ProbeRequest& request, absl::Duration wait) {
  if (absl::Status s = Validate(request); !s.ok()) return s;
  const absl::Time deadline = clock_.now() + wait;
  std::error_code ec;
  std::filesystem::create_directories(options_.reports_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        fmt::format("cannot create {}: {}", options_.reports_dir, ec.message()));
  }
  const std::string tag = fmt::format(
      "{}-{}-{}-{}", SetName(request.set),
      absl::FormatTime("%Y%m%dT%H%M%S", clock_.now(), absl::UTCTimeZone()), getpid(), ++submitted);
  ProbeOutcome out;
  out.report_path =
      (std::filesystem::path(options_.reports_dir) / ("probe-" + tag + ".json")).string();
  out.log_path = (std::filesystem::path(options_.reports_dir) / ("probe-" + tag + ".out")).string();

  absl::StatusOr<CommandResult> sub =
      runner_(SubmitCommand(request, out.report_path, out.log_path), CommandTimeout());
  if (!sub.ok())
    return absl::UnavailableError(fmt::format("sbatch: {}", std::string(sub.status().message())));
  if (sub->exit_code != 0) {
    return absl::UnavailableError(
        fmt::format("sbatch refused the probe job (exit {}): {}", sub->exit_code, Trim(sub->err)));
  }
  absl::StatusOr<std::string> id = ParseJobId(sub->out);
  if (!id.ok()) return id.status();
  out.job_id = *id;

  JobState last;
  const absl::Time submitted = clock_.now();
  for (;;) {
    absl::StatusOr<JobState> s = Poll(out.job_id);
    if (s.ok()) {
      last = *s;
      if (!last.in_queue) break;
    }
    if (request.on_wait) {
      request.on_wait({out.job_id, last.state, clock_.now() - submitted, wait});
    }
    if (request.cancelled && request.cancelled()) {
      Cancel(out.job_id);
      return absl::CancelledError(fmt::format("probe job {} cancelled", out.job_id));
    }
    if (clock_.now() >= deadline) {
      Cancel(out.job_id);
      return absl::DeadlineExceededError(fmt::format(
          "probe job {} did not finish within {} ({}); cancelled", out.job_id,
          absl::FormatDuration(wait), last.state.empty() ? "state unknown" : last.state));
    }
    clock_.sleep(std::min(options_.poll_interval, deadline - clock_.now()));
  }

  if (last.state == "TIMEOUT" || last.state == "DEADLINE") {
    return absl::DeadlineExceededError(
        fmt::format("probe job {} hit its Slurm time limit of {} min; log {}: {}", out.job_id,
                    WholeMinutes(request.time_limit), out.log_path, LogTail(out.log_path)));
  }
  if (!std::filesystem::exists(out.report_path, ec)) {
    return absl::AbortedError(fmt::format("probe job {} ended ({}) without a report; log {}: {}",
                                          out.job_id,
                                          last.state.empty() ? "gone from the queue" : last.state,
                                          out.log_path, LogTail(out.log_path)));
  }
  absl::StatusOr<profiler::Report> report = CheckReport(out.report_path, request);
  if (!report.ok()) {
    return absl::Status(
        report.status().code(),
        fmt::format("probe job {}: {}", out.job_id, std::string(report.status().message())));
  }
  out.report = *std::move(report);
  return out;
}

}  // namespace xdeep::daemon
