// The row kernels' form from the device's properties (kokkos_row_launch.h).
#include "profiler/kokkos_row_launch.h"

#include <algorithm>
#include <cmath>

namespace xdeep::profiler::kokkos {
namespace {

const char* Name(RowForm form) {
  switch (form) {
    case RowForm::kCompact:
      return "compact";
    case RowForm::kLanes:
      return "lanes";
    case RowForm::kWide:
      return "wide";
    case RowForm::kResident:
      return "resident";
    case RowForm::kGrouped:
      break;
  }
  return "grouped";
}

}  // namespace

int RowsWanted(const DeviceProperties& d) {
  if (d.multiprocessors <= 0 || !(d.peak_bytes_per_second > 0) ||
      !std::isfinite(d.peak_bytes_per_second)) {
    return 0;
  }
  const double per_sm = kReachableShareOfPeak * d.peak_bytes_per_second / d.multiprocessors;
  // Bounded so that an absurd figure cannot overflow; no SM holds 1024 teams.
  return static_cast<int>(std::clamp(std::ceil(per_sm / kTeamBytesPerSecond), 1.0, 1024.0));
}

int RowsPerMultiprocessor(RowForm form, const DeviceProperties& d) {
  if (d.max_threads_per_multiprocessor <= 0 || d.registers_per_multiprocessor <= 0) return 0;
  const int registers = form == RowForm::kCompact    ? kCompactRegisters
                        : form == RowForm::kLanes    ? kLanesRegisters
                        : form == RowForm::kWide     ? kWideRegisters
                        : form == RowForm::kResident ? kResidentRegisters
                                                     : kGroupedRegisters;
  const int team = RowTeamSize(form);
  return std::min(d.max_threads_per_multiprocessor / team,
                  d.registers_per_multiprocessor / (team * registers));
}

RowLaunch ChooseRowLaunch(const DeviceProperties& d) {
  const RowLaunch grouped{RowForm::kGrouped, RowsPerMultiprocessor(RowForm::kGrouped, d)};
  const RowLaunch compact{RowForm::kCompact, RowsPerMultiprocessor(RowForm::kCompact, d)};
  const int wanted = RowsWanted(d);
  if (wanted == 0 || wanted <= grouped.rows_per_multiprocessor ||
      compact.rows_per_multiprocessor <= grouped.rows_per_multiprocessor) {
    return grouped;
  }
  RowLaunch out = compact;
  // With fewer registers and the same team the resident form holds at least as many rows.
  out.softmax_form = RowForm::kResident;
  return out;
}

std::string Describe(const RowLaunch& launch) {
  std::string out = Name(launch.form);
  if (launch.rows_per_multiprocessor > 0) {
    out += ", " + std::to_string(launch.rows_per_multiprocessor) + " rows per SM";
  }
  if (launch.softmax_form != launch.form)
    out += std::string("; softmax ") + Name(launch.softmax_form);
  return out;
}

}  // namespace xdeep::profiler::kokkos
