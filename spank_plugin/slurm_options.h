// Every srun / sbatch / salloc option of Slurm 22.05 and what a tuned launch
// does with it: one table drives the parser, the bounds, the rewrite and
// docs/slurm-options.md (generated from it; a unit test keeps them equal).
// The option list comes from Slurm's own man pages (srun.1, sbatch.1,
// salloc.1 of 22.05.8) plus the hidden aliases those binaries accept.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xdeep::spank {

enum class Launcher { kSrun = 0, kSbatch = 1, kSalloc = 2 };

std::string_view LauncherName(Launcher launcher);

// What a tuned launch does with an option.
enum class Treatment {
  kKept,      // passed to Slurm unchanged; no bearing on the layout
  kBound,     // passed unchanged and taken as a limit or scope of the decision
  kReplaced,  // taken as a limit, then overridden by the decision on re-execution
  kRefused,   // tuning refuses the launch with the option's reason
  kXdeep,     // one of xdeep's own options
};

std::string_view TreatmentName(Treatment treatment);

// Which part of the launch the option's value feeds (kNone: nothing).
enum class Effect {
  kNone,
  kNodes,
  kTasks,
  kGpusPerNode,
  kGpus,
  kGpusPerTask,
  kTasksPerNode,
  kTasksPerGpu,
  kGres,
  kCpusPerTask,
  kCpusPerGpu,
  kNodelist,
  kExclude,
  kConstraint,
  kMemPerNode,
  kMemPerCpu,
  kMemPerGpu,
  kTime,
  kPartition,
  kAccount,
  kChdir,
  kExport,
  kPreserveEnv,
  kWrap,
};

// Argument of an option in one launcher.
inline constexpr int8_t kAbsent = -1, kNoArg = 0, kRequiredArg = 1, kOptionalArg = 2;

struct SlurmOption {
  const char* long_name;  // without "--"
  char short_name;        // 0: none
  int8_t arg[3];          // per Launcher: kAbsent, kNoArg, kRequiredArg, kOptionalArg
  Treatment treatment;
  Effect effect;
  const char* env[3];  // the launcher's input environment variable for it, or nullptr
  const char* what;    // what a tuned launch does with it (docs/slurm-options.md)
};

// The whole table, sorted by long name.
const std::vector<SlurmOption>& SlurmOptions();

// Where an option's value came from; later sources override earlier ones
// (Slurm: command line over input environment over #SBATCH lines).
enum class OptionSource { kScript, kEnvironment, kCommandLine };

struct GivenOption {
  const SlurmOption* option = nullptr;  // nullptr: not in the table (another plugin's)
  std::string written;                  // as the user wrote it, for messages
  std::string value;
  bool has_value = false;
  OptionSource source = OptionSource::kCommandLine;
  // argv[begin, end) holds exactly this option (command line only; false for
  // a letter inside a cluster such as -vN2, which the rewrite cannot cut out).
  bool removable = false;
  size_t begin = 0, end = 0;
};

// Parses args[begin, end) as `launcher` parses its options (getopt_long:
// clustered short options, unique long-option prefixes, "--" ends options).
// Everything in the range is an option or an option's argument (it precedes
// optind), so a word after an unknown option is that option's value.
std::vector<GivenOption> ParseOptions(Launcher launcher, const std::vector<std::string>& args,
                                      size_t begin, size_t end, OptionSource source);

// The input environment variables the launcher reads for table options, as
// options (source kEnvironment). `getenv` returns nullptr when unset.
std::vector<GivenOption> EnvironmentOptions(Launcher launcher, const char* (*getenv)(const char*));

// docs/slurm-options.md, generated from the table.
std::string OptionsTableMarkdown();

}  // namespace xdeep::spank
