// Plugin behaviour per context (see plugin.h).
#include "spank_plugin/plugin.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "client/decision_output.h"
#include "client/progress_line.h"
#include "client/run_decision.h"
#include "client/version_skew.h"
#include "spank_plugin/allocation.h"
#include "spank_plugin/batch_script.h"
#include "spank_plugin/launch_args.h"
#include "spank_plugin/node_features.h"
#include "spank_plugin/workload_file.h"

namespace xdeep::spank {

using client::AppLauncher;
using client::ClientError;
using client::DaemonClient;
using client::DecisionVariables;
using client::ExplainTable;
using client::LauncherOfProgram;
using client::ParseAppLauncher;
using client::PerNode;
using client::ProgressLine;
using client::ReportQuery;
using client::RunDecisionOf;
using client::SummaryLine;
using client::TableLayout;
using client::TerminalColumns;
using client::TuneAnswer;
using client::TuneQuery;
using client::Variables;
using client::VersionSkew;
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
// What is left of the launch's timeout_ms after the decision, for the
// Report: a hung daemon delays a tuned launch by timeout_ms at most.
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

// Heterogeneous launches put ':' between components: srun anywhere in its
// command line, sbatch / salloc among their options (their optind stops at
// the first ':').
bool IsHeterogeneous(Launcher launcher, const std::vector<std::string>& argv, int first_command) {
  const size_t end = launcher == Launcher::kSrun
                         ? argv.size()
                         : std::min<size_t>(argv.size(), std::max(first_command, 0) + 1);
  for (size_t i = 1; i < end; ++i)
    if (argv[i] == ":") return true;
  return false;
}

// Options that set the layout (nodes, tasks, GPUs, node list): a site-default
// launch keeps them as given, and an srun inside an allocation finds the
// allocation's own in its input environment.
bool SetsLayout(const GivenOption& g) {
  if (g.option == nullptr) return false;
  switch (g.option->effect) {
    case Effect::kNodes:
    case Effect::kTasks:
    case Effect::kGpusPerNode:
    case Effect::kGpus:
    case Effect::kGpusPerTask:
    case Effect::kTasksPerNode:
    case Effect::kTasksPerGpu:
    case Effect::kGres:
    case Effect::kNodelist:
      return true;
    default:
      return false;
  }
}

bool InAllocation(Launcher launcher) {
  return launcher == Launcher::kSrun && !Env("SLURM_JOB_ID").empty();
}

bool IsModeName(const std::string& word) {
  return word == "auto" || word == "advise" || word == "explain" || word == "off" || word == "on";
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

void Plugin::UnsetXdeepEnvironment() {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry = *e;
    if (entry.starts_with("XDEEP_")) names.emplace_back(entry.substr(0, entry.find('=')));
  }
  for (const std::string& name : names) unsetenv(name.c_str());
}

void Plugin::PrepareStepEnvironment() {
  const std::string exported = Env("SLURM_EXPORT_ENV");
  if (Env(kGuardVar).empty() || !RestrictsEnvironment(exported)) return;
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry = *e;
    if (!entry.starts_with("XDEEP_")) continue;
    std::string name(entry.substr(0, entry.find('=')));
    if (exported.find(name) == std::string::npos) names.push_back(std::move(name));
  }
  if (!names.empty())
    setenv("SLURM_EXPORT_ENV", ExportAlso(Launcher::kSrun, exported, names).c_str(), 1);
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

bool Plugin::ReadBounds(Launcher launcher, const std::vector<std::string>& argv, int first_command,
                        std::string* error) {
  // srun tunes component 0 of a heterogeneous step (its options end at
  // optind); a heterogeneous allocation's components share one submission.
  if (launcher != Launcher::kSrun && IsHeterogeneous(launcher, argv, first_command)) {
    *error =
        "a heterogeneous allocation (components joined by ':') cannot be tuned: xdeep decides "
        "one layout per launch; submit each component as its own job";
    return false;
  }
  std::vector<GivenOption> given = CommandLineOptions(launcher, argv, first_command);
  std::vector<GivenOption> env =
      EnvironmentOptions(launcher, [](const char* n) -> const char* { return std::getenv(n); });
  given.insert(given.end(), env.begin(), env.end());
  bool wrap = false;
  for (const GivenOption& g : given)
    wrap |= g.option != nullptr && g.option->effect == Effect::kWrap;
  if (launcher == Launcher::kSbatch && !wrap) {
    BatchDirectives script;
    const bool on_stdin = first_command < 0 || static_cast<size_t>(first_command) >= argv.size();
    const bool read = on_stdin ? ReadStdinScript(&script, error)
                               : ReadBatchScript(argv[first_command], &script, error);
    if (!read) return false;
    if (script.heterogeneous) {
      *error =
          "a heterogeneous batch job (#SBATCH hetjob) cannot be tuned: xdeep decides one layout "
          "per launch; tune each component as its own job";
      return false;
    }
    script_on_stdin_ = on_stdin;
    std::vector<GivenOption> lines =
        ParseOptions(launcher, script.args, 0, script.args.size(), OptionSource::kScript);
    given.insert(given.end(), lines.begin(), lines.end());
  }
  bounds_ = ReadLaunchBounds(std::move(given));
  if (InAllocation(launcher)) {
    // An srun's input environment inside an allocation describes the
    // allocation (salloc -N1 sets SLURM_NTASKS=1 and SLURM_JOB_NUM_NODES=1),
    // not limits of this step: the allocation's own record bounds the step,
    // and the rewrite still overrides these variables.
    std::vector<GivenOption> own;
    for (const GivenOption& g : bounds_.given)
      if (g.source != OptionSource::kEnvironment || !SetsLayout(g)) own.push_back(g);
    const LaunchBounds mine = ReadLaunchBounds(std::move(own));
    bounds_.nodes = mine.nodes;
    bounds_.tasks = mine.tasks;
    bounds_.gpus_per_node = mine.gpus_per_node;
    bounds_.gpus = mine.gpus;
    bounds_.tasks_per_node = mine.tasks_per_node;
  }
  if (!bounds_.refusal.empty()) {
    *error = bounds_.refusal;
    return false;
  }
  if (IsHeterogeneous(launcher, argv, first_command) && RestrictsEnvironment(bounds_.export_env)) {
    *error = "--export=" + bounds_.export_env +
             " on a heterogeneous step leaves no way to hand the decision to component 0 "
             "alone; use --export=ALL there, or tune the component as its own launch";
    return false;
  }
  return true;
}

bool Plugin::ReadWorkload(TuneQuery* q, std::string* error, bool* skip) {
  // --xdeep-workload (a file, else a preset name), else xdeep.toml where the
  // job runs (-D / --chdir, else the current directory).
  std::string workload = options_.workload();
  if (workload.empty()) {
    const std::string dir = bounds_.chdir.empty() ? "" : bounds_.chdir + "/";
    const std::string candidate = dir + "xdeep.toml";
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0) {
      workload = candidate;
    } else if (!options_.mode().has_value()) {
      *skip = true;  // tuning is on by site default, but this launch describes no workload
      return true;
    } else {
      *error =
          "no workload to tune: pass --xdeep-workload=FILE (or a preset such as gpt-1.3b), "
          "or put an xdeep.toml in " +
          (dir.empty() ? std::string("the working directory") : dir);
      return false;
    }
  }
  // A preset is a plain name; anything that looks like or is a path is a file.
  struct stat st {};
  if (stat(workload.c_str(), &st) == 0 || workload.find('/') != std::string::npos ||
      workload.ends_with(".toml")) {
    if (!ReadWorkloadFile(workload, &q->workload_toml, error)) return false;
    q->workload_source = workload;
  } else {
    q->workload_preset = workload;
    q->workload_source = workload;
  }
  return true;
}

