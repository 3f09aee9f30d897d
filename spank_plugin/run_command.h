// Runs a Slurm command (sinfo, scontrol) from PATH with this process's
// environment and reads its standard output, for at most a deadline.
#pragma once

#include <string>
#include <vector>

namespace xdeep::spank {

// false with `error` when the command cannot start, fails or runs past `timeout_ms`.
bool RunCommand(const std::vector<std::string>& argv, int timeout_ms, std::string* output,
                std::string* error);

}  // namespace xdeep::spank
