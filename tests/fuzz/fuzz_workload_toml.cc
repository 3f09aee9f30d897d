// libFuzzer target: a user's workload TOML as the daemon receives it (the text
// check, toml++ and the workload reader), then the totals the search derives.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tuner/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto workload = xdeep::tuner::ParseWorkloadToml(text, "fuzz.toml");
  if (workload.ok()) {
    // An accepted workload feeds the model: its totals must be computable.
    (void)workload->Parameters();
    (void)workload->ForwardFlopsPerSample();
  }
  return 0;
}
