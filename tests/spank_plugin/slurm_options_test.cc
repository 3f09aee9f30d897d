// The Slurm option table: getopt-compatible parsing, one meaning per letter,
// and docs/slurm-options.md generated from it.
#include "spank_plugin/slurm_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace xdeep::spank {
namespace {

using Argv = std::vector<std::string>;

std::vector<GivenOption> Parse(Launcher l, const Argv& argv) {
  return ParseOptions(l, argv, 1, argv.size(), OptionSource::kCommandLine);
}

TEST(SlurmOptionsTest, DocMatchesTable) {
  const std::string want = OptionsTableMarkdown();
  if (std::getenv("XDEEP_WRITE_OPTIONS_DOC") != nullptr) {
    std::ofstream(XDEEP_OPTIONS_DOC) << want;
  }
  std::ifstream in(XDEEP_OPTIONS_DOC);
  std::stringstream have;
  have << in.rdbuf();
  EXPECT_EQ(have.str(), want) << XDEEP_OPTIONS_DOC
                              << " is out of date; regenerate it (see its first lines)";
}

TEST(SlurmOptionsTest, EveryNameAndLetterMeansOneThingPerLauncher) {
  for (int l = 0; l < 3; ++l) {
    std::set<std::string> names;
    std::set<char> letters;
    for (const SlurmOption& o : SlurmOptions()) {
      if (o.arg[l] == kAbsent) continue;
      EXPECT_TRUE(names.insert(o.long_name).second) << o.long_name;
      if (o.short_name != 0) {
        EXPECT_TRUE(letters.insert(o.short_name).second) << o.short_name;
      }
      EXPECT_NE(std::string(o.what), "");
    }
  }
}

TEST(SlurmOptionsTest, ParsesAsGetoptDoes) {
  auto g = Parse(Launcher::kSrun, {"srun", "-vN2", "-n", "4", "--gpus-per-n=2", "--exclusive",
                                   "--export", "NONE", "-c3", "--other-plugin", "val", "-l"});
  ASSERT_EQ(g.size(), 9u);
  EXPECT_STREQ(g[0].option->long_name, "verbose");
  EXPECT_FALSE(g[0].removable) << "a letter inside a cluster cannot be cut out";
  EXPECT_STREQ(g[1].option->long_name, "nodes");
  EXPECT_EQ(g[1].value, "2");
  EXPECT_EQ(g[2].value, "4");
  EXPECT_TRUE(g[2].removable);
  EXPECT_EQ(g[2].begin, 2u);
  EXPECT_EQ(g[2].end, 4u);
  EXPECT_STREQ(g[3].option->long_name, "gpus-per-node") << "a unique prefix is the option";
  EXPECT_FALSE(g[4].has_value) << "an optional argument needs '='";
  EXPECT_EQ(g[5].value, "NONE");
  EXPECT_EQ(g[6].value, "3");
  EXPECT_EQ(g[7].option, nullptr);
  EXPECT_EQ(g[7].value, "val") << "before optind, a word after an unknown option is its value";
  EXPECT_STREQ(g[8].option->long_name, "label");
}

TEST(SlurmOptionsTest, LettersFollowTheLauncher) {
  // srun -W takes seconds; sbatch -W waits and takes nothing.
  auto s = Parse(Launcher::kSrun, {"srun", "-W", "5"});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].value, "5");
  auto b = Parse(Launcher::kSbatch, {"sbatch", "-WN", "3"});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_STREQ(b[1].option->long_name, "nodes");
  EXPECT_EQ(b[1].value, "3");
  auto k = Parse(Launcher::kSalloc, {"salloc", "-K"});
  EXPECT_STREQ(k[0].option->long_name, "kill-command");
}

TEST(SlurmOptionsTest, DoubleDashEndsOptions) {
  auto g = Parse(Launcher::kSrun, {"srun", "-N1", "--", "-N5"});
  ASSERT_EQ(g.size(), 1u);
}

TEST(SlurmOptionsTest, EnvironmentFollowsTheLauncher) {
  static std::map<std::string, std::string> env;
  env = {{"SBATCH_PARTITION", "gpu"}, {"SLURM_PARTITION", "cpu"}, {"SRUN_CPUS_PER_TASK", "2"}};
  auto get = [](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto b = EnvironmentOptions(Launcher::kSbatch, get);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].value, "gpu");
  EXPECT_EQ(b[0].source, OptionSource::kEnvironment);
  auto s = EnvironmentOptions(Launcher::kSrun, get);
  EXPECT_EQ(s.size(), 2u);
}

}  // namespace
}  // namespace xdeep::spank
