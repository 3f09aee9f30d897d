// Rendezvous variables for srun-native and per-node launches.
#include "spank_plugin/rendezvous.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace xdeep::spank {

using client::AppLauncher;
using client::RunDecision;
using client::Variables;
namespace {

std::map<std::string, std::string> AsMap(const Variables& v) { return {v.begin(), v.end()}; }

TEST(RendezvousTest, PortStaysInRangeAndDiffersBetweenSteps) {
  std::set<int> ports;
  for (uint32_t job = 1; job < 20; ++job) {
    for (uint32_t step = 0; step < 3; ++step) {
      const int p = RendezvousPort(job, step, 29500, 29599);
      EXPECT_GE(p, 29500);
      EXPECT_LE(p, 29599);
      ports.insert(p);
    }
  }
  EXPECT_GT(ports.size(), 40u);
  EXPECT_EQ(RendezvousPort(5, 1, 29500, 29599), RendezvousPort(5, 1, 29500, 29599));
}

TEST(RendezvousTest, SrunGivesEveryTaskItsRank) {
  RunDecision d;
  d.gpus_per_node = 4;
  const StepFacts s{.job_id = 9,
                    .step_id = 0,
                    .node_id = 1,
                    .nnodes = 2,
                    .ntasks = 8,
                    .tasks_on_node = 4,
                    .master_addr = "10.0.0.1",
                    .master_port = 29501};
  auto step = AsMap(StepRendezvous(s, d));
  EXPECT_EQ(step["MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(step["MASTER_PORT"], "29501");
  EXPECT_EQ(step.count("PET_NNODES"), 0u);
  auto task = AsMap(TaskRendezvous(s, d, 6, 2));
  EXPECT_EQ(task["RANK"], "6");
  EXPECT_EQ(task["WORLD_SIZE"], "8");
  EXPECT_EQ(task["LOCAL_RANK"], "2");
  EXPECT_EQ(task["LOCAL_WORLD_SIZE"], "4");
}

TEST(RendezvousTest, TorchrunGetsItsOptionsAndNoRanks) {
  RunDecision d;
  d.launcher = AppLauncher::kTorchrun;
  d.gpus_per_node = 4;
  const StepFacts s{.job_id = 9,
                    .step_id = 0,
                    .node_id = 1,
                    .nnodes = 2,
                    .ntasks = 2,
                    .tasks_on_node = 1,
                    .master_addr = "n1",
                    .master_port = 29501};
  auto step = AsMap(StepRendezvous(s, d));
  EXPECT_EQ(step["PET_NNODES"], "2");
  EXPECT_EQ(step["PET_NPROC_PER_NODE"], "4") << "the decided GPUs, not the one Slurm task";
  EXPECT_EQ(step["PET_NODE_RANK"], "1");
  EXPECT_EQ(step["XDEEP_NPROC_PER_NODE"], "4");
  EXPECT_TRUE(TaskRendezvous(s, d, 1, 0).empty());
}

}  // namespace
}  // namespace xdeep::spank
