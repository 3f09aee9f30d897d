// libFuzzer target: a probe report (xdeep.probe_report/1 JSON) as the daemon
// ingests it: the strict reader, the merge of several runs, the hardware
// profile built from it. A report the reader accepts must survive being
// written and read again unchanged (the daemon stores what it ingested).
#include <cstddef>
#include <cstdint>
#include <string>

#include "profiler/report.h"
#include "tuner/hardware_profile.h"

namespace profiler = xdeep::profiler;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)xdeep::tuner::HardwareProfileFromProbeReport(text, "fuzz.json");
  auto report = profiler::ParseReport(text);
  if (!report.ok()) return 0;
  const std::string written = profiler::ToJson(*report).dump(2);
  auto again = profiler::ParseReport(written);
  if (!again.ok() || profiler::ToJson(*again).dump(2) != written) __builtin_trap();
  (void)profiler::MergeReports({*report, *again});
  return 0;
}
