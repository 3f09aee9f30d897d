// Sampling planner: on synthetic scaling functions with noise, a plan spends
// <= 10 % of the full grid's probe cost, and its model's median prediction
// error at held-out larger scales stays within 2 percentage points of the
// model fitted on the full grid.
#include "tuner/modeling/sampling_planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "tests/tuner/modeling/test_functions.h"

namespace xdeep::modeling {
namespace {

using testing::Grid;
using testing::Sample;
using testing::TrueFunction;

struct Scenario {
  const char* name;
  TrueFunction time;  // seconds per step at (nodes, size)
  // Sanity bound on a single run, in pp. The 2 pp is for the median
  // over seeds; a plan cannot afford the largest scales, so one unlucky noise
  // draw can mislead its extrapolation far more. Set from the worst runs of
  // the default over seeds 1..60 (+11.3, +1.3, +33.6, +8.9 pp; README) with
  // about a third of margin (5 pp for the second, as before); the planner
  // before (GP variance) had +88.6 pp in the third scenario.
  double max_run_pp;
};

constexpr double kMaxMedianPp = 2.0;  // the criterion, every scenario

std::vector<Scenario> Scenarios() {
  return {
      {"2 + 0.05 p^(1/2) n",
       [](std::span<const double> x) { return 2 + 0.05 * std::sqrt(x[0]) * x[1]; },
       /*max_run_pp=*/15.0},
      {"1 + 0.3 log2(p) n^(1/2)",
       [](std::span<const double> x) { return 1 + 0.3 * std::log2(x[0]) * std::sqrt(x[1]); },
       /*max_run_pp=*/5.0},
      // A weak additive node term that only shows at node counts the budget
      // cannot buy (0.01·p·log2 p next to 5 + 0.2·n) leaves p·log2 p, p^(4/3)
      // and p^(2/3)·log2(p)^2 about equally likely on a plan's points.
      {"5 + 0.01 p log2(p) + 0.2 n",
       [](std::span<const double> x) { return 5 + 0.01 * x[0] * std::log2(x[0]) + 0.2 * x[1]; },
       /*max_run_pp=*/45.0},
      {"0.5 + 0.02 p n^(3/4)",
       [](std::span<const double> x) { return 0.5 + 0.02 * x[0] * std::pow(x[1], 0.75); },
       /*max_run_pp=*/12.0},
  };
}

const std::vector<double> kNodes = {2, 4, 8, 16, 32, 64, 128};
const std::vector<double> kSizes = {1, 2, 4, 8, 16, 32};
const std::vector<double> kHeldOutNodes = {256, 512};
constexpr double kNoise = 0.05;
constexpr int kRepetitions = 5;

struct Outcome {
  PlanReport plan;
  PlanAccuracy accuracy;
};

Outcome RunScenario(const Scenario& s, uint64_t seed, const ModelerOptions& modeler) {
  // Probe cost: node-hours, nodes × step time (the planner's cost estimate).
  const CostFunction cost = [&](std::span<const double> x) { return x[0] * s.time(x); };
  PlannerOptions options;
  options.modeler = modeler;
  // XDEEP_PLAN_AVERAGED=1 gives the single best hypothesis (the planner before averaging).
  if (const char* a = std::getenv("XDEEP_PLAN_AVERAGED")) options.averaged_models = std::atoi(a);
  absl::StatusOr<SamplingPlanner> planner =
      SamplingPlanner::Create({kNodes, kSizes}, cost, options);
  EXPECT_TRUE(planner.ok()) << planner.status();
  std::mt19937_64 rng(seed);
  const ProbeFunction probe = [&](std::span<const double> x) -> absl::StatusOr<Measurement> {
    return Sample(s.time, std::vector<double>(x.begin(), x.end()), kNoise, kRepetitions, rng);
  };
  absl::StatusOr<PlanReport> plan = planner->Run(probe);
  EXPECT_TRUE(plan.ok()) << plan.status();
  std::mt19937_64 grid_rng(seed + 1000);
  std::vector<Measurement> full_grid, held_out;
  for (auto& x : Grid({kNodes, kSizes}))
    full_grid.push_back(Sample(s.time, x, kNoise, kRepetitions, grid_rng));
  // Held out: noise-free truth at larger node counts than any probed.
  for (auto& x : Grid({kHeldOutNodes, kSizes})) held_out.push_back({x, {s.time(x)}});
  absl::StatusOr<PlanAccuracy> acc = CompareWithFullGrid(plan->model, full_grid, held_out, modeler);
  EXPECT_TRUE(acc.ok()) << acc.status();
  return {*std::move(plan), *std::move(acc)};
}

// Per scenario, over noise seeds 1..30: every plan within 10 % of the grid's
// cost; the median over seeds of the plan-minus-grid difference of median
// held-out errors within 2 pp; no single run worse than the scenario's
// max_run_pp. Thirty seeds, not five: five-seed medians swing by several pp
// (third scenario: -1.9 to +4.7 pp over the twelve blocks of seeds 1..60),
// so five seeds pass or fail by luck. Seeds 1..30: 5-9 s on a 2-core VM.
void CheckPlanner(const ModelerOptions& modeler, const char* label) {
  for (const Scenario& s : Scenarios()) {
    std::vector<double> differences;
    // XDEEP_PLAN_SEEDS=n runs seeds 1..n against the same bounds.
    const char* seeds_env = std::getenv("XDEEP_PLAN_SEEDS");
    const uint64_t seeds = seeds_env != nullptr ? std::strtoull(seeds_env, nullptr, 10) : 30;
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      SCOPED_TRACE(::testing::Message() << s.name << " seed " << seed);
      const Outcome o = RunScenario(s, seed, modeler);
      std::printf(
          "[planner %s] %-26s seed %llu: %2zu probes (%d line, %d acquired), cost %.1f %% of grid; "
          "median error at held-out scales %.2f %% (full grid %.2f %%, diff %+.2f pp)\n",
          label, s.name, static_cast<unsigned long long>(seed), o.plan.measurements.size(),
          o.plan.line_probes, o.plan.uncertainty_probes, 100 * o.plan.cost_fraction,
          100 * o.accuracy.plan_median_error, 100 * o.accuracy.full_grid_median_error,
          o.accuracy.difference_pp);
      EXPECT_LE(o.plan.cost_fraction, 0.10);
      EXPECT_GE(o.plan.uncertainty_probes, 1);  // the acquisition took part
      EXPECT_LE(o.accuracy.difference_pp, s.max_run_pp)
          << "plan: " << o.plan.model.ToString()
          << "\ngrid: " << o.accuracy.full_grid_model.ToString();
      if (std::getenv("XDEEP_PLAN_DEBUG")) {
        std::printf("    plan: %s\n    grid: %s\n   ", o.plan.model.ToString().c_str(),
                    o.accuracy.full_grid_model.ToString().c_str());
        for (const Measurement& m : o.plan.measurements)
          std::printf(" (%g,%g)", m.coordinate[0], m.coordinate[1]);
        std::printf("\n");
      }
      differences.push_back(o.accuracy.difference_pp);
    }
    const double median = Median(differences);
    std::printf("[planner %s] %-26s median difference over seeds %+.2f pp\n", label, s.name,
                median);
    EXPECT_LE(median, kMaxMedianPp) << s.name;
  }
}

TEST(SamplingPlanner, CheapPlanMatchesFullGridAccuracy) {
  CheckPlanner(PlannerOptions().modeler, "robust");
}

TEST(SamplingPlanner, LinesAreCheapestFirstThroughTheCheapestPoint) {
  const CostFunction cost = [](std::span<const double> x) { return x[0] * (1 + x[1]); };
  absl::StatusOr<SamplingPlanner> planner = SamplingPlanner::Create({kNodes, kSizes}, cost);
  ASSERT_TRUE(planner.ok());
  const auto& lines = planner->line_points();
  ASSERT_EQ(lines.size(), 9u);  // base + 4 more per parameter
  EXPECT_EQ(lines[0], (Point{2, 1}));
  std::set<Point> got(lines.begin(), lines.end());
  for (double p : {2, 4, 8, 16, 32}) EXPECT_TRUE(got.contains(Point{p, 1}));
  for (double n : {1, 2, 4, 8, 16}) EXPECT_TRUE(got.contains(Point{2, n}));
  double grid = 0;
  for (auto& x : Grid({kNodes, kSizes})) grid += cost(x);
  EXPECT_DOUBLE_EQ(planner->full_grid_cost(), grid);
}

TEST(SamplingPlanner, StopsWithinBudgetAndRejectsBadInput) {
  const CostFunction cost = [](std::span<const double> x) { return x[0]; };
  PlannerOptions options;
  options.budget_fraction = 0.0;
  absl::StatusOr<SamplingPlanner> planner =
      SamplingPlanner::Create({kNodes, kSizes}, cost, options);
  ASSERT_TRUE(planner.ok());
  absl::StatusOr<std::optional<Point>> next = planner->Next({}, 0.0);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  EXPECT_FALSE(SamplingPlanner::Create({}, cost).ok());
  EXPECT_FALSE(SamplingPlanner::Create({{0.5, 2}}, cost).ok());
  EXPECT_FALSE(
      SamplingPlanner::Create({{1, 2}}, [](std::span<const double>) { return -1.0; }).ok());
}

}  // namespace
}  // namespace xdeep::modeling
