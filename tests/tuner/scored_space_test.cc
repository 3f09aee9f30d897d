// A search scored from a recorded ScoredSpace gives exactly what a search from
// scratch gives, for every limit that only scores (objective, budget,
// deadline, prices, tolerance, value of time, efficiency floor, time limit,
// restarts, a learned correction).
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tuner/search.h"

namespace xdeep::tuner {
namespace {

std::string Describe(const Candidate& c) {
  const Configuration& k = c.config;
  const Prediction& p = c.prediction;
  char text[512];
  std::snprintf(text, sizeof text,
                "%s n%d g%d mb%d ga%d gb%lld rc%d sel%d | step %.17g ana %.17g tts %.17g cost "
                "%.17g mem %lld seg %d eff %.17g | %s | %s",
                StrategyName(k).c_str(), k.nodes, k.gpus_per_node, k.micro_batch, k.grad_accum,
                static_cast<long long>(k.global_batch), k.recompute, k.selective_recompute,
                p.step_time_s, p.analytical_step_time_s, p.time_to_solution_s, p.cost,
                static_cast<long long>(p.memory_per_gpu_bytes), p.segments,
                p.parallel_efficiency, p.extrapolated.c_str(), c.why.c_str());
  return text;
}

std::vector<std::string> Describe(const std::vector<Candidate>& list) {
  std::vector<std::string> out;
  for (const Candidate& c : list) out.push_back(Describe(c));
  return out;
}

void ExpectSame(const absl::StatusOr<SearchResult>& fresh,
                const absl::StatusOr<SearchResult>& replayed, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(fresh.ok(), replayed.ok()) << fresh.status() << " vs " << replayed.status();
  if (!fresh.ok()) {
    EXPECT_EQ(fresh.status(), replayed.status());
    return;
  }
  EXPECT_EQ(Describe(fresh->best), Describe(replayed->best));
  EXPECT_EQ(Describe(fresh->alternatives), Describe(replayed->alternatives));
  EXPECT_EQ(Describe(fresh->rejected_examples), Describe(replayed->rejected_examples));
  EXPECT_EQ(Describe(fresh->pareto), Describe(replayed->pareto));
  EXPECT_EQ(fresh->evaluated, replayed->evaluated);
  EXPECT_EQ(fresh->pruned, replayed->pruned);
  EXPECT_EQ(fresh->feasible, replayed->feasible);
  EXPECT_EQ(fresh->rejected_memory, replayed->rejected_memory);
  EXPECT_EQ(fresh->rejected_policy, replayed->rejected_policy);
  EXPECT_EQ(fresh->rejected_budget, replayed->rejected_budget);
  EXPECT_EQ(fresh->rejected_deadline, replayed->rejected_deadline);
  EXPECT_EQ(fresh->rejected_efficiency, replayed->rejected_efficiency);
  EXPECT_EQ(fresh->hardware_label, replayed->hardware_label);
}

// Variations of `base` in the limits that only score.
std::vector<std::pair<std::string, SearchLimits>> ScoringVariants(const SearchLimits& base,
                                                                  double cost_scale) {
  std::vector<std::pair<std::string, SearchLimits>> out;
  auto add = [&](const std::string& name, const std::function<void(SearchLimits&)>& change) {
    SearchLimits l = base;
    change(l);
    out.emplace_back(name, l);
  };
  add("same", [](SearchLimits&) {});
  add("time", [](SearchLimits& l) { l.objective = Objective::kTime; });
  add("budget", [&](SearchLimits& l) { l.budget = 1.3 * cost_scale; });
  add("tight budget", [&](SearchLimits& l) { l.budget = 0.5 * cost_scale; });
  add("time under budget", [&](SearchLimits& l) {
    l.objective = Objective::kTimeUnderBudget;
    l.budget = 2 * cost_scale;
  });
  add("deadline", [](SearchLimits& l) {
    l.objective = Objective::kCostUnderDeadline;
    l.deadline_s = 3 * 86400;
  });
  add("impossible deadline", [](SearchLimits& l) {
    l.objective = Objective::kCostUnderDeadline;
    l.deadline_s = 1;
  });
  add("tolerance", [](SearchLimits& l) { l.cost_tolerance = 0.1; });
  add("value of time", [](SearchLimits& l) { l.time_value_per_hour = 40; });
  add("efficiency", [](SearchLimits& l) { l.min_parallel_efficiency = 0.6; });
  add("node price", [](SearchLimits& l) { l.price_per_node_hour = 17; });
  add("gpu price", [](SearchLimits& l) { l.price_per_gpu_hour = 3.75; });
  add("time limit", [](SearchLimits& l) {
    l.time_limit_s = 6 * 3600;
    l.segment_restart_s = 300;
  });
  add("correction", [](SearchLimits& l) {
    l.step_time_correction = [](const Configuration& c, const StepTime& t) {
      return StrategyModel::ScaledCompute(t, 1.0 + 0.03 * c.TotalGpus() - 0.01 * c.micro_batch,
                                          1.0 + 0.02 * c.micro_batch);
    };
  });
  add("fewer alternatives", [](SearchLimits& l) { l.max_alternatives = 2; });
  return out;
}

void CheckPreset(const std::string& preset, int max_nodes, bool batch_may_change) {
  auto w = PresetWorkload(preset);
  ASSERT_TRUE(w.ok());
  w->batch_may_change = batch_may_change;
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits base;
  base.max_nodes = max_nodes;
  base.price_per_gpu_hour = 2.5;
  std::shared_ptr<const ScoredSpace> space;
  auto recorded = SearchRecording(*w, *hw, base, &space);
  ExpectSame(Search(*w, *hw, base), recorded, preset + ": recording changes nothing");
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  ASSERT_NE(space, nullptr);
  EXPECT_GT(space->entries.size(), 10u);
  const double cost = recorded->best.prediction.cost;
  std::set<std::string> picks;  // the variants must matter, or the check proves little
  for (const auto& [name, limits] : ScoringVariants(base, cost)) {
    auto fresh = Search(*w, *hw, limits);
    ExpectSame(fresh, SearchInSpace(*space, *w, *hw, limits), preset + ": " + name);
    picks.insert(fresh.ok() ? Describe(fresh->best) : fresh.status().ToString());
  }
  EXPECT_GE(picks.size(), 6u);
}

TEST(ScoredSpaceTest, Gpt125mChangeableBatchOnFourNodes) { CheckPreset("gpt-125m", 4, true); }
TEST(ScoredSpaceTest, Gpt350mFixedBatchOnThreeNodes) { CheckPreset("gpt-350m", 3, false); }
TEST(ScoredSpaceTest, Llama7bOnEightNodes) { CheckPreset("llama-7b", 8, true); }

TEST(ScoredSpaceTest, AStoppedSearchRecordsNothing) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 4;
  l.interrupt = [] { return absl::CancelledError("the client went away"); };
  std::shared_ptr<const ScoredSpace> space;
  EXPECT_EQ(SearchRecording(*w, *hw, l, &space).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(space, nullptr);
}

}  // namespace
}  // namespace xdeep::tuner
