// Runs a Slurm command (sinfo, sbatch, ...) with a time limit and captures its
// output. The daemon never starts work on other hosts itself: Slurm does.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace xdeep::daemon {

struct CommandResult {
  int exit_code = 0;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs argv[0] (looked up in PATH) with `argv`; kills it after `timeout`.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout);

}  // namespace xdeep::daemon
