// Smoke test of the daemon-facing contract: every example workload parses and
// searches on a built-in profile; the chosen plan is printed for inspection.
#include <iostream>
#include <string>

#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

TEST(SearchSmokeTest, EveryExampleWorkloadGetsAPlan) {
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  for (const char* name : {"gpt-125m", "gpt-1.3b", "resnet50", "generic"}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/examples/workloads/" + name + ".toml";
    auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
    ASSERT_TRUE(w.ok()) << w.status();
    for (Objective o : {Objective::kCost, Objective::kTime}) {
      SearchLimits limits;
      limits.max_nodes = 16;
      limits.price_per_gpu_hour = 2.0;
      limits.objective = o;
      auto r = Search(*w, *hw, limits);
      ASSERT_TRUE(r.ok()) << name << ": " << r.status();
      const Candidate& b = r->best;
      std::cout << name << " [" << ObjectiveName(o) << "] " << StrategyName(b.config) << " on "
                << b.config.nodes << "x" << b.config.gpus_per_node << ", mb "
                << b.config.micro_batch << " x ga " << b.config.grad_accum << " = "
                << b.config.global_batch << (b.config.recompute ? ", recompute" : "") << ": step "
                << b.prediction.step_time_s << " s, " << b.prediction.time_to_solution_s / 3600
                << " h, cost " << b.prediction.cost << ", "
                << b.prediction.memory_per_gpu_bytes / 1e9 << " GB/GPU\n";
      EXPECT_GT(b.prediction.step_time_s, 0);
      EXPECT_GT(b.prediction.cost, 0);
      EXPECT_GT(b.prediction.memory_per_gpu_bytes, 0);
      EXPECT_LE(b.prediction.memory_per_gpu_bytes, hw->memory_bytes);
      EXPECT_GT(b.prediction.parallel_efficiency, 0);
      EXPECT_LE(b.prediction.parallel_efficiency, 1.0 + 1e-9);
      EXPECT_EQ(r->hardware_label, "built-in profile h100-sxm");
    }
  }
}

}  // namespace
}  // namespace xdeep::tuner
