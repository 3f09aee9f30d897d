// libFuzzer target: what a user types on srun / sbatch / salloc reaches the
// plugin's parsers: the Slurm options table (getopt_long rules), the launch
// bounds and the rewrite of the command line, the --xdeep-* values, time spans,
// host lists, memory sizes and #SBATCH headers.
//
// Input: the first byte picks the launcher and an --xdeep-* option; the rest is
// one word per line (argv, or the values tried).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/time_span.h"
#include "spank_plugin/batch_script.h"
#include "spank_plugin/hostlist.h"
#include "spank_plugin/launch_args.h"
#include "spank_plugin/node_features.h"
#include "spank_plugin/user_options.h"
#include "tests/fuzz/fuzz_words.h"

namespace client = xdeep::client;
namespace spank = xdeep::spank;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto launcher = static_cast<spank::Launcher>(data[0] % 3);
  const auto option = static_cast<spank::OptionId>((data[0] / 3) % spank::kOptCount);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto words = xdeep::fuzz::SplitWords(text, "\n", true);

  // The launch line: every word an option or an option's value.
  std::vector<std::string> argv{std::string(spank::LauncherName(launcher))};
  argv.insert(argv.end(), words.begin(), words.end());
  const int first_command = static_cast<int>(argv.size());
  spank::LaunchBounds bounds =
      spank::ReadLaunchBounds(spank::CommandLineOptions(launcher, argv, first_command));
  const spank::LaunchShape shape{2, 8, 4};
  const auto rewritten =
      spank::RewriteLaunch(launcher, argv, first_command, bounds, shape, {"XDEEP_DECISION_ID"});
  // The re-executed launcher parses the rewrite again.
  (void)spank::ReadLaunchBounds(
      spank::CommandLineOptions(launcher, rewritten, static_cast<int>(rewritten.size())));
  if (spank::RestrictsEnvironment(bounds.export_env)) {
    (void)spank::ExportAlso(launcher, bounds.export_env, {"XDEEP_DECISION_ID"});
  }

  // The same words as values of the plugin's own options and helpers.
  spank::UserOptions user;
  std::string error;
  for (const std::string& word : words) {
    (void)user.Set(option, word.c_str(), &error);
    double seconds = 0;
    (void)client::ParseTimeSpan(word, &seconds, &error);
    (void)spank::ExpandHostlist(word, 4096);
    (void)spank::MemoryMb(word);
  }
  (void)user.Set(option, nullptr, &error);

  // The same text as a batch script header and as sinfo output.
  (void)spank::ParseBatchDirectives(std::string(text));
  (void)spank::ReadPartitionNodes(std::string(text), "gpu", words.empty() ? "" : words[0], 1024);
  return 0;
}
