// The row kernels' launch from the device's properties (kokkos_row_launch.h).
#include "profiler/kokkos_row_launch.h"

#include <algorithm>
#include <cmath>

namespace xdeep::profiler::kokkos {

int RowsWanted(const DeviceProperties& d) {
  if (d.multiprocessors <= 0 || !(d.peak_bytes_per_second > 0) ||
      !std::isfinite(d.peak_bytes_per_second)) {
    return 0;
  }
  const double per_sm = kReachableShareOfPeak * d.peak_bytes_per_second / d.multiprocessors;
  // Bounded so that an absurd figure cannot overflow; no SM holds 1024 teams.
  return static_cast<int>(std::clamp(std::ceil(per_sm / kTeamBytesPerSecond), 1.0, 1024.0));
}

int GroupedRowsPerMultiprocessor(const DeviceProperties& d) {
  if (d.max_threads_per_multiprocessor <= 0 || d.registers_per_multiprocessor <= 0) return 0;
  return std::min(d.max_threads_per_multiprocessor / kGroupedTeamSize,
                  d.registers_per_multiprocessor / (kGroupedTeamSize * kGroupedRegisters));
}

int LeanTeamSize(int rows, const DeviceProperties& d) {
  const int threads = d.max_threads_per_multiprocessor, warp = d.warp_size;
  if (rows <= 0 || threads <= 0 || warp <= 0) return 0;
  const int team = threads / rows / warp * warp;
  // Larger teams than the launch bounds allow; or so small that one more would fit.
  if (team < warp || team > kLeanMaxTeamSize || (rows + 1) * team <= threads) return 0;
  return team;
}

RowLaunch ChooseRowLaunch(const DeviceProperties& d) {
  const RowLaunch grouped{RowForm::kGrouped, kGroupedTeamSize, GroupedRowsPerMultiprocessor(d)};
  const int wanted = RowsWanted(d);
  if (wanted == 0 || grouped.rows_per_multiprocessor == 0 ||
      wanted <= grouped.rows_per_multiprocessor) {
    return grouped;
  }
  // Teams of fewer than 256 threads leave the first pass of a 4096-float row more than
  // one trip, and more rows than that per SM re-read from DRAM what L1 could not keep
  // (run 15: 9 and 12 rows of 16 KiB per SM ran 5-30 % slower than 6).
  const int most = std::min(wanted, d.max_threads_per_multiprocessor / kGroupedTeamSize);
  for (int rows = most; rows > grouped.rows_per_multiprocessor; --rows) {
    const int team = LeanTeamSize(rows, d);
    if (team > 0 &&
        static_cast<long long>(rows) * team * kLeanRegisters <= d.registers_per_multiprocessor) {
      return {RowForm::kLean, team, rows};
    }
  }
  return grouped;
}

std::string Describe(const RowLaunch& launch) {
  std::string out = launch.form == RowForm::kLean ? "lean" : "grouped";
  out += ", team " + std::to_string(launch.team_size);
  if (launch.rows_per_multiprocessor > 0) {
    out += ", " + std::to_string(launch.rows_per_multiprocessor) + " rows per SM";
  }
  return out;
}

}  // namespace xdeep::profiler::kokkos
