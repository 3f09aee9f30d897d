// Durations as users type them for a deadline: plain hours ("12", "1.5"),
// a unit ("90min", "2h", "3d", "45s") or Slurm's own time format, as in
// --time ("MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS").
#pragma once

#include <string>
#include <string_view>

namespace xdeep::client {

// Seconds in `text`; false and a message saying which forms work when it is
// not a positive duration of at most a million hours.
bool ParseTimeSpan(std::string_view text, double* seconds, std::string* error);

// Slurm's --time as srun / sbatch / salloc take it, and a partition's MaxTime
// as scontrol prints it (the one Slurm time parser of xdeep: the plugin, the
// CLI and the daemon use it): a lone number is minutes, else "MM:SS",
// "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"; "INFINITE" and "UNLIMITED"
// are 0 (no limit). False when it is none of these.
bool ParseSlurmTimeLimit(std::string_view text, double* seconds);

}  // namespace xdeep::client
