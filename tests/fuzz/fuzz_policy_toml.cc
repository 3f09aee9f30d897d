// libFuzzer target: the daemon's configuration and site policy (xdeepd.toml),
// through the text check, toml++ and the strict section readers.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = xdeep::daemon::ParseDaemonConfig(text, "fuzz.toml");
  if (config.ok()) {
    // What the daemon asks of an accepted policy on every request.
    const xdeep::daemon::PolicyConfig& policy = config->policy;
    (void)policy.IsAdmin(0, "root");
    (void)policy.Strict("gpu");
  }
  return 0;
}