bool Plugin::NodeBounds(TuneQuery* q, std::string* error) {
  const LaunchBounds& b = bounds_;
  const bool memory = !b.mem_per_cpu.empty() || !b.mem_per_gpu.empty();
  const long node_memory = MemoryMb(b.mem_per_node);
  // Inside an allocation the allocation's own size bounds the step.
  if ((b.constraint.empty() && !memory && node_memory <= 0) || !Env("SLURM_JOB_ID").empty())
    return true;
  // Without sinfo's answer these stay Slurm's checks alone.
  std::string output, why;
  if (!RunSinfo(config_.timeout_ms, &output, &why)) return true;
  const PartitionNodes nodes = ReadPartitionNodes(output, b.partition, b.constraint, node_memory);
  const std::string partition =
      b.partition.empty() ? std::string("the default partition") : "partition " + b.partition;
  if (nodes.matching == 0) {
    *error = "no node of " + partition +
             (b.constraint.empty() ? "" : " has the features -C " + b.constraint) +
             (b.constraint.empty() || node_memory <= 0 ? "" : " and") +
             (node_memory <= 0 ? "" : " has --mem " + std::to_string(node_memory) + " MB") +
             "; check them against sinfo -N -o '%N %f %m'";
    return false;
  }
  if (nodes.matching > 0)
    q->max_nodes = q->max_nodes > 0 ? std::min(q->max_nodes, nodes.matching) : nodes.matching;
  if (!memory || nodes.memory_mb <= 0) return true;
  // One task per GPU: the memory each GPU's task asks for.
  long per_gpu = MemoryMb(b.mem_per_gpu);
  if (per_gpu <= 0) per_gpu = MemoryMb(b.mem_per_cpu) * std::max(b.cpus_per_task, 1);
  if (per_gpu <= 0) return true;
  const int fit = static_cast<int>(nodes.memory_mb / per_gpu);
  if (fit == 0) {
    *error = "--mem-per-gpu / --mem-per-cpu ask " + std::to_string(per_gpu) +
             " MB for each GPU's task, and a node of " + partition + " has " +
             std::to_string(nodes.memory_mb) + " MB; lower it";
    return false;
  }
  q->max_gpus_per_node = q->max_gpus_per_node > 0 ? std::min(q->max_gpus_per_node, fit) : fit;
  return true;
}

