// Reading a launch's limits and rewriting it. No SPANK call can change nodes,
// tasks or GPUs (../shared/notes/slurm.md), so the plugin re-executes srun /
// sbatch / salloc with the decided layout inserted before the user's command
// (libc's optind marks it); later flags override earlier ones. What happens
// to each Slurm option is in one table (slurm_options.h).
#pragma once

#include <string>
#include <vector>

#include "spank_plugin/slurm_options.h"

namespace xdeep::spank {

// The user's limits and scopes, from every place Slurm takes them (0 / empty:
// not given).
struct LaunchBounds {
  int nodes = 0;                         // -N (the larger end of a range)
  int tasks = 0;                         // -n
  int gpus_per_node = 0;                 // --gpus-per-node, the gpu entry of --gres
  int gpus = 0;                          // -G / --gpus (total)
  int tasks_per_node = 0;                // --ntasks-per-node
  int cpus_per_task = 0;                 // -c, or --cpus-per-gpu (one task per GPU)
  std::vector<std::string> nodelist;     // -w, expanded
  int excluded_nodes = 0;                // -x, expanded
  std::string constraint;                // -C
  std::string mem_per_node, mem_per_cpu, mem_per_gpu;  // as written ("2G")
  std::string gpu_type;                  // "h100" from gpu:h100:4
  std::string partition;                 // the first of -p's list
  std::string account;
  std::string chdir;       // -D
  std::string export_env;  // --export in effect ("" = Slurm's default, ALL)
  bool wrap = false;       // sbatch --wrap
  // Why this launch cannot be tuned (a refused option), empty when it can.
  std::string refusal;
  std::vector<GivenOption> given;  // every option, in order of precedence
};

// Reads `given` (script, then environment, then command line: later ones
// override earlier ones) into limits.
LaunchBounds ReadLaunchBounds(std::vector<GivenOption> given);

// The command line's own options: argv[1, first_command) as `launcher` parses them.
std::vector<GivenOption> CommandLineOptions(Launcher launcher, const std::vector<std::string>& argv,
                                            int first_command);

struct LaunchShape {
  int nodes = 0;
  int tasks = 0;
  int gpus_per_node = 0;
  int tasks_per_node = 0;  // one per GPU, or 1 for a per-node launcher (torchrun)
};

// argv with the replaced options cut from the command line and the decision
// (plus consistent overrides of replaced options given elsewhere) inserted at
// first_command. `exports` are the variables a restricted --export must still
// pass to the tasks; for a heterogeneous step (`component_only`) they are
// NAME=value pairs that component 0's --export carries, so that the other
// components never see them.
std::vector<std::string> RewriteLaunch(Launcher launcher, const std::vector<std::string>& argv,
                                       int first_command, const LaunchBounds& bounds,
                                       const LaunchShape& shape,
                                       const std::vector<std::string>& exports,
                                       bool component_only = false);

// True for --export=NONE or a list without ALL: the tasks get only what it names.
bool RestrictsEnvironment(const std::string& export_value);

// A restricted --export value that also passes `names`, spelled so that
// `launcher` honours it.
std::string ExportAlso(Launcher launcher, std::string export_value,
                       const std::vector<std::string>& names);

// argv of this process from /proc/self/cmdline.
std::vector<std::string> ReadSelfCmdline();

}  // namespace xdeep::spank
