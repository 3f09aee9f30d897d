// The Slurm option table, its parser and its Markdown form (see slurm_options.h).
#include "spank_plugin/slurm_options.h"

#include <algorithm>
#include <sstream>

#include "spank_plugin/user_options.h"

namespace xdeep::spank {
namespace {

using T = Treatment;
using E = Effect;
constexpr int8_t X = kAbsent, F = kNoArg, R = kRequiredArg, O = kOptionalArg;
constexpr const char* kKeep = "kept";

// Reasons shared by several rows.
constexpr const char* kOneTaskPerGpu =
    "xdeep runs one task per GPU spread over whole nodes, which a per-core or "
    "per-socket placement would contradict; reserve CPUs with -c instead";

// clang-format off
const std::vector<SlurmOption> kTable = {
  {"accel-bind", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"account", 'A', {R, R, R}, T::kBound, E::kAccount,
   {"SLURM_ACCOUNT", "SBATCH_ACCOUNT", "SALLOC_ACCOUNT"},
   "the decision is charged to this account (from the command line, the input "
   "environment or #SBATCH)"},
  {"acctg-freq", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"array", 'a', {X, R, X}, T::kKept, E::kNone, {}, "kept; every array task runs the one decision"},
  {"batch", 0, {X, R, X}, T::kKept, E::kNone, {}, kKeep},
  {"bb", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"bbf", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"bcast", 0, {O, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"bcast-exclude", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"begin", 'b', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"bell", 0, {X, X, F}, T::kKept, E::kNone, {}, kKeep},
  {"chdir", 'D', {R, R, R}, T::kBound, E::kChdir, {},
   "without --xdeep-workload the workload is D/xdeep.toml, where the job runs"},
  {"cluster-constraint", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"clusters", 'M', {R, R, R}, T::kRefused, E::kNone, {},
   "the daemon decides for the cluster it serves and knows no other cluster's nodes"},
  {"comment", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"compress", 0, {O, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"constraint", 'C', {R, R, R}, T::kBound, E::kConstraint,
   {"SLURM_CONSTRAINT", "SBATCH_CONSTRAINT", "SALLOC_CONSTRAINT"},
   "at most as many nodes as the partition has with these features (sinfo); "
   "counts, brackets and parentheses in the expression are left to Slurm"},
  {"container", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"contiguous", 0, {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"core-spec", 'S', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"cores-per-socket", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"cpu-bind", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"cpu-freq", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"cpu_bind", 0, {R, X, X}, T::kKept, E::kNone, {}, "kept (hidden alias of --cpu-bind)"},
  {"cpus-per-gpu", 0, {R, R, R}, T::kBound, E::kCpusPerGpu,
   {"SLURM_CPUS_PER_GPU", "SBATCH_CPUS_PER_GPU", "SALLOC_CPUS_PER_GPU"},
   "GPUs per node x this fit the node's CPUs"},
  {"cpus-per-task", 'c', {R, R, R}, T::kBound, E::kCpusPerTask, {"SRUN_CPUS_PER_TASK", nullptr, nullptr},
   "tasks per node (one per GPU) x this fit the node's CPUs"},
  {"deadline", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"debugger-test", 0, {F, X, X}, T::kKept, E::kNone, {}, "kept (hidden)"},
  {"delay-boot", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"dependency", 'd', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"disable-status", 'X', {F, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"distribution", 'm', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"epilog", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"error", 'e', {R, R, X}, T::kKept, E::kNone, {}, kKeep},
  {"exact", 0, {F, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"exclude", 'x', {R, R, R}, T::kBound, E::kExclude, {},
   "the excluded nodes come off the partition's node count"},
  {"exclusive", 0, {O, O, O}, T::kKept, E::kNone, {}, kKeep},
  {"export", 0, {R, R, X}, T::kBound, E::kExport, {"SLURM_EXPORT_ENV", "SBATCH_EXPORT", nullptr},
   "when it is NONE or a list without ALL, the decision's XDEEP_* variables are added "
   "so the tasks still receive them"},
  {"export-file", 0, {X, R, X}, T::kKept, E::kNone, {}, kKeep},
  {"extra-node-info", 'B', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"get-user-env", 0, {X, O, O}, T::kKept, E::kNone, {}, kKeep},
  {"gid", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"gpu-bind", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"gpu-freq", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"gpus", 'G', {R, R, R}, T::kReplaced, E::kGpus, {"SLURM_GPUS", "SBATCH_GPUS", "SALLOC_GPUS"},
   "bound on the total GPUs (its type is kept); replaced by the decision"},
  {"gpus-per-node", 0, {R, R, R}, T::kReplaced, E::kGpusPerNode,
   {"SLURM_GPUS_PER_NODE", "SBATCH_GPUS_PER_NODE", "SALLOC_GPUS_PER_NODE"},
   "bound on GPUs per node (its type is kept); replaced by the decision"},
  {"gpus-per-socket", 0, {R, R, R}, T::kRefused, E::kNone, {},
   "per-socket GPUs need --sockets-per-node and contradict the decided GPUs per node; "
   "bound GPUs with --gpus-per-node"},
  {"gpus-per-task", 0, {R, R, R}, T::kReplaced, E::kGpusPerTask,
   {"SLURM_GPUS_PER_TASK", "SBATCH_GPUS_PER_TASK", "SALLOC_GPUS_PER_TASK"},
   "the decision runs one task per GPU (its type is kept)"},
  {"gres", 0, {R, R, R}, T::kReplaced, E::kGres, {"SLURM_GRES", "SBATCH_GRES", "SALLOC_GRES"},
   "the gpu entry (gpu:N, gpu:TYPE:N) bounds GPUs per node and is replaced by the decision, "
   "keeping its type; other GRES are kept"},
  {"gres-flags", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"help", 'h', {F, F, F}, T::kKept, E::kNone, {}, "kept (nothing is launched)"},
  {"het-group", 0, {R, X, X}, T::kRefused, E::kNone, {},
   "a step in chosen components of a heterogeneous job has that job's fixed layout; "
   "tune the job itself"},
  {"hint", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"hold", 'H', {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"ignore-pbs", 0, {X, F, X}, T::kKept, E::kNone, {}, kKeep},
  {"immediate", 'I', {O, X, O}, T::kKept, E::kNone, {}, kKeep},
  {"input", 'i', {R, R, X}, T::kKept, E::kNone, {}, kKeep},
  {"job-name", 'J', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"jobid", 0, {R, X, X}, T::kRefused, E::kNone, {},
   "the step would run in another job's allocation, whose size xdeep cannot see; "
   "run the srun inside that allocation"},
  {"kill-command", 'K', {X, X, O}, T::kKept, E::kNone, {}, kKeep},
  {"kill-on-bad-exit", 'K', {O, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"kill-on-invalid-dep", 0, {X, R, X}, T::kKept, E::kNone, {}, kKeep},
  {"label", 'l', {F, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"licenses", 'L', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"mail-type", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"mail-user", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"mcs-label", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"mem", 0, {R, R, R}, T::kBound, E::kMemPerNode,
   {"SLURM_MEM_PER_NODE", "SBATCH_MEM_PER_NODE", "SALLOC_MEM_PER_NODE"},
   "only nodes with this much memory count (sinfo's RealMemory); 0, all of a node's memory, "
   "bounds nothing"},
  {"mem-bind", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"mem-per-cpu", 0, {R, R, R}, T::kBound, E::kMemPerCpu,
   {"SLURM_MEM_PER_CPU", "SBATCH_MEM_PER_CPU", "SALLOC_MEM_PER_CPU"},
   "tasks per node (one per GPU) x CPUs per task x this fit the node's memory "
   "(sinfo's RealMemory)"},
  {"mem-per-gpu", 0, {R, R, R}, T::kBound, E::kMemPerGpu,
   {"SLURM_MEM_PER_GPU", "SBATCH_MEM_PER_GPU", "SALLOC_MEM_PER_GPU"},
   "GPUs per node x this fit the node's memory (sinfo's RealMemory)"},
  {"mincpus", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"mpi", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"msg-timeout", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"multi-prog", 0, {F, X, X}, T::kRefused, E::kNone, {},
   "the configuration file fixes the task ranks, so the task count cannot change"},
  {"network", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"nice", 0, {O, O, O}, T::kKept, E::kNone, {}, kKeep},
  {"no-allocate", 'Z', {F, X, X}, T::kRefused, E::kNone, {},
   "without an allocation there is nothing to size"},
  {"no-bell", 0, {X, X, F}, T::kKept, E::kNone, {}, kKeep},
  {"no-kill", 'k', {O, O, O}, T::kKept, E::kNone, {}, kKeep},
  {"no-requeue", 0, {X, F, X}, T::kKept, E::kNone, {}, kKeep},
  {"no-shell", 0, {X, X, F}, T::kKept, E::kNone, {}, kKeep},
  {"nodefile", 'F', {R, R, R}, T::kRefused, E::kNone, {},
   "give the nodes with -w/--nodelist, which xdeep reads as a bound and trims to the "
   "decided count"},
  {"nodelist", 'w', {R, R, R}, T::kReplaced, E::kNodelist, {},
   "bound: at most this many nodes; replaced by the first N of the list when N nodes are "
   "decided (a file name is refused like --nodefile)"},
  {"nodes", 'N', {R, R, R}, T::kReplaced, E::kNodes, {"SLURM_JOB_NUM_NODES", nullptr, nullptr},
   "bound: at most the larger end of a range (the decision may take fewer nodes than its "
   "smaller end: -N, like -n and --gpus-per-node, is an upper bound); replaced by the decision"},
  {"ntasks", 'n', {R, R, R}, T::kReplaced, E::kTasks, {"SLURM_NTASKS", nullptr, nullptr},
   "bound on tasks and so on GPUs (one task per GPU); replaced by the decision"},
  {"ntasks-per-core", 0, {R, R, R}, T::kRefused, E::kNone, {}, kOneTaskPerGpu},
  {"ntasks-per-gpu", 0, {R, R, R}, T::kReplaced, E::kTasksPerGpu,
   {"SLURM_NTASKS_PER_GPU", nullptr, nullptr},
   "the decision runs one task per GPU"},
  {"ntasks-per-node", 0, {R, R, R}, T::kReplaced, E::kTasksPerNode,
   {"SLURM_NTASKS_PER_NODE", nullptr, nullptr},
   "bound on GPUs per node (one task per GPU); replaced by the decision"},
  {"ntasks-per-socket", 0, {R, R, R}, T::kRefused, E::kNone, {}, kOneTaskPerGpu},
  {"open-mode", 0, {R, R, X}, T::kKept, E::kNone, {}, kKeep},
  {"output", 'o', {R, R, X}, T::kKept, E::kNone, {}, kKeep},
  {"overcommit", 'O', {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"overlap", 0, {F, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"oversubscribe", 's', {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"pack-group", 0, {R, X, X}, T::kRefused, E::kNone, {},
   "as --het-group (its hidden alias)"},
  {"parsable", 0, {X, F, X}, T::kKept, E::kNone, {}, kKeep},
  {"partition", 'p', {R, R, R}, T::kBound, E::kPartition,
   {"SLURM_PARTITION", "SBATCH_PARTITION", "SALLOC_PARTITION"},
   "the decision is made for this partition (the first of a list), from the command "
   "line, the input environment or #SBATCH"},
  {"power", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"prefer", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"preserve-env", 'E', {F, X, X}, T::kReplaced, E::kPreserveEnv, {},
   "removed: it would let SLURM_JOB_NUM_NODES / SLURM_NTASKS override the decision"},
  {"priority", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"profile", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"prolog", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"propagate", 0, {O, O, X}, T::kKept, E::kNone, {}, kKeep},
  {"pty", 0, {F, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"qos", 'q', {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"quiet", 'Q', {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"quit-on-interrupt", 0, {F, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"reboot", 0, {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"relative", 'r', {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"requeue", 0, {X, F, X}, T::kKept, E::kNone, {}, kKeep},
  {"reservation", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"resv-ports", 0, {O, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"send-libs", 0, {O, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"signal", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"slurmd-debug", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"sockets-per-node", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"spread-job", 0, {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"switches", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"task-epilog", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"task-prolog", 0, {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"tasks-per-node", 0, {R, R, R}, T::kReplaced, E::kTasksPerNode, {},
   "as --ntasks-per-node (its hidden alias)"},
  {"test-only", 0, {F, F, X}, T::kKept, E::kNone, {}, kKeep},
  {"thread-spec", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"threads", 'T', {R, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"threads-per-core", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"time", 't', {R, R, R}, T::kReplaced, E::kTime,
   {"SLURM_TIMELIMIT", "SBATCH_TIMELIMIT", "SALLOC_TIMELIMIT"},
   "each job's time limit, with the partition's MaxTime; a longer run is planned as "
   "checkpointed segments within it; replaced by the decision's limit"},
  {"time-min", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"tmp", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"uid", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"unbuffered", 'u', {F, X, X}, T::kKept, E::kNone, {}, kKeep},
  {"usage", 0, {F, F, F}, T::kKept, E::kNone, {}, "kept (nothing is launched)"},
  {"use-min-nodes", 0, {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"verbose", 'v', {F, F, F}, T::kKept, E::kNone, {}, kKeep},
  {"version", 'V', {F, F, F}, T::kKept, E::kNone, {}, "kept (nothing is launched)"},
  {"wait", 'W', {R, F, X}, T::kKept, E::kNone, {}, kKeep},
  {"wait-all-nodes", 0, {X, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"wckey", 0, {R, R, R}, T::kKept, E::kNone, {}, kKeep},
  {"wrap", 0, {X, R, X}, T::kKept, E::kWrap, {},
   "kept; the wrapped command is the whole script, so there are no #SBATCH lines to read"},
  {"x11", 0, {O, X, O}, T::kKept, E::kNone, {}, kKeep},
};
// clang-format on

// xdeep's own options, with the arity they are registered with.
const std::vector<SlurmOption>& XdeepRows() {
  static const std::vector<SlurmOption> rows = [] {
    std::vector<SlurmOption> out;
    for (const UserOption& o : kUserOptions) {
      const int8_t a = static_cast<int8_t>(o.has_arg);
      out.push_back({o.name, 0, {a, a, a}, T::kXdeep, E::kNone, {}, o.usage});
    }
    return out;
  }();
  return rows;
}

bool Available(const SlurmOption& o, Launcher l) { return o.arg[static_cast<int>(l)] != kAbsent; }

// getopt_long's lookup: an exact name, else a prefix of exactly one name.
const SlurmOption* FindLong(Launcher l, std::string_view name) {
  const SlurmOption* prefix_match = nullptr;
  int prefix_matches = 0;
  for (const auto* rows : {&kTable, &XdeepRows()}) {
    for (const SlurmOption& o : *rows) {
      if (!Available(o, l)) continue;
      std::string_view full = o.long_name;
      if (full == name) return &o;
      if (full.starts_with(name)) {
        prefix_match = &o;
        ++prefix_matches;
      }
    }
  }
  return prefix_matches == 1 ? prefix_match : nullptr;
}

const SlurmOption* FindShort(Launcher l, char c) {
  for (const SlurmOption& o : kTable) {
    if (o.short_name == c && Available(o, l)) return &o;
  }
  return nullptr;
}

}  // namespace

std::string_view LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kSrun:
      return "srun";
    case Launcher::kSbatch:
      return "sbatch";
    case Launcher::kSalloc:
      return "salloc";
  }
  return "?";
}

std::string_view TreatmentName(Treatment treatment) {
  switch (treatment) {
    case T::kKept:
      return "kept";
    case T::kBound:
      return "bound";
    case T::kReplaced:
      return "replaced";
    case T::kRefused:
      return "refused";
    case T::kXdeep:
      return "xdeep";
  }
  return "?";
}

const std::vector<SlurmOption>& SlurmOptions() { return kTable; }

std::vector<GivenOption> ParseOptions(Launcher launcher, const std::vector<std::string>& args,
                                      size_t begin, size_t end, OptionSource source) {
  std::vector<GivenOption> out;
  end = std::min(end, args.size());
  const int li = static_cast<int>(launcher);
  for (size_t i = begin; i < end; ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') continue;  // a stray word: an unknown option's value
    GivenOption g;
    g.source = source;
    g.begin = i;
    if (a[1] == '-') {
      const size_t eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      g.option = FindLong(launcher, name);
      g.written = "--" + name;
      const int8_t arg = g.option != nullptr ? g.option->arg[li] : kOptionalArg;
      if (eq != std::string::npos) {
        g.value = a.substr(eq + 1);
        g.has_value = true;
      } else if (arg == kRequiredArg && i + 1 < end) {
        g.value = args[++i];
        g.has_value = true;
      } else if (g.option == nullptr && i + 1 < end && !args[i + 1].starts_with("-")) {
        g.value = args[++i];  // before optind, a plain word is the unknown option's value
        g.has_value = true;
      }
      g.removable = source == OptionSource::kCommandLine;
      g.end = i + 1;
      out.push_back(std::move(g));
      continue;
    }
    // A cluster of short options: -vN2, -N 2, -Kx.
    for (size_t k = 1; k < a.size(); ++k) {
      GivenOption s;
      s.source = source;
      s.begin = i;
      s.option = FindShort(launcher, a[k]);
      s.written = std::string("-") + a[k];
      const int8_t arg = s.option != nullptr ? s.option->arg[li] : kNoArg;
      bool last = true;
      if (arg == kRequiredArg || arg == kOptionalArg) {
        if (k + 1 < a.size()) {
          s.value = a.substr(k + 1);
          s.has_value = true;
        } else if (arg == kRequiredArg && i + 1 < end) {
          s.value = args[++i];
          s.has_value = true;
        }
      } else {
        last = k + 1 == a.size();
      }
      s.removable = source == OptionSource::kCommandLine && k == 1 && last;
      s.end = i + 1;
      out.push_back(std::move(s));
      if (arg == kRequiredArg || arg == kOptionalArg) break;
    }
  }
  return out;
}

std::vector<GivenOption> EnvironmentOptions(Launcher launcher, const char* (*getenv)(const char*)) {
  std::vector<GivenOption> out;
  const int li = static_cast<int>(launcher);
  for (const SlurmOption& o : kTable) {
    const char* name = o.env[li];
    if (name == nullptr) continue;
    const char* value = getenv(name);
    if (value == nullptr || *value == '\0') continue;
    GivenOption g;
    g.option = &o;
    g.written = name;
    g.value = value;
    g.has_value = true;
    g.source = OptionSource::kEnvironment;
    out.push_back(std::move(g));
  }
  return out;
}

std::string OptionsTableMarkdown() {
  std::ostringstream md;
  md << "# Slurm options under a tuned launch\n\n"
        "<!-- Generated from spank_plugin/slurm_options.cc by "
        "`XDEEP_WRITE_OPTIONS_DOC=1 build/tests/spank_plugin/spank_plugin_test "
        "--gtest_filter='SlurmOptionsTest.DocMatchesTable'`; do not edit by hand. -->\n\n"
        "Every option of srun, sbatch and salloc in Slurm 22.05 (their man pages, plus the\n"
        "hidden aliases the binaries accept), and what a launch tuned by xdeep does with it.\n"
        "A tuned launch re-executes the command with the decided `--nodes`, `--ntasks` and\n"
        "`--gpus-per-node` inserted before the program (later flags win); options that would\n"
        "contradict the decision are cut from the command line, or, when they came from the\n"
        "input environment or `#SBATCH` lines, overridden by a consistent value.\n\n"
        "* **kept**: passed to Slurm unchanged.\n"
        "* **bound**: passed unchanged, and a limit or scope of the decision.\n"
        "* **replaced**: a limit of the decision, then overridden by it.\n"
        "* **refused**: a launch that asks for tuning stops with the reason; a launch tuned only\n"
        "  by the site's default runs unchanged with that reason as a warning.\n\n"
        "Limits are read, in Slurm's order of precedence, from `#SBATCH` lines (sbatch; also\n"
        "from a script redirected on stdin), the launcher's input environment variables, and\n"
        "the command line. Unknown options (another SPANK plugin's) are kept.\n\n"
        "A heterogeneous srun step (components joined by `:`) is tuned in component 0, the\n"
        "options before its program: only that component receives the decision's `XDEEP_*`\n"
        "(through its own `--export`), and every later component keeps the environment it\n"
        "had. A heterogeneous allocation (sbatch / salloc with `:`, or `#SBATCH hetjob`) is\n"
        "refused: submit each component as its own job.\n\n"
        "| option | srun | sbatch | salloc | tuned launch |\n"
        "| --- | --- | --- | --- | --- |\n";
  auto cell = [](const SlurmOption& o, int li) -> std::string {
    if (o.arg[li] == kAbsent) return "";
    std::string c = "yes";
    if (o.env[li] != nullptr) c += " (`" + std::string(o.env[li]) + "`)";
    return c;
  };
  for (const auto* rows : {&kTable, &XdeepRows()}) {
    for (const SlurmOption& o : *rows) {
      md << "| ";
      if (o.short_name != 0) md << "`-" << o.short_name << "`, ";
      md << "`--" << o.long_name << "` | " << cell(o, 0) << " | " << cell(o, 1) << " | "
         << cell(o, 2) << " | **" << TreatmentName(o.treatment) << "**";
      std::string_view what = o.what;
      if (o.treatment == T::kKept && what.starts_with("kept; ")) what.remove_prefix(6);
      if (o.treatment == T::kKept && what.starts_with("kept ")) what.remove_prefix(5);
      if (what != kKeep) md << ": " << what;
      md << " |\n";
    }
  }
  return md.str();
}

}  // namespace xdeep::spank
