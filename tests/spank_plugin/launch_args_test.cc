// Reading the user's limits from a launch and rewriting it.
#include "spank_plugin/launch_args.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

using Argv = std::vector<std::string>;

LaunchBounds FromCommandLine(const Argv& argv, int first, Launcher l = Launcher::kSrun) {
  return ReadLaunchBounds(CommandLineOptions(l, argv, first));
}

TEST(LaunchArgsTest, BoundsInEveryForm) {
  Argv argv = {"srun", "-N",        "2-4",       "--ntasks=6", "--gpus-per-node=gpu:h100:3",
               "-G8",  "-pgpu,big", "--account", "proj",       "python3",
               "-N",   "99"};
  LaunchBounds b = FromCommandLine(argv, 9);
  EXPECT_EQ(b.nodes, 4);
  EXPECT_EQ(b.tasks, 6);
  EXPECT_EQ(b.gpus, 8);
  EXPECT_EQ(b.partition, "gpu") << "the first partition of a list";
  EXPECT_EQ(b.account, "proj");
  EXPECT_TRUE(b.refusal.empty());
}

TEST(LaunchArgsTest, PlacementBounds) {
  LaunchBounds b = FromCommandLine({"srun", "-c", "2", "--ntasks-per-node=3", "-w", "n[1-3]", "-x",
                                    "n7,n8", "-D", "/work/run", "prog"},
                                   11);
  EXPECT_EQ(b.cpus_per_task, 2);
  EXPECT_EQ(b.tasks_per_node, 3);
  EXPECT_EQ(b.nodelist, (Argv{"n1", "n2", "n3"}));
  EXPECT_EQ(b.excluded_nodes, 2);
  EXPECT_EQ(b.chdir, "/work/run");
  EXPECT_EQ(FromCommandLine({"srun", "--cpus-per-gpu=4", "prog"}, 2).cpus_per_task, 4);
  EXPECT_EQ(FromCommandLine({"srun", "--tasks-per-node", "2", "prog"}, 3).tasks_per_node, 2);
}

TEST(LaunchArgsTest, GresInEverySpelling) {
  struct Case {
    const char* gres;
    int gpus;
    const char* type;
  };
  for (const Case& c :
       {Case{"gpu:2", 2, ""}, Case{"gpu:h100:3", 3, "h100"}, Case{"gres/gpu:4", 4, ""},
        Case{"nic:1,gpu:a100:2", 2, "a100"}, Case{"gpu", 1, ""}, Case{"gpu:h100", 1, "h100"}}) {
    LaunchBounds b = FromCommandLine({"srun", std::string("--gres=") + c.gres, "prog"}, 2);
    EXPECT_EQ(b.gpus_per_node, c.gpus) << c.gres;
    EXPECT_EQ(b.gpu_type, c.type) << c.gres;
  }
}

TEST(LaunchArgsTest, GpuIsNotAType) {
  LaunchBounds b = FromCommandLine({"srun", "--gpus-per-node=gpu:3", "prog"}, 2);
  EXPECT_EQ(b.gpus_per_node, 3);
  EXPECT_EQ(b.gpu_type, "");
}

TEST(LaunchArgsTest, RefusedOptionsSayWhy) {
  LaunchBounds b = FromCommandLine({"srun", "--multi-prog", "conf"}, 2);
  EXPECT_NE(b.refusal.find("--multi-prog cannot be tuned: the configuration file"),
            std::string::npos)
      << b.refusal;
  EXPECT_NE(FromCommandLine({"srun", "-w", "./nodes.txt", "p"}, 3).refusal.find("host list"),
            std::string::npos);
}

TEST(LaunchArgsTest, CommandArgumentsAreNotOptions) {
  LaunchBounds b = FromCommandLine({"srun", "python3", "train.py", "-N", "5", "--nodes=7"}, 1);
  EXPECT_EQ(b.nodes, 0);
}

TEST(LaunchArgsTest, LaterSourcesWin) {
  std::vector<GivenOption> given =
      CommandLineOptions(Launcher::kSbatch, {"sbatch", "-N", "2", "job.sh"}, 3);
  Argv script = {"-N", "4", "-A", "scripted", "-p", "fromscript"};
  auto lines = ParseOptions(Launcher::kSbatch, script, 0, script.size(), OptionSource::kScript);
  given.insert(given.end(), lines.begin(), lines.end());
  GivenOption env;
  env.option = &SlurmOptions()[0];
  while (std::string(env.option->long_name) != "partition") ++env.option;
  env.value = "fromenv";
  env.source = OptionSource::kEnvironment;
  given.push_back(env);
  LaunchBounds b = ReadLaunchBounds(given);
  EXPECT_EQ(b.nodes, 2) << "the command line beats #SBATCH";
  EXPECT_EQ(b.account, "scripted");
  EXPECT_EQ(b.partition, "fromenv") << "the input environment beats #SBATCH";
}

