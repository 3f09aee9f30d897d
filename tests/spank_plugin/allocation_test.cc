// The enclosing allocation as squeue --json (Slurm 22.05.8) describes it.
#include "spank_plugin/allocation.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

// Trimmed from `squeue --json -j 2` on the local cluster after
// `salloc -N2 --gpus=3 -t 60`: Slurm put 2 GPUs on n1 and 1 on n2.
constexpr const char* kTwoNodes = R"json({
  "meta": {"Slurm": {"release": "22.05.8"}},
  "errors": [],
  "jobs": [
    {"job_id": 1, "node_count": 1, "gres_detail": ["gpu:4(IDX:0-3)"], "time_limit": null,
     "end_time": 1827271875, "tres_per_node": "gres:gpu:4", "tres_per_job": "",
     "tres_per_task": ""},
    {"job_id": 2, "node_count": 2, "gres_detail": ["gpu:2(IDX:0-1)", "gpu:1(IDX:0)"],
     "time_limit": 60, "end_time": 1795740000, "tres_per_node": "", "tres_per_job": "gres:gpu:3",
     "tres_per_task": ""}
  ]
})json";

TEST(AllocationTest, ReadsGpusPerNodeTimeAndHowTheyWereAsked) {
  Allocation a;
  std::string error;
  ASSERT_TRUE(ParseAllocationJson(kTwoNodes, 2, 1795736400, &a, &error)) << error;
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.gpus_on_node, (std::vector<int>{2, 1}));
  EXPECT_EQ(a.gpus_per_node, 1) << "a uniform layout fits the smallest node";
  EXPECT_EQ(a.gpus, 3);
  EXPECT_EQ(a.gpu_request, "gpu:3 per job");
  EXPECT_DOUBLE_EQ(a.time_left_s, 3600);

  ASSERT_TRUE(ParseAllocationJson(kTwoNodes, 1, 1795736400, &a, &error)) << error;
  EXPECT_EQ(a.gpus_per_node, 4);
  EXPECT_EQ(a.gpu_request, "gpu:4 per node");
  EXPECT_DOUBLE_EQ(a.time_left_s, 0) << "time_limit null: INFINITE";
}

TEST(AllocationTest, NodesWithoutGpusAndBadInputs) {
  Allocation a;
  std::string error;
  ASSERT_TRUE(ParseAllocationJson(
      R"({"jobs":[{"job_id":5,"node_count":2,"gres_detail":[],"time_limit":null}]})", 5, 0, &a,
      &error));
  EXPECT_EQ(a.gpus_on_node, (std::vector<int>{0, 0}));
  EXPECT_EQ(a.gpus_per_node, 0);
  EXPECT_FALSE(ParseAllocationJson(kTwoNodes, 9, 0, &a, &error));
  EXPECT_NE(error.find("does not list job 9"), std::string::npos) << error;
  EXPECT_FALSE(ParseAllocationJson("{not json", 1, 0, &a, &error));
  EXPECT_FALSE(ParseAllocationJson(R"({"jobs":[{"job_id":"x"}]})", 1, 0, &a, &error));
  EXPECT_FALSE(ParseAllocationJson(R"({"jobs":[{"job_id":1,"node_count":"two"}]})", 1, 0, &a,
                                   &error));
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