bool Plugin::BuildQuery(Launcher launcher, TuneMode mode, const std::vector<std::string>& argv,
                        int first_command, TuneQuery* q, std::string* error, bool* skip) {
  q->mode = std::string(TuneModeName(mode));
  q->launcher = std::string(LauncherName(launcher));
  // The bounds first: -D says where to look for xdeep.toml. Their error is
  // reported only when this launch has a workload to tune at all.
  std::string bounds_error;
  const bool bounds_ok = ReadBounds(launcher, argv, first_command, &bounds_error);
  if (!ReadWorkload(q, error, skip)) return false;
  if (*skip) return true;
  if (!bounds_ok) {
    *error = bounds_error;
    *skip = !options_.mode().has_value();  // a site-default launch runs as written
    return false;
  }

  const LaunchBounds& bounds = bounds_;
  q->max_nodes = bounds.nodes;
  if (!bounds.nodelist.empty()) {
    const int listed = static_cast<int>(bounds.nodelist.size());
    q->max_nodes = q->max_nodes > 0 ? std::min(q->max_nodes, listed) : listed;
  }
  // A per-node launcher's tasks are nodes, not GPUs (srun -N2
  // --ntasks-per-node=1 --gpus-per-node=4 torchrun ...): its task counts bound nothing.
  launcher_ = options_.launcher();
  if (launcher_.empty() && static_cast<size_t>(std::max(first_command, 0)) < argv.size())
    launcher_ = LauncherOfProgram(argv[std::max(first_command, 0)]);
  AppLauncher app = AppLauncher::kSrun;
  const bool per_node = ParseAppLauncher(launcher_, &app) && PerNode(app);
  q->max_tasks = per_node ? 0 : bounds.tasks;
  q->max_gpus_per_node = bounds.gpus_per_node;
  q->max_gpus = bounds.gpus;
  q->max_tasks_per_node = per_node ? 0 : bounds.tasks_per_node;
  q->cpus_per_task = bounds.cpus_per_task;
  q->excluded_nodes = bounds.excluded_nodes;
  q->partition = bounds.partition;
  q->account = bounds.account;
  if (!NodeBounds(q, error)) {
    *skip = !options_.mode().has_value();
    return false;
  }

  q->time_limit_s = bounds.time_limit_s;
  // Inside an allocation (srun in salloc or sbatch) a step cannot grow past it.
  if (InAllocation(launcher)) {
    q->allocation_job_id = static_cast<uint32_t>(EnvInt("SLURM_JOB_ID"));
    q->allocation_nodes = EnvInt("SLURM_JOB_NUM_NODES");
    q->allocation_nodelist = Env("SLURM_JOB_NODELIST");
    // Slurm's record of the job counts its GPUs however they were asked
    // for; without it, the variables salloc/sbatch set (not --gres).
    Allocation held;
    std::string why;
    int gpus = 0;
    if (ReadAllocation(q->allocation_job_id, config_.timeout_ms, &held, &why)) {
      if (held.nodes > 0) q->allocation_nodes = held.nodes;
      gpus = held.gpus_per_node;
      q->allocation_gpu_request = held.gpu_request;
      q->allocation_time_left_s = held.time_left_s;
    } else {
      gpus = MinOfCompressedList(Env("SLURM_GPUS_PER_NODE"));
      if (gpus == 0 && q->allocation_nodes > 0)
        gpus = EnvInt("SLURM_GPUS") / q->allocation_nodes;
    }
    if (gpus == 0) {
      *error = "the allocation holds no GPUs on every node" +
               (why.empty() ? std::string() : " (" + why + ")") +
               "; request them on salloc/sbatch with --gpus-per-node or --gres=gpu:N";
      *skip = true;  // nothing to decide: run the step as the user wrote it
      return false;
    }
    // One task per GPU, whatever the allocation's task count: a step with
    // more tasks than the allocation's CPUs runs with --overcommit.
    q->allocation_gpus_per_node = gpus;
    q->allocation_cpus_per_node = MinOfCompressedList(Env("SLURM_JOB_CPUS_PER_NODE"));
    if (q->partition.empty()) q->partition = Env("SLURM_JOB_PARTITION");
  }
  q->objective = options_.objective();
  q->budget = options_.budget();
  q->deadline_s = options_.deadline_s();
  q->cost_tolerance_pct = options_.cost_tolerance_pct().value_or(-1);
  q->strategies = options_.strategies();
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
  // srun calls this once per component of a heterogeneous step; the first
  // call decides for the launch.
  if (post_opt_seen_) return 0;
  post_opt_seen_ = true;
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
    // A tuned heterogeneous step carries the decision in component 0's
    // --export; the other components must not inherit it from this process.
    if (owns_launch_ && IsHeterogeneous(launcher, read_argv(), first_command))
      UnsetXdeepEnvironment();
    return 0;
  }
  std::string error;
  options_.ApplyTuneEnvironment(&error);
  if (!error.empty()) host_.info("xdeep: warning: " + error);
  TuneMode mode = options_.mode().value_or(config_.default_on ? TuneMode::kAuto : TuneMode::kOff);
  if (mode == TuneMode::kOff) return 0;
  const bool implicit = !options_.mode().has_value();
  // advise promises to run the launch as written: what would stop any other
  // mode is a warning there.
  auto stop = [&](const std::string& message) {
    if (mode != TuneMode::kAdvise) return Refuse(message);
    host_.info("xdeep: warning: " + message + "; advise mode runs the launch unchanged");
    return 0;
  };

  const std::vector<std::string> argv = read_argv();
  // "--xdeep-tune explain prog": getopt leaves an optional argument's
  // separate word as the program; running a program called "explain" (tuned
  // and charged) is never what was meant.
  if (options_.bare_tune() && first_command > 0 &&
      static_cast<size_t>(first_command) < argv.size() && IsModeName(argv[first_command])) {
    const std::string& word = argv[first_command];
    return Refuse("--xdeep-tune " + word + " would run a program called '" + word +
                  "'; did you mean --xdeep-tune=" + word + "?");
  }
  // The other XDEEP_* variables count only now that the launch is tuned.
  error.clear();
  if (!options_.ApplyEnvironment(&error)) {
    if (!implicit) return stop(error);
    host_.info("xdeep: warning: " + error + "; running the launch unchanged");
    return 0;
  }
  TuneQuery query;
  bool skip = false;
  if (!BuildQuery(launcher, mode, argv, first_command, &query, &error, &skip)) {
    if (skip) {
      host_.info("xdeep: warning: " + error + "; running the launch unchanged");
      return 0;
    }
    return stop(error);
  }
  if (skip) return 0;
  query.implicit = implicit;
  // Tuning the user did not ask for never overrides the layout they wrote:
  // under the site's default, their -N / -n / --gpus stand and xdeep advises.
  std::string kept;
  if (implicit && mode == TuneMode::kAuto) {
    for (const GivenOption& g : bounds_.given) {
      if (!SetsLayout(g) || (InAllocation(launcher) && g.source == OptionSource::kEnvironment))
        continue;
      kept += (kept.empty() ? "" : " ") + g.written + (g.has_value ? " " + g.value : "");
    }
    if (!kept.empty()) {
      mode = TuneMode::kAdvise;
      query.mode = std::string(TuneModeName(mode));
    }
  }

  const auto deadline = started_ + std::chrono::milliseconds(config_.timeout_ms);
  auto unavailable = [&](const std::string& why) {
    if (config_.fail_closed && mode != TuneMode::kAdvise) {
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
  // A probe wait is one line that the daemon's updates redraw (ProgressLine).
  ProgressLine probe_wait(host_.terminal, host_.info);
  auto progress = [&](const std::string& stage, const std::string& line) {
    if (stage == "probe") {
      probe_wait.Update("xdeep: [probe] " + line);
      return;
    }
    probe_wait.Done();
    if (mode == TuneMode::kExplain) host_.info("xdeep: [" + stage + "] " + line);
  };
  const bool tuned = client->Tune(query, deadline, progress, &answer, &client_error);
  probe_wait.Done();
  if (!tuned) {
    if (client_error.kind == ClientError::kRefused) return stop(client_error.message);
    return unavailable(client_error.message + " at " + config_.daemon);
  }

  if (!answer.skipped) {
    const std::string skew =
        VersionSkew("this plugin", XDEEP_VERSION, config_.daemon, answer.server_version);
    if (!skew.empty()) host_.info("xdeep: " + skew);
  }
  if (answer.skipped) {
    if (!implicit) host_.info("xdeep: not tuned: " + answer.skip_reason);
    return 0;
  }

  switch (mode) {
    case TuneMode::kExplain: {
      // Each line reaches srun's terminal behind "xdeep: ".
      const int columns = TerminalColumns(STDERR_FILENO);
      const TableLayout layout{columns > 0 ? std::max(columns - 7, 40) : 0};
      for (const std::string& line : ExplainTable(answer, layout)) host_.info("xdeep: " + line);
      host_.info("xdeep: explain mode: nothing was launched");
      host_.exit_without_launch();
      return 0;
    }
    case TuneMode::kAdvise:
      host_.info("xdeep: advice: " + SummaryLine(answer));
      if (!kept.empty()) {
        host_.info("xdeep: your " + kept +
                   " kept as given (tuning is this site's default); add --xdeep-tune to let "
                   "xdeep choose the layout");
      } else {
        host_.info("xdeep: advise mode: running the launch unchanged");
      }
      return 0;
    default:
      break;
  }

  host_.info("xdeep: " + SummaryLine(answer));
  AppLauncher app_launcher = AppLauncher::kSrun;
  ParseAppLauncher(launcher_.empty() ? answer.app_launcher : launcher_, &app_launcher);
  const Variables variables = DecisionVariables(RunDecisionOf(answer, app_launcher));
  for (const auto& [name, value] : variables) setenv(name.c_str(), value.c_str(), 1);
  setenv(kGuardVar, answer.decision_id.c_str(), 1);
  setenv(kGuardPidVar, std::to_string(getpid()).c_str(), 1);
  if (!answer.admission_token.empty()) setenv(kAdmissionVar, answer.admission_token.c_str(), 1);
  const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started_);
  const int64_t left = std::max<int64_t>(0, config_.timeout_ms - spent.count());
  setenv(kWaitLeftVar, std::to_string(left).c_str(), 1);
  const bool heterogeneous = IsHeterogeneous(launcher, argv, first_command);
  std::vector<std::string> exported = {kGuardVar, kGuardPidVar};
  for (const auto& [name, value] : variables) exported.push_back(name);
  if (heterogeneous) {
    // Component 0 alone gets the decision, as NAME=value in its --export.
    exported = {std::string(kGuardVar) + "=" + answer.decision_id};
    for (const auto& [name, value] : variables) {
      if (value.find(',') != std::string::npos) {
        return Refuse("the decision's " + name +
                      " holds a comma, which --export cannot carry to component 0 of this "
                      "heterogeneous step; tune the component as its own launch");
      }
      exported.push_back(name + "=" + value);
    }
  }
  // A per-node launcher (torchrun, ...) is one task per node that starts the GPUs' processes.
  const bool per_node = PerNode(app_launcher);
  LaunchShape shape{answer.best.nodes, per_node ? answer.best.nodes : answer.best.tasks,
                    answer.best.gpus_per_node, per_node ? 1 : answer.best.gpus_per_node};
  shape.time_limit_s = answer.time_limit_s;
  shape.segments = answer.segments;
  shape.overcommit = query.allocation_cpus_per_node > 0 &&
                     shape.tasks_per_node > query.allocation_cpus_per_node;
  if (answer.segments > 1 && launcher != Launcher::kSbatch) {
    host_.info("xdeep: this launch runs the first of " + std::to_string(answer.segments) +
               " checkpointed segments; submit with sbatch to have Slurm requeue the job "
               "until the last (docs/user.md, \"Time limits\")");
  }
  // sbatch has read a redirected script to its end; the new sbatch reads it again.
  if (script_on_stdin_) RewindStdinScript();
  host_.reexec(
      RewriteLaunch(launcher, argv, first_command, bounds_, shape, exported, heterogeneous));
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

void Plugin::LocalExit(uint32_t job_id) {
  // Called from slurm_spank_exit and again from atexit (srun skips the SPANK
  // exit hook when its allocation fails): report once. A step that ran
  // reports its own outcome from the compute node (step_runtime.h); srun
  // speaks only for a launch Slurm never received, to free its hold.
  if (decision_id_.empty() || reported_ || job_id != 0 || !owns_launch_) return;
  reported_ = true;
  ReportQuery report;
  report.decision_id = decision_id_;
  report.launch_failed = true;
  report.final = true;
  report.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::string error;
  DaemonClient* client = Client(&error);
  if (client == nullptr) return;
  ClientError client_error;
  if (!client->Report(report, WaitDeadline(), &client_error)) {
    host_.info("xdeep: warning: could not report the outcome: " + client_error.message);
  }
}

}  // namespace xdeep::spank
