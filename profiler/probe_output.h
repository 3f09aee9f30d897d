// How a probe command ends: the summary on stdout, the report on disk, the
// exit code; and the watchdog that still writes a report when a call hangs.
#pragma once

#include <memory>
#include <string>

#include "profiler/deadline.h"
#include "profiler/report.h"

namespace xdeep::profiler {

// One line per measurement, then the errors and the elapsed time.
void PrintSummary(const Report& r);

// Prints `r`, writes it to `out` when `write` (and `out` is set); 0 when no
// probe failed, 2 when the report lists errors, 1 when it cannot be written.
int FinishReport(const Report& r, const std::string& out, bool write);

// Last resort against a call that ignores every deadline (a wedged driver):
// after `seconds`, writes an error report to `out` (when `write`), then
// leaves with 124 without running destructors that could block again.
std::unique_ptr<Watchdog> StartRunWatchdog(double seconds, std::string out, bool write);

}  // namespace xdeep::profiler
