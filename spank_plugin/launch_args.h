// Reading and rewriting the launch command line. No SPANK call can change
// nodes, tasks or GPUs (../shared/notes/slurm.md), so the plugin re-executes
// srun / sbatch / salloc with its own flags inserted before the user's command
// (libc's optind marks it); later flags override earlier ones.
#pragma once

#include <string>
#include <vector>

namespace xdeep::spank {

// The user's own limits found among the launcher's options (0 = not given).
struct LaunchBounds {
  int nodes = 0;          // -N / --nodes (the larger end of a range)
  int tasks = 0;          // -n / --ntasks
  int gpus_per_node = 0;  // --gpus-per-node
  int gpus = 0;           // -G / --gpus
  std::string partition;  // -p / --partition
  std::string account;    // -A / --account
};

// Scans argv[1, first_command) for the options above.
LaunchBounds ParseLaunchBounds(const std::vector<std::string>& argv, int first_command);

struct LaunchShape {
  int nodes = 0;
  int tasks = 0;
  int gpus_per_node = 0;
};

// argv with the user's conflicting layout options (--gpus, --ntasks-per-node,
// --gpus-per-task) removed and -N/-n/--gpus-per-node inserted at first_command.
std::vector<std::string> RewriteLaunch(const std::vector<std::string>& argv, int first_command,
                                       const LaunchShape& shape);

// argv of this process from /proc/self/cmdline.
std::vector<std::string> ReadSelfCmdline();

}  // namespace xdeep::spank
