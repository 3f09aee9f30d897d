// Reading the user's limits from a launch and rewriting it.
#include "spank_plugin/launch_args.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

using Argv = std::vector<std::string>;

TEST(LaunchArgsTest, BoundsInEveryForm) {
  Argv argv = {"srun", "-N",    "2-4",       "--ntasks=6", "--gpus-per-node=gpu:h100:3",
               "-G8",  "-pgpu", "--account", "proj",       "python3",
               "-N",   "99"};
  LaunchBounds b = ParseLaunchBounds(argv, 9);
  EXPECT_EQ(b.nodes, 4);
  EXPECT_EQ(b.tasks, 6);
  EXPECT_EQ(b.gpus_per_node, 3);
  EXPECT_EQ(b.gpus, 8);
  EXPECT_EQ(b.partition, "gpu");
  EXPECT_EQ(b.account, "proj");
}

TEST(LaunchArgsTest, CommandArgumentsAreNotOptions) {
  Argv argv = {"srun", "python3", "train.py", "-N", "5", "--nodes=7"};
  LaunchBounds b = ParseLaunchBounds(argv, 1);
  EXPECT_EQ(b.nodes, 0);
}

TEST(LaunchArgsTest, RewriteInsertsBeforeCommandAndDropsConflicts) {
  Argv argv = {"srun",         "-N1",     "--gpus=2", "--ntasks-per-node", "2", "--gpus-per-node=1",
               "--xdeep-tune", "python3", "train.py", "--gpus=9"};
  Argv out = RewriteLaunch(argv, 7, {2, 8, 4});
  Argv want = {"srun",      "-N1",        "--gpus-per-node=1", "--xdeep-tune",
               "--nodes=2", "--ntasks=8", "--gpus-per-node=4", "python3",
               "train.py",  "--gpus=9"};
  EXPECT_EQ(out, want);
}

TEST(LaunchArgsTest, RewriteWithoutCommand) {
  // sbatch --wrap has no positional command: flags go at the end.
  Argv argv = {"sbatch", "--wrap", "srun hostname"};
  Argv out = RewriteLaunch(argv, 3, {1, 2, 2});
  EXPECT_EQ(out.back(), "--gpus-per-node=2");
  EXPECT_EQ(out[2], "srun hostname");
}

}  // namespace
}  // namespace xdeep::spank
