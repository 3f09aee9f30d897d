// Which form of the Kokkos row kernels (layer norm, softmax: one team per row,
// kokkos_row_kernels.h) runs on a device, chosen from the device's properties, not its
// name. Plain C++ (no Kokkos, no CUDA), so the choice is tested on any host.
//
// A team holds its row through two team reductions and two passes that re-read it from
// L1; only its first pass waits on DRAM. An SM keeps its share of the DRAM bandwidth busy
// only with enough rows (teams) resident at once, and the kernels' registers set how many
// fit. The grouped form (nested TeamThreadRange reductions, 46-47 registers) holds 5 per
// SM of 64 K registers: enough on H100 (3.35 TB/s over 132 SMs; run 14: at copy's
// bandwidth), not on H200 (4.8-4.9 TB/s over the same 132 SMs; runs 15-16: 0.86-0.95 of the
// CUDA twins, while every 6-per-SM form of the twin runs at copy's bandwidth). The compact
// form loads the same groups but loops over the team rank and joins with team_reduce:
// 38-40 registers, 6 per SM. (Run 16's lean form, 6 rows per SM by re-reading one packet
// per trip, lost in its cache passes what it gained in rows.)
//
// The softmax on H200 (run 17): compact 0.85-0.86 of its CUDA twin where the layer norm
// reached 0.98. Its passes compile to the twin's loads and per-element code (sm_90 SASS),
// and neither Kokkos' dynamic shared memory nor its team_reduce slows a copy of the twin by
// more than 2 % (run 18); what differs is instructions: the softmax (two exp passes) is near
// issue-bound on an H200, which has 1.43x an H100's bandwidth per SM, and the Kokkos forms
// execute 39-44 % more warp instructions per row than the twin (Kokkos' team_reduce and its
// integer divisions, FSETP + FSEL for the max, vector-lane loops). The lanes form (members
// of 32 vector lanes: shuffles, then one barrier to join the 8 members through team
// scratch) waits less at barriers: 0.894 / 0.900 in the probe (run 18), the softmax's form
// on the H200 until run 20, now for rows too long for the resident form. The wide form (teams of 128 x 8 loads) cuts the
// instructions to the twin's + 7 % but at its 9 rows per SM re-reads from L2 (run 19:
// 0.93-0.94 in the study); not chosen anywhere.
//
// The resident form (from run 20) changes the softmax's algorithm, and its CUDA twin with
// it: a row of at most 4096 floats is read once into registers (256 threads x 4 packets),
// each exponential is taken once and kept, and the max and sum join through team scratch
// (two barriers each) instead of team_reduce: 2,906 warp instructions per row against the
// resident twin's 2,698 (ncu, run 20; the three-pass twin 5,301), 32 registers (8 rows per
// SM); 0.983 of its twin in the probe on H200 (0.99 of the twin of its shape in the study,
// 1.53x torch). Chosen for the softmax wherever the compact form is (the H200); the CUDA
// probe's softmax takes its resident twin where this choice says so
// (profiler/cuda/bandwidth_probe.cc), so the two stay like for like. Longer rows run the
// lanes form. On H100 it held as well (0.996-0.998 in run 20's study), but the grouped form
// stays there, as measured in run 14.
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
};

enum class RowForm { kGrouped, kCompact, kLanes, kWide, kResident };

struct RowLaunch {
  RowForm form = RowForm::kGrouped;  // the layer norm's
  int rows_per_multiprocessor = 0;   // resident teams the form gets (0: not known)
  RowForm softmax_form = RowForm::kGrouped;
};

inline constexpr int kRowTeamSize = 256;
// The lanes form's members: kRowTeamSize / kLanesPerMember of one warp's width each.
inline constexpr int kLanesPerMember = 32;
// The wide form: the compact form's loops with teams of 128 threads and 8 loads in flight
// each, so that each row's reductions and per-warp set-up run in 4 warps instead of 8.
inline constexpr int kWideTeamSize = 128;
inline constexpr int kWidePacketsInFlight = 8;
constexpr int RowTeamSize(RowForm form) {
  return form == RowForm::kWide ? kWideTeamSize : kRowTeamSize;
}
// Registers per thread (ptxas, sm_90, CUDA 13; the larger of layer norm and softmax,
// rounded up to the allocation unit of 8): grouped 47 -> 48, compact 40; lanes 40 (its
// softmax; its layer norm, which no device is given, 47); wide 56 (teams of 128: 9 per SM);
// resident 32 (a softmax form only).
inline constexpr int kGroupedRegisters = 48;
inline constexpr int kCompactRegisters = 40;
inline constexpr int kLanesRegisters = 40;
inline constexpr int kWideRegisters = 56;
inline constexpr int kResidentRegisters = 32;
// Bytes per second one team moves through its rows (a 16 KiB row read and written per
// row time): run 15's layer norm at 5 teams per SM moved 3794 GB/s over 132 x 5 teams on
// H200 without being bound by DRAM (1 GiB per array).
inline constexpr double kTeamBytesPerSecond = 5.75e9;
// The share of the peak bandwidth a streaming kernel reaches: copy 0.86 on H200 (runs 15,
// 16), 0.90 on H100 (run 14).
inline constexpr double kReachableShareOfPeak = 0.86;

// Rows the SM must keep in flight to move its share of the reachable bandwidth; 0 where
// the properties are unknown.
int RowsWanted(const DeviceProperties& d);
// Teams of 256 threads of a form resident per SM (registers and threads), 0 where unknown.
int RowsPerMultiprocessor(RowForm form, const DeviceProperties& d);
// The grouped form where it already holds the rows wanted (or nothing is known); the
// compact form where the grouped one holds fewer and the compact one more, and then the
// resident form for the softmax (which holds at least as many).
RowLaunch ChooseRowLaunch(const DeviceProperties& d);
// "compact, 6 rows per SM; softmax resident": for reports and logs.
std::string Describe(const RowLaunch& launch);

}  // namespace xdeep::profiler::kokkos

#endif  // XDEEP_PROFILER_KOKKOS_ROW_LAUNCH_H_