TEST(LaunchArgsTest, RewriteInsertsBeforeCommandAndCutsReplacedOptions) {
  Argv argv = {"srun",         "-N1",     "--gpus=2", "--ntasks-per-node", "2", "--gpus-per-node=1",
               "--xdeep-tune", "python3", "train.py", "--gpus=9"};
  Argv out = RewriteLaunch(Launcher::kSrun, argv, 7, FromCommandLine(argv, 7), {2, 8, 4}, {});
  Argv want = {"srun",       "--xdeep-tune",      "--nodes=2",
               "--ntasks=8", "--gpus-per-node=4", "--ntasks-per-node=4",
               "python3",    "train.py",          "--gpus=9"};
  EXPECT_EQ(out, want);
}

TEST(LaunchArgsTest, RewriteKeepsGpuTypeAndOtherGres) {
  Argv argv = {"srun", "--gres=nic:1,gpu:h100:2", "-c2", "prog"};
  Argv out = RewriteLaunch(Launcher::kSrun, argv, 3, FromCommandLine(argv, 3), {1, 4, 4}, {});
  Argv want = {"srun",
               "-c2",
               "--nodes=1",
               "--ntasks=4",
               "--gpus-per-node=h100:4",
               "--ntasks-per-node=4",
               "--gres=nic:1",
               "prog"};
  EXPECT_EQ(out, want);
}

TEST(LaunchArgsTest, RewriteOverridesWhatTheScriptSays) {
  Argv argv = {"sbatch", "job.sh"};
  Argv script = {"--gres=gpu:2", "--ntasks-per-node=2", "-G", "2", "--gpus-per-task=1"};
  auto given = CommandLineOptions(Launcher::kSbatch, argv, 1);
  auto lines = ParseOptions(Launcher::kSbatch, script, 0, script.size(), OptionSource::kScript);
  given.insert(given.end(), lines.begin(), lines.end());
  Argv out = RewriteLaunch(Launcher::kSbatch, argv, 1, ReadLaunchBounds(given), {2, 6, 3}, {});
  Argv want = {"sbatch",   "--nodes=2",         "--ntasks=6",          "--gpus-per-node=3",
               "--gpus=6", "--gpus-per-task=1", "--ntasks-per-node=3", "--gres=gpu:3",
               "job.sh"};
  EXPECT_EQ(out, want);
}

TEST(LaunchArgsTest, RewriteTrimsTheNodeList) {
  Argv argv = {"srun", "-w", "n[1-3]", "prog"};
  Argv out = RewriteLaunch(Launcher::kSrun, argv, 3, FromCommandLine(argv, 3), {2, 8, 4}, {});
  EXPECT_EQ(out[5], "--nodelist=n1,n2");
  EXPECT_EQ(std::count(out.begin(), out.end(), "-w"), 0);
}

TEST(LaunchArgsTest, RestrictedExportStillPassesTheDecision) {
  Argv argv = {"srun", "--export=NONE", "-E", "prog"};
  Argv out = RewriteLaunch(Launcher::kSrun, argv, 3, FromCommandLine(argv, 3), {1, 1, 1},
                           {"XDEEP_A", "XDEEP_B"});
  Argv want = {"srun",
               "--nodes=1",
               "--ntasks=1",
               "--gpus-per-node=1",
               "--ntasks-per-node=1",
               "--export=NIL,XDEEP_A,XDEEP_B",
               "prog"};
  EXPECT_EQ(out, want) << "-E is cut: it would let the environment override the decision";
  Argv all = {"srun", "--export=ALL,FOO=1", "prog"};
  Argv kept =
      RewriteLaunch(Launcher::kSrun, all, 2, FromCommandLine(all, 2), {1, 1, 1}, {"XDEEP_A"});
  EXPECT_EQ(kept[1], "--export=ALL,FOO=1");
}

TEST(LaunchArgsTest, RewriteWithoutCommand) {
  // sbatch --wrap has no positional command: flags go at the end.
  Argv argv = {"sbatch", "--wrap", "srun hostname"};
  Argv out = RewriteLaunch(Launcher::kSbatch, argv, 3, FromCommandLine(argv, 3, Launcher::kSbatch),
                           {1, 2, 2}, {});
  EXPECT_EQ(out.back(), "--ntasks-per-node=2");
  EXPECT_EQ(out[2], "srun hostname");
}

TEST(LaunchArgsTest, PerNodeLauncherGetsOneTaskPerNodeHoldingItsGpus) {
  // srun -N2 --ntasks-per-node=1 --gpus-per-task=4 torchrun train.py
  Argv argv = {"srun", "-N2", "--ntasks-per-node=1", "--gpus-per-task=4", "torchrun", "train.py"};
  Argv out = RewriteLaunch(Launcher::kSrun, argv, 4, FromCommandLine(argv, 4), {2, 2, 4, 1}, {});
  Argv want = {"srun",     "--nodes=2", "--ntasks=2", "--gpus-per-node=4", "--ntasks-per-node=1",
               "torchrun", "train.py"};
  EXPECT_EQ(out, want) << "the task counts are cut: each node's one task holds its GPUs";
}

}  // namespace
}  // namespace xdeep::spank
