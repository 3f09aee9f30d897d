// libFuzzer target: the plugin's plugstack.conf arguments (daemon=, default=,
// timeout_ms=, fail=), which slurmd, slurmstepd and every srun parse.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "spank_plugin/plugin_config.h"
#include "tests/fuzz/fuzz_words.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // Slurm splits the plugstack line at blanks into argv.
  const auto args = xdeep::fuzz::SplitWords(text, " \t\n", false);
  xdeep::spank::PluginConfig config;
  std::string error;
  const bool ok = xdeep::spank::ParsePluginConfig(args, &config, &error);
  // A refusal always says why; an acceptance never leaves a half-read value.
  if (!ok && error.empty()) __builtin_trap();
  if (ok && (config.timeout_ms <= 0 || config.daemon.empty())) __builtin_trap();
  return 0;
}
