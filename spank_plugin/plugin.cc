// Plugin behaviour per context (see plugin.h).
#include "spank_plugin/plugin.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spank_plugin/decision_output.h"
#include "spank_plugin/launch_args.h"

namespace xdeep::spank {
namespace {

// Set before re-executing: the decision, and the pid that re-executes. execv
// keeps the pid, so a matching pid means "this is the tuned launch itself";
// any other process that inherits the guard (an srun inside a tuned sbatch
// job) is already tuned and must not tune again.
constexpr const char* kGuardVar = "XDEEP_TUNED";
constexpr const char* kGuardPidVar = "XDEEP_REEXEC_PID";
// Carries the decision's admission token across the re-exec into the job's
// SPANK environment, where job_submit.lua finds it; never left in the job.
constexpr const char* kAdmissionVar = "XDEEP_ADMISSION";
// What is left of the launch's timeout_ms after the decision, for Bind and
// Report together: a hung daemon delays a tuned launch by timeout_ms at most.
constexpr const char* kWaitLeftVar = "XDEEP_WAIT_LEFT_MS";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

int EnvInt(const char* name) { return std::atoi(Env(name).c_str()); }

// "4(x2),2" -> 2: the smallest per-node count in Slurm's compressed form.
int MinOfCompressedList(const std::string& list) {
  int best = 0;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    int v = std::atoi(item.c_str());
    if (v > 0) best = best == 0 ? v : std::min(best, v);
  }
  return best;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

std::string ReportPath(const std::string& decision_id) {
  std::string dir = Env("XDEEP_REPORT_DIR");
  if (dir.empty()) {
    std::string home = Env("HOME");
    dir = (home.empty() ? std::string("/tmp") : home) + "/.cache/xdeep";
  }
  return dir + "/" + decision_id + ".steps";
}

}  // namespace

int Plugin::Init(const std::vector<std::string>& args) {
  std::string error;
  if (!ParsePluginConfig(args, &config_, &error)) {
    host_.error("xdeep: " + error);
    return -1;
  }
  return 0;
}

int Plugin::OnOption(OptionId id, const char* value) {
  std::string error;
  if (!options_.Set(id, value, &error)) {
    host_.error("xdeep: " + error);
    return -1;
  }
  return 0;
}

int Plugin::Refuse(const std::string& message) {
  host_.error("xdeep: " + message);
  return -1;
}

DaemonClient* Plugin::Client(std::string* error) {
  if (client_ == nullptr) client_ = host_.load_client(config_.daemon, error);
  return client_.get();
}

bool Plugin::BuildQuery(Launcher launcher, TuneMode mode, const std::vector<std::string>& argv,
                        int first_command, TuneQuery* q, std::string* error, bool* skip) {
  q->mode = std::string(TuneModeName(mode));
  q->launcher = launcher == Launcher::kSrun     ? "srun"
                : launcher == Launcher::kSbatch ? "sbatch"
                                                : "salloc";
  // The workload: --xdeep-workload (a file, else a preset name), else ./xdeep.toml.
  std::string workload = options_.workload();
  const bool explicit_request = options_.mode().has_value();
  if (workload.empty()) {
    if (std::filesystem::exists("xdeep.toml")) {
      workload = "xdeep.toml";
    } else if (!explicit_request) {
      *skip = true;  // tuning is on by site default, but this launch describes no workload
      return true;
    } else {
      *error =
          "no workload to tune: pass --xdeep-workload=FILE (or a preset such as gpt-1.3b), "
          "or put an xdeep.toml in the working directory";
      return false;
    }
  }
  if (std::filesystem::is_regular_file(workload)) {
    if (!ReadFile(workload, &q->workload_toml)) {
      *error = "cannot read workload file " + workload + "; check its permissions";
      return false;
    }
    q->workload_source = workload;
  } else if (workload.find('/') != std::string::npos || workload.ends_with(".toml")) {
    *error = "workload file " + workload + " does not exist; check the path";
    return false;
  } else {
    q->workload_preset = workload;
    q->workload_source = workload;
  }

  LaunchBounds bounds = ParseLaunchBounds(argv, first_command);
  q->max_nodes = bounds.nodes;
  q->max_tasks = bounds.tasks;
  q->max_gpus_per_node = bounds.gpus_per_node;
  q->max_gpus = bounds.gpus;
  q->partition = bounds.partition.empty() ? Env("SLURM_PARTITION") : bounds.partition;
  q->account = bounds.account.empty() ? Env("SLURM_ACCOUNT") : bounds.account;

  // Inside an allocation (srun in salloc or sbatch) a step cannot grow past it.
  if (launcher == Launcher::kSrun && !Env("SLURM_JOB_ID").empty()) {
    q->allocation_job_id = static_cast<uint32_t>(EnvInt("SLURM_JOB_ID"));
    q->allocation_nodes = EnvInt("SLURM_JOB_NUM_NODES");
    q->allocation_nodelist = Env("SLURM_JOB_NODELIST");
    int gpus = MinOfCompressedList(Env("SLURM_GPUS_PER_NODE"));
    if (gpus == 0 && q->allocation_nodes > 0) gpus = EnvInt("SLURM_GPUS") / q->allocation_nodes;
    if (gpus == 0) {
      *error = "the allocation holds no GPUs; request them on salloc/sbatch with --gpus-per-node";
      *skip = true;  // nothing to decide: run the step as the user wrote it
      return false;
    }
    // One task per GPU needs a CPU each: the allocation's CPUs bound it too.
    int cpus = MinOfCompressedList(Env("SLURM_JOB_CPUS_PER_NODE"));
    q->allocation_gpus_per_node = cpus > 0 ? std::min(gpus, cpus) : gpus;
    if (q->partition.empty()) q->partition = Env("SLURM_JOB_PARTITION");
  }
  q->objective = options_.objective();
  q->budget = options_.budget();
  q->deadline_s = options_.deadline_s();
  for (size_t i = std::max(first_command, 0); i < argv.size(); ++i) q->argv.push_back(argv[i]);
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) != nullptr) q->cwd = cwd;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  q->host = host;
  q->uid = getuid();
  return true;
}

