// Smoke test of the daemon-facing contract: parse, profile, search.
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/workload.h"

#include <iostream>

#include "gtest/gtest.h"

namespace xdeep::tuner {
namespace {

TEST(SearchSmokeTest, Gpt125mOnH100) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits limits;
  limits.max_nodes = 4;
  auto r = Search(*w, *hw, limits);
  ASSERT_TRUE(r.ok()) << r.status();
  std::cout << r->best.why << "\n";
  for (const Candidate& a : r->alternatives) {
    std::cout << "  " << StrategyName(a.config) << " " << a.config.nodes << "x" << a.config.gpus_per_node
              << " mb" << a.config.micro_batch << " ga" << a.config.grad_accum << " rc" << a.config.recompute
              << " step " << a.prediction.step_time_s << " mem " << a.prediction.memory_per_gpu_bytes / 1e9
              << " " << a.why << "\n";
  }
  for (const Candidate& a : r->rejected_examples) {
    std::cout << "  rejected " << StrategyName(a.config) << ": " << a.why << "\n";
  }
  EXPECT_EQ(r->hardware_label, "built-in profile h100-sxm");
  EXPECT_GT(r->evaluated, 0u);
}

}  // namespace
}  // namespace xdeep::tuner
