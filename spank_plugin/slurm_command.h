// Runs one of Slurm's client commands (sinfo, squeue) from the plugin, which
// links no libslurm: the command is found on PATH, inherits this process's
// SLURM_CONF, and is killed when it does not answer in time.
#pragma once

#include <string>
#include <vector>

namespace xdeep::spank {

// Runs `argv` (argv[0] looked up on PATH) for at most `timeout_ms`; its
// stdout in `output`. False with `error` when it cannot be run, fails or
// does not finish in time (stderr is discarded).
bool RunSlurmCommand(const std::vector<std::string>& argv, int timeout_ms, std::string* output,
                     std::string* error);

}  // namespace xdeep::spank