int Plugin::InitPostOpt(Launcher launcher,
                        const std::function<std::vector<std::string>()>& read_argv,
                        int first_command) {
  started_ = std::chrono::steady_clock::now();
  const std::string guard = Env(kGuardVar);
  if (!guard.empty()) {
    // Already tuned: either this is the re-executed launch, or a process
    // inside a tuned job. Remember the decision to bind and report it.
    decision_id_ = guard;
    owns_launch_ = Env(kGuardPidVar) == std::to_string(getpid());
    if (!owns_launch_ && launcher != Launcher::kSrun) decision_id_.clear();
    const std::string token = Env(kAdmissionVar);
    unsetenv(kAdmissionVar);
    if (owns_launch_ && !Env(kWaitLeftVar).empty()) {
      wait_left_ = std::chrono::milliseconds(std::max(0, EnvInt(kWaitLeftVar)));
    }
    unsetenv(kWaitLeftVar);
    if (owns_launch_ && !token.empty() &&
        !(host_.set_job_env && host_.set_job_env(kAdmissionVar, token))) {
      host_.info(
          "xdeep: warning: cannot pass the admission token to slurmctld; a strict "
          "partition will refuse the job");
    }
    return 0;
  }
  std::string error;
  if (!options_.ApplyEnvironment(&error)) return Refuse(error);
  TuneMode mode = options_.mode().value_or(config_.default_on ? TuneMode::kAuto : TuneMode::kOff);
  if (mode == TuneMode::kOff) return 0;
  const bool implicit = !options_.mode().has_value();

  const std::vector<std::string> argv = read_argv();
  TuneQuery query;
  bool skip = false;
  if (!BuildQuery(launcher, mode, argv, first_command, &query, &error, &skip)) {
    if (skip) {
      host_.info("xdeep: warning: " + error + "; running the launch unchanged");
      return 0;
    }
    return Refuse(error);
  }
  if (skip) return 0;
  query.implicit = implicit;

  const auto deadline = started_ + std::chrono::milliseconds(config_.timeout_ms);
  auto unavailable = [&](const std::string& why) {
    if (config_.fail_closed) {
      return Refuse("tuning daemon unavailable (" + why +
                    "); this site requires a decision, so the launch is refused");
    }
    host_.info("xdeep: warning: tuning daemon unavailable (" + why +
               "); running the launch unchanged");
    return 0;
  };
  DaemonClient* client = Client(&error);
  if (client == nullptr) return unavailable(error);

  TuneAnswer answer;
  ClientError client_error;
  auto progress = [&](const std::string& stage, const std::string& line) {
    if (mode == TuneMode::kExplain || stage == "probe")
      host_.info("xdeep: [" + stage + "] " + line);
  };
  if (!client->Tune(query, deadline, progress, &answer, &client_error)) {
    if (client_error.kind == ClientError::kRefused) return Refuse(client_error.message);
    return unavailable(client_error.message + " at " + config_.daemon);
  }

  if (answer.skipped) {
    if (!implicit) host_.info("xdeep: not tuned: " + answer.skip_reason);
    return 0;
  }

  switch (mode) {
    case TuneMode::kExplain:
      for (const std::string& line : ExplainTable(answer)) host_.info("xdeep: " + line);
      host_.info("xdeep: explain mode: nothing was launched");
      host_.exit_without_launch();
      return 0;
    case TuneMode::kAdvise:
      host_.info("xdeep: advice: " + SummaryLine(answer));
      host_.info("xdeep: advise mode: running the launch unchanged");
      return 0;
    default:
      break;
  }

  host_.info("xdeep: " + SummaryLine(answer));
  const std::string report = ReportPath(answer.decision_id);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(report).parent_path(), ec);
  for (const auto& [name, value] : DecisionEnvironment(answer, report)) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  setenv(kGuardVar, answer.decision_id.c_str(), 1);
  setenv(kGuardPidVar, std::to_string(getpid()).c_str(), 1);
  if (!answer.admission_token.empty()) setenv(kAdmissionVar, answer.admission_token.c_str(), 1);
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started_);
  const int64_t left = std::max<int64_t>(0, config_.timeout_ms - spent.count());
  setenv(kWaitLeftVar, std::to_string(left).c_str(), 1);
  const LaunchShape shape{answer.best.nodes, answer.best.tasks, answer.best.gpus_per_node};
  host_.reexec(RewriteLaunch(argv, first_command, shape));
  // Only reached when execv failed: the launch still runs, untuned.
  unsetenv(kGuardVar);
  unsetenv(kAdmissionVar);
  unsetenv(kWaitLeftVar);
  host_.info("xdeep: warning: could not re-execute the launch; running it unchanged");
  return 0;
}

