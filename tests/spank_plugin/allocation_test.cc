// The enclosing allocation as `scontrol -d show job` (Slurm 22.05.8) describes it.
#include "spank_plugin/allocation.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

// `scontrol -d show job 2` on the local cluster (Slurm 22.05.8) after
// `salloc -N2 --gpus=3 -t 60`, trimmed: Slurm put 2 GPUs on n1 and 1 on n2.
// The job's name holds what a hostile name could: blanks and fields.
constexpr const char* kTwoNodes = R"(JobId=2 JobName=x NumNodes=99 TresPerJob=gres:gpu:64
   UserId=u(1000) GroupId=u(1000) MCS_label=N/A
   JobState=RUNNING Reason=None Dependency=(null)
   RunTime=00:10:00 TimeLimit=01:00:00 TimeMin=N/A
   Partition=gpu AllocNode:Sid=login:123
   NodeList=n[1-2]
   NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,node=2,billing=2,gres/gpu=3
   JOB_GRES=gpu:3
     Nodes=n1 CPU_IDs=0 Mem=0 GRES=gpu:2(IDX:0-1)
     Nodes=n2 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)
   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0
   Command=/bin/sh NumNodes=7
   TresPerJob=gres:gpu:3
)";

// Nodes alike share one detail line; an unlimited job has no time left.
constexpr const char* kFourAlike = R"(JobId=1 JobName=interactive
   RunTime=00:00:05 TimeLimit=UNLIMITED TimeMin=N/A
   NumNodes=4 NumCPUs=16 NumTasks=4 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   JOB_GRES=gpu:16
     Nodes=gpu[01-04] CPU_IDs=0-3 Mem=0 GRES=gpu:h100:4(IDX:0-3)
   TresPerNode=gres:gpu:h100:4
)";

TEST(AllocationTest, ReadsGpusPerNodeTimeAndHowTheyWereAsked) {
  Allocation a;
  std::string error;
  ASSERT_TRUE(ParseAllocationScontrol(kTwoNodes, 2, &a, &error)) << error;
  EXPECT_EQ(a.nodes, 2) << "fields on the name's line are the user's text";
  EXPECT_EQ(a.gpus_on_node, (std::vector<int>{2, 1}));
  EXPECT_EQ(a.gpus_per_node, 1) << "a uniform layout fits the smallest node";
  EXPECT_EQ(a.gpus, 3);
  EXPECT_EQ(a.gpu_request, "gpu:3 per job");
  EXPECT_DOUBLE_EQ(a.time_left_s, 3000);

  ASSERT_TRUE(ParseAllocationScontrol(kFourAlike, 1, &a, &error)) << error;
  EXPECT_EQ(a.gpus_on_node, (std::vector<int>{4, 4, 4, 4}));
  EXPECT_EQ(a.gpus_per_node, 4);
  EXPECT_EQ(a.gpus, 16);
  EXPECT_EQ(a.gpu_request, "gpu:h100:4 per node");
  EXPECT_DOUBLE_EQ(a.time_left_s, 0) << "UNLIMITED";
}

TEST(AllocationTest, NodesWithoutGpusAndBadInputs) {
  Allocation a;
  std::string error;
  ASSERT_TRUE(ParseAllocationScontrol(
      "JobId=5 JobName=cpu\n   NumNodes=2 NumCPUs=2\n     Nodes=n[1-2] CPU_IDs=0 Mem=0\n", 5, &a,
      &error))
      << error;
  EXPECT_EQ(a.gpus_on_node, (std::vector<int>{0, 0}));
  EXPECT_EQ(a.gpus_per_node, 0);
  EXPECT_EQ(a.gpu_request, "");

  EXPECT_FALSE(ParseAllocationScontrol(kTwoNodes, 9, &a, &error));
  EXPECT_NE(error.find("does not describe job 9"), std::string::npos) << error;
  EXPECT_FALSE(ParseAllocationScontrol(kTwoNodes, 20, &a, &error)) << "JobId=2 is not job 20";
  EXPECT_FALSE(ParseAllocationScontrol("", 1, &a, &error));
  EXPECT_FALSE(ParseAllocationScontrol("JobId=1 JobName=x\n   NumNodes=two\n", 1, &a, &error));
  EXPECT_NE(error.find("no node count"), std::string::npos) << error;
  EXPECT_FALSE(ParseAllocationScontrol("JobId=1\n   NumNodes=1\n     Nodes=n[1-\n", 1, &a, &error));
  EXPECT_NE(error.find("malformed node list"), std::string::npos) << error;
}

TEST(AllocationTest, GresDetailEntries) {
  EXPECT_EQ(GpusInGresDetail("gpu:2(IDX:0-1)"), 2);
  EXPECT_EQ(GpusInGresDetail("gpu:h100:4(IDX:0,2-3,5)"), 4);
  EXPECT_EQ(GpusInGresDetail("nic:1,gpu:a100:2(IDX:0-1)"), 2);
  EXPECT_EQ(GpusInGresDetail("nic:1"), 0);
  EXPECT_EQ(GpusInGresDetail(""), 0);
}

}  // namespace
}  // namespace xdeep::spank
