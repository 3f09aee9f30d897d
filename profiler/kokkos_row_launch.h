// How the Kokkos row kernels (layer norm, softmax: one team per row) are launched on a
// device, chosen from the device's properties, not its name. Plain C++ (no Kokkos, no
// CUDA), so the choice is tested on any host.
//
// A team holds its row through two team reductions and two passes that re-read the row
// from L1; only its first pass waits on DRAM. An SM therefore keeps its share of the DRAM
// bandwidth busy only with enough rows (teams) resident at once. The grouped form (every
// pass with 4 loads in flight per thread, 256 threads, 46-47 registers) holds 5 rows per
// SM of 64 K registers: enough on H100 (3.35 TB/s over 132 SMs; run 14: at copy's
// bandwidth), not on H200 (4.92 TB/s over the same 132 SMs; run 15: 0.86-0.95 of the
// CUDA twins, which hold 6). The lean form keeps the 4 loads in flight only where they go
// to DRAM (the first pass) and re-reads one packet per trip, which fits in 32 registers:
// then the thread count sets the residency (team size = threads per SM / rows).
#ifndef XDEEP_PROFILER_KOKKOS_ROW_LAUNCH_H_
#define XDEEP_PROFILER_KOKKOS_ROW_LAUNCH_H_

#include <string>

namespace xdeep::profiler::kokkos {

// What the choice needs to know of a device; zero where the backend does not say.
struct DeviceProperties {
  int multiprocessors = 0;
  double peak_bytes_per_second = 0;  // DRAM: 2 x memory clock x bus width
  int max_threads_per_multiprocessor = 0;
  int registers_per_multiprocessor = 0;
  int warp_size = 0;
};

enum class RowForm { kGrouped, kLean };

struct RowLaunch {
  RowForm form = RowForm::kGrouped;
  int team_size = 256;
  int rows_per_multiprocessor = 0;  // resident teams the launch gives (0: not known)
};

// Registers per thread the forms are held to: the grouped form's 47 (ptxas, sm_90) in
// the allocation unit of 8; the lean form's launch bounds (at most 512 threads, at
// least 4 blocks of them per SM of 64 K registers) give 32.
inline constexpr int kGroupedRegisters = 48;
inline constexpr int kLeanRegisters = 32;
inline constexpr int kGroupedTeamSize = 256;
inline constexpr int kLeanMaxTeamSize = 512;
inline constexpr int kLeanMinTeams = 4;  // of kLeanMaxTeamSize, per SM of 64 K registers
// Bytes per second one team moves through its rows (a 16 KiB row read and written per
// row time): run 15's layer norm at 5 teams per SM moved 3794 GB/s over 132 x 5 teams on
// H200 without being bound by DRAM (1 GiB per array).
inline constexpr double kTeamBytesPerSecond = 5.75e9;
// The share of the peak bandwidth a streaming kernel reaches: copy 0.86 on H200 (run 15),
// 0.90 on H100 (run 14).
inline constexpr double kReachableShareOfPeak = 0.86;

// Rows the SM must keep in flight to move its share of the reachable bandwidth; 0 where
// the properties are unknown.
int RowsWanted(const DeviceProperties& d);
// Teams of the grouped form resident per SM (registers and threads), 0 where unknown.
int GroupedRowsPerMultiprocessor(const DeviceProperties& d);
// The team size at which exactly `rows` lean teams fit an SM by its thread count (a
// multiple of the warp), 0 where none does (too many rows, unknown device).
int LeanTeamSize(int rows, const DeviceProperties& d);
// The grouped form where it already holds the rows wanted (or nothing is known), else the
// lean form at the most rows it can hold up to the rows wanted.
RowLaunch ChooseRowLaunch(const DeviceProperties& d);
// "lean, team 320, 6 rows per SM": for reports and logs.
std::string Describe(const RowLaunch& launch);

}  // namespace xdeep::profiler::kokkos

#endif  // XDEEP_PROFILER_KOKKOS_ROW_LAUNCH_H_