std::chrono::steady_clock::time_point Plugin::WaitDeadline() const {
  return std::chrono::steady_clock::now() +
         wait_left_.value_or(std::chrono::milliseconds(config_.timeout_ms));
}

void Plugin::WaitSpent(std::chrono::steady_clock::time_point since) {
  if (!wait_left_) return;
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - since);
  wait_left_ = std::max(std::chrono::milliseconds(0), *wait_left_ - spent);
}

void Plugin::LocalUserInit(uint32_t job_id, uint32_t step_id) {
  if (decision_id_.empty() || job_id == 0) return;
  std::string error;
  DaemonClient* client = Client(&error);
  if (client == nullptr) return;
  ClientError client_error;
  const auto asked = std::chrono::steady_clock::now();
  const bool bound = client->Bind(decision_id_, job_id, step_id, WaitDeadline(), &client_error);
  WaitSpent(asked);
  if (!bound) {
    host_.info("xdeep: warning: could not bind job " + std::to_string(job_id) +
               " to its decision: " + client_error.message);
  }
}

void Plugin::LocalExit(uint32_t job_id) {
  // Called from slurm_spank_exit and again from atexit (srun skips the SPANK
  // exit hook when its allocation fails): report once.
  if (decision_id_.empty() || reported_) return;
  reported_ = true;
  // A step inside a tuned job that failed to start does not end the job.
  if (job_id == 0 && !owns_launch_) return;
  std::string error;
  DaemonClient* client = Client(&error);
  if (client == nullptr) return;
  ReportQuery report;
  report.decision_id = decision_id_;
  report.job_id = job_id;
  // No job id at exit: the allocation or step never came to be.
  report.launch_failed = job_id == 0;
  report.final = owns_launch_;
  report.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const std::string path = Env("XDEEP_REPORT");
  if (!path.empty()) {
    std::ifstream in(path);
    double t = 0;
    while (in >> t) report.step_times_s.push_back(t);
  }
  ClientError client_error;
  if (!client->Report(report, WaitDeadline(), &client_error)) {
    host_.info("xdeep: warning: could not report the outcome: " + client_error.message);
  }
}

}  // namespace xdeep::spank
