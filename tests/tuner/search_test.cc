// The search against brute force on small spaces, objectives, limits, errors.
#include "tuner/search.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"
#include "tuner/selective_recompute.h"
#include "tuner/strategy_model.h"

namespace xdeep::tuner {
namespace {

// The search space as search.h defines it, enumerated naively and filtered
// with StructuralProblem (not with the search's own hoisted checks).
std::vector<Configuration> EnumerateAll(const Workload& w, const HardwareProfile& hw,
                                        const SearchLimits& l) {
  std::vector<Configuration> out;
  int G = hw.gpus_per_node;
  if (l.max_gpus_per_node > 0) G = std::min(G, l.max_gpus_per_node);
  std::vector<int> gpn;
  for (int g = 1; g < G; g *= 2) gpn.push_back(g);
  gpn.push_back(G);
  auto allowed = [&](const std::string& s) {
    return l.allowed_strategies.empty() ||
           std::find(l.allowed_strategies.begin(), l.allowed_strategies.end(), s) !=
               l.allowed_strategies.end();
  };
  for (int nodes = 1; nodes <= l.max_nodes; ++nodes) {
    for (int g : gpn) {
      const int n = nodes * g;
      if (l.max_total_gpus > 0 && n > l.max_total_gpus) continue;
      for (int tp = 1; tp <= n; ++tp) {
        // Context parallelism as the search documents it: long sequences
        // (each rank keeps 2,048 tokens or more), 2 x cp equal chunks, a
        // fused attention kernel.
        for (int cp = 1; cp <= 64; cp *= 2) {
          if (cp > 1 &&
              (w.family != ModelFamily::kTransformer || !allowed("cp") ||
               MaterialisesScores(ResolvedAttention(w)) || w.transformer.seq_len % (2 * cp) != 0 ||
               w.transformer.seq_len / cp < 2048)) {
            continue;
          }
          for (int pp = 1; pp <= n; ++pp) {
            if (n % (tp * pp * cp) != 0) continue;
            const int dp = n / (tp * pp * cp);
            for (int z = 0; z < 4; ++z) {
              // 1F1B (v 1), then interleaving at every v (a transformer;
              // StructuralProblem drops those pp x v does not divide) or at
              // v 2 alone (a layer table).
              const int max_v = w.family == ModelFamily::kTransformer ? 256 : 2;
              for (int v = 1; v <= max_v; ++v) {
                const int sched = v > 1 ? 1 : 0;
                if (sched && pp == 1) break;  // interleaving is a pipeline schedule
                if (sched && w.family == ModelFamily::kTransformer &&
                    (w.transformer.layers + (w.settings.pipeline_ends_as_layers ? 2 : 0)) %
                            (pp * v) !=
                        0) {
                  continue;  // StructuralProblem's rule, checked before the inner loops
                }
                // No, full and selective recomputation (the last where
                // attention keeps its scores).
                for (int rc = 0; rc < (SelectiveRecomputeMatters(w) ? 3 : 2); ++rc) {
                  for (int mb = 1; mb <= w.max_micro_batch; mb *= 2) {
                    for (int64_t ga = 1; ga <= w.max_global_batch; ++ga) {
                      Configuration c;
                      c.nodes = nodes;
                      c.gpus_per_node = g;
                      c.dp = dp;
                      c.tp = tp;
                      c.pp = pp;
                      c.cp = cp;
                      // Sequence parallelism dominates wherever tp > 1 allows it.
                      c.sequence_parallel = tp > 1 && allowed("sp");
                      c.sharding = static_cast<Sharding>(z);
                      c.schedule = sched ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
                      c.virtual_stages = v;
                      c.recompute = rc == 1;
                      c.selective_recompute = rc == 2;
                      c.micro_batch = mb;
                      c.grad_accum = static_cast<int>(ga);
                      c.global_batch = int64_t{dp} * mb * ga;
                      if (sched && pp == 1) continue;  // interleaving is a pipeline schedule
                      if (!StructuralProblem(w, c).empty()) continue;
                      if (w.batch_may_change) {
                        if ((ga & (ga - 1)) != 0) continue;  // powers of two
                        if (c.global_batch < w.min_global_batch ||
                            c.global_batch > w.max_global_batch)
                          continue;
                      } else if (c.global_batch != w.reference_global_batch) {
                        continue;
                      }
                      if (tp > 1 && !allowed("tp")) continue;
                      if (pp > 1 && !allowed("pp")) continue;
                      if (dp > 1 && z == 0 && !allowed("dp")) continue;
                      if (z > 0 && !allowed(std::string(ShardingName(c.sharding)))) continue;
                      out.push_back(c);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

struct Scored {
  Configuration c;
  Prediction p;
};

std::vector<Scored> FeasibleBruteForce(const Workload& w, const HardwareProfile& hw,
                                       const SearchLimits& l) {
  std::vector<Scored> out;
  for (const Configuration& c : EnumerateAll(w, hw, l)) {
    if (EstimateMemory(w, hw, c).Total() > hw.memory_bytes) continue;
    const Prediction p = Evaluate(w, hw, l, c);
    if (l.budget > 0 && p.cost > l.budget) continue;
    if (l.deadline_s > 0 && p.time_to_solution_s > l.deadline_s) continue;
    if (p.parallel_efficiency < l.min_parallel_efficiency) continue;
    out.push_back({c, p});
  }
  return out;
}

bool ByObjective(Objective o, const Prediction& a, const Prediction& b) {
  if (o == Objective::kTime || o == Objective::kTimeUnderBudget) {
    return std::tie(a.time_to_solution_s, a.cost) < std::tie(b.time_to_solution_s, b.cost);
  }
  return std::tie(a.cost, a.time_to_solution_s) < std::tie(b.cost, b.time_to_solution_s);
}

void ExpectSameConfig(const Configuration& a, const Configuration& b) {
  EXPECT_EQ(StrategyName(a), StrategyName(b));
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.gpus_per_node, b.gpus_per_node);
  EXPECT_EQ(a.micro_batch, b.micro_batch);
  EXPECT_EQ(a.grad_accum, b.grad_accum);
  EXPECT_EQ(a.recompute, b.recompute);
  EXPECT_EQ(a.selective_recompute, b.selective_recompute);
}

void CheckAgainstBruteForce(const Workload& w, const HardwareProfile& hw, const SearchLimits& l) {
  std::vector<Scored> all = FeasibleBruteForce(w, hw, l);
  ASSERT_FALSE(all.empty());
  std::stable_sort(all.begin(), all.end(), [&](const Scored& a, const Scored& b) {
    return ByObjective(l.objective, a.p, b.p);
  });
  auto r = Search(w, hw, l);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->feasible, all.size());
  // Best and runner-ups: the same scores, in order.
  EXPECT_EQ(r->best.prediction.cost, all[0].p.cost);
  EXPECT_EQ(r->best.prediction.time_to_solution_s, all[0].p.time_to_solution_s);
  EXPECT_EQ(r->best.prediction.memory_per_gpu_bytes, all[0].p.memory_per_gpu_bytes);
  if (all.size() == 1 || ByObjective(l.objective, all[0].p, all[1].p)) {
    ExpectSameConfig(r->best.config, all[0].c);  // unique optimum
  }
  ASSERT_EQ(r->alternatives.size(), std::min<size_t>(l.max_alternatives, all.size() - 1));
  for (size_t i = 0; i < r->alternatives.size(); ++i) {
    EXPECT_EQ(r->alternatives[i].prediction.cost, all[i + 1].p.cost) << i;
    EXPECT_EQ(r->alternatives[i].prediction.time_to_solution_s, all[i + 1].p.time_to_solution_s);
    EXPECT_EQ(r->alternatives[i].prediction.memory_per_gpu_bytes,
              all[i + 1].p.memory_per_gpu_bytes);
  }
  // Pareto front: distinct (time, cost) points, cost strictly falling.
  std::sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) {
    return std::tie(a.p.time_to_solution_s, a.p.cost) < std::tie(b.p.time_to_solution_s, b.p.cost);
  });
  std::vector<std::pair<double, double>> front;
  for (const Scored& s : all) {
    if (front.empty() || s.p.cost < front.back().second) {
      if (!front.empty() && front.back().first == s.p.time_to_solution_s) continue;
      front.push_back({s.p.time_to_solution_s, s.p.cost});
    }
  }
  ASSERT_EQ(r->pareto.size(), front.size());
  for (size_t i = 0; i < front.size(); ++i) {
    EXPECT_EQ(r->pareto[i].prediction.time_to_solution_s, front[i].first);
    EXPECT_EQ(r->pareto[i].prediction.cost, front[i].second);
  }
}

TEST(SearchBruteForceTest, Gpt125mFixedBatch) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  w->reference_global_batch = w->min_global_batch = w->max_global_batch = 32;
  w->max_micro_batch = 8;
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 2;
  l.max_gpus_per_node = 4;
  CheckAgainstBruteForce(*w, *hw, l);
}

// Attention over materialised scores: selective recomputation is a third
// mode, and a fixed batch that few data-parallel degrees divide (24).
TEST(SearchBruteForceTest, MathAttentionWithSelectiveRecompute) {
  auto w = PresetWorkload("gpt-350m");
  ASSERT_TRUE(w.ok());
  w->settings.attention = AttentionKernel::kMath;
  BuildTransformerLayers(*w);
  w->reference_global_batch = w->min_global_batch = w->max_global_batch = 24;
  w->max_micro_batch = 4;
  ASSERT_TRUE(SelectiveRecomputeMatters(*w));
  auto hw = BuiltinHardwareProfile("a100-sxm-40gb");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 3;
  l.max_gpus_per_node = 4;
  l.objective = Objective::kTime;
  CheckAgainstBruteForce(*w, *hw, l);
}

TEST(SearchBruteForceTest, ChangeableBatchWithNoiseScaleByTime) {
  auto w = PresetWorkload("gpt-350m");
  ASSERT_TRUE(w.ok());
  w->batch_may_change = true;
  w->min_global_batch = 16;
  w->reference_global_batch = 32;
  w->max_global_batch = 128;
  w->b_noise = 64;
  w->max_micro_batch = 8;
  auto hw = BuiltinHardwareProfile("a100-sxm-40gb");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 3;
  l.max_gpus_per_node = 2;
  l.objective = Objective::kTime;
  CheckAgainstBruteForce(*w, *hw, l);
}

TEST(SearchBruteForceTest, MemoryTightGenericWithPipelinesAndBudget) {
  Workload w = testing::SimpleGeneric(8);
  w.max_micro_batch = 4;
  w.reference_global_batch = w.min_global_batch = w.max_global_batch = 16;
  HardwareProfile hw = testing::SimpleProfile(100, 100, 10, 4);
  hw.memory_bytes = int64_t{18} * 1000 * 1000 * 1000;  // a single GPU cannot hold 20 B/param
  SearchLimits l;
  l.max_nodes = 2;
  l.price_per_node_hour = 10;
  auto unconstrained = Search(w, hw, l);
  ASSERT_TRUE(unconstrained.ok()) << unconstrained.status();
  EXPECT_GT(unconstrained->rejected_memory, 0u);
  l.budget = unconstrained->best.prediction.cost * 1.0000001;
  l.objective = Objective::kTimeUnderBudget;
  CheckAgainstBruteForce(w, hw, l);
}

TEST(SearchBruteForceTest, Llama7bNeedsShardingOrModelParallelism) {
  auto w = PresetWorkload("llama-7b");
  ASSERT_TRUE(w.ok());
  w->reference_global_batch = w->min_global_batch = w->max_global_batch = 16;
  w->max_micro_batch = 2;
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 2;
  l.min_parallel_efficiency = 0.3;
  CheckAgainstBruteForce(*w, *hw, l);
  auto r = Search(*w, *hw, l);
  ASSERT_TRUE(r.ok());
  // 7 B parameters x 16 bytes do not fit one 80 GB card unsharded.
  const Configuration& b = r->best.config;
  EXPECT_TRUE(b.sharding != Sharding::kNone || b.tp > 1 || b.pp > 1) << StrategyName(b);
}

TEST(SearchTest, DeterministicAndLabelled) {
  auto w = PresetWorkload("gpt-125m");
  auto hw = BuiltinHardwareProfile("h200-sxm");
  SearchLimits l;
  l.max_nodes = 8;
  auto a = Search(*w, *hw, l);
  auto b = Search(*w, *hw, l);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(StrategyName(a->best.config), StrategyName(b->best.config));
  EXPECT_EQ(a->best.prediction.cost, b->best.prediction.cost);
  EXPECT_EQ(a->evaluated, b->evaluated);
  EXPECT_EQ(a->hardware_label, "built-in profile h200-sxm");
  EXPECT_THAT(a->best.why, ::testing::HasSubstr("least cost to solution"));
  for (const Candidate& c : a->alternatives) EXPECT_THAT(c.why, ::testing::StartsWith("cost: +"));
}

TEST(SearchTest, TimeObjectiveIsFasterCostObjectiveCheaper) {
  auto w = PresetWorkload("gpt-1.3b");
  auto hw = BuiltinHardwareProfile("h100-sxm");
  SearchLimits l;
  l.max_nodes = 16;
  auto cost = Search(*w, *hw, l);
  l.objective = Objective::kTime;
  auto time = Search(*w, *hw, l);
  ASSERT_TRUE(cost.ok() && time.ok());
  EXPECT_LE(time->best.prediction.time_to_solution_s, cost->best.prediction.time_to_solution_s);
  EXPECT_LE(cost->best.prediction.cost, time->best.prediction.cost);
  EXPECT_GT(time->best.config.TotalGpus(), cost->best.config.TotalGpus());
  // Cost under a deadline halfway between the two: feasible, within it.
  l.objective = Objective::kCostUnderDeadline;
  l.deadline_s =
      (cost->best.prediction.time_to_solution_s + time->best.prediction.time_to_solution_s) / 2;
  auto mid = Search(*w, *hw, l);
  ASSERT_TRUE(mid.ok());
  EXPECT_LE(mid->best.prediction.time_to_solution_s, l.deadline_s);
  EXPECT_GE(mid->best.prediction.cost, cost->best.prediction.cost);
  EXPECT_GT(mid->rejected_deadline, 0u);
}

// The default objective with a tolerance: against every feasible
// configuration, the choice is the fastest whose value (cost, plus the time's
// worth) is within the tolerance of the least, and it lies on the front.
void CheckToleranceAgainstBruteForce(const Workload& w, const HardwareProfile& hw,
                                     const SearchLimits& l) {
  std::vector<Scored> all = FeasibleBruteForce(w, hw, l);
  ASSERT_FALSE(all.empty());
  auto value = [&](const Prediction& p) {
    return p.cost + l.time_value_per_hour * p.time_to_solution_s / 3600;
  };
  double least = value(all[0].p);
  for (const Scored& s : all) least = std::min(least, value(s.p));
  double fastest = 1e300;
  for (const Scored& s : all) {
    if (value(s.p) <= least * (1 + l.cost_tolerance)) {
      fastest = std::min(fastest, s.p.time_to_solution_s);
    }
  }
  auto r = Search(w, hw, l);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->best.prediction.time_to_solution_s, fastest);
  EXPECT_LE(value(r->best.prediction), least * (1 + l.cost_tolerance));
  EXPECT_TRUE(std::any_of(r->pareto.begin(), r->pareto.end(), [&](const Candidate& k) {
    return k.prediction.time_to_solution_s == r->best.prediction.time_to_solution_s &&
           k.prediction.cost == r->best.prediction.cost;
  }));
  EXPECT_THAT(r->best.why, ::testing::HasSubstr("fastest configuration whose"));
  // Every alternative is another configuration than the choice.
  for (const Candidate& a : r->alternatives) {
    EXPECT_FALSE(StrategyName(a.config) == StrategyName(r->best.config) &&
                 a.config.TotalGpus() == r->best.config.TotalGpus() &&
                 a.config.micro_batch == r->best.config.micro_batch &&
                 a.config.recompute == r->best.config.recompute &&
                 a.prediction.cost == r->best.prediction.cost);
  }
}

TEST(SearchToleranceTest, FastestWithinToleranceOfTheLeastCost) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  w->reference_global_batch = w->min_global_batch = w->max_global_batch = 32;
  w->max_micro_batch = 8;
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 2;
  l.max_gpus_per_node = 4;
  auto exact = Search(*w, *hw, l);
  ASSERT_TRUE(exact.ok());
  for (double tolerance : {0.01, 0.05, 0.25, 1.0}) {
    SCOPED_TRACE(tolerance);
    l.cost_tolerance = tolerance;
    CheckToleranceAgainstBruteForce(*w, *hw, l);
    // Never slower, never more than the tolerance dearer, than the least cost.
    auto r = Search(*w, *hw, l);
    ASSERT_TRUE(r.ok());
    EXPECT_LE(r->best.prediction.time_to_solution_s, exact->best.prediction.time_to_solution_s);
    EXPECT_LE(r->best.prediction.cost, exact->best.prediction.cost * (1 + tolerance));
  }
  // A large enough tolerance reaches the fastest configuration of all.
  l.cost_tolerance = 1000;
  auto loose = Search(*w, *hw, l);
  l.cost_tolerance = 0;
  l.objective = Objective::kTime;
  auto fastest = Search(*w, *hw, l);
  ASSERT_TRUE(loose.ok() && fastest.ok());
  EXPECT_EQ(loose->best.prediction.time_to_solution_s, fastest->best.prediction.time_to_solution_s);
}

TEST(SearchToleranceTest, TimeValueTurnsHoursIntoMoney) {
  auto w = PresetWorkload("gpt-350m");
  ASSERT_TRUE(w.ok());
  w->reference_global_batch = w->min_global_batch = w->max_global_batch = 64;
  w->max_micro_batch = 8;
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 2;
  l.max_gpus_per_node = 8;
  l.price_per_gpu_hour = 2.5;
  auto cheapest = Search(*w, *hw, l);
  ASSERT_TRUE(cheapest.ok());
  for (double value : {1.0, 50.0, 1000.0}) {
    SCOPED_TRACE(value);
    l.time_value_per_hour = value;
    for (double tolerance : {0.0, 0.05}) {
      l.cost_tolerance = tolerance;
      CheckToleranceAgainstBruteForce(*w, *hw, l);
    }
  }
  // Time worth far more than GPUs: more GPUs than the least-cost choice.
  l.time_value_per_hour = 1000;
  l.cost_tolerance = 0;
  auto valued = Search(*w, *hw, l);
  ASSERT_TRUE(valued.ok());
  EXPECT_GT(valued->best.config.TotalGpus(), cheapest->best.config.TotalGpus());
  EXPECT_THAT(valued->best.why, ::testing::HasSubstr("cost + 1000.00 per hour"));
}

// Whether `c` keeps to the workload's [parallel] table and a launch's
// strategy list (what Search must never leave).
bool Obeys(const Configuration& c, const ParallelConstraints& p,
           const std::vector<std::string>& launch) {
  auto in = [](const std::vector<std::string>& list, const std::string& s) {
    return list.empty() || std::find(list.begin(), list.end(), s) != list.end() ||
           (s == "zero3" && std::find(list.begin(), list.end(), "fsdp") != list.end());
  };
  const std::string zero = std::string(ShardingName(c.sharding));
  for (const auto* list : {&p.strategies, &launch}) {
    if (c.tp > 1 && !in(*list, "tp")) return false;
    if (c.pp > 1 && !in(*list, "pp")) return false;
    if (c.dp > 1 && c.sharding == Sharding::kNone && !in(*list, "dp")) return false;
    if (c.sharding != Sharding::kNone && !in(*list, zero)) return false;
  }
  if (c.dp > 1 && !in(p.sharding, c.sharding == Sharding::kNone ? "none" : zero)) return false;
  if ((p.tp && c.tp != p.tp) || (p.max_tp && c.tp > p.max_tp)) return false;
  if ((p.pp && c.pp != p.pp) || (p.max_pp && c.pp > p.max_pp)) return false;
  if (c.pp > 1 && !p.pipeline_schedule.empty() &&
      p.pipeline_schedule != (c.schedule == PipelineSchedule::k1F1B ? "1f1b" : "interleaved")) {
    return false;
  }
  return p.recompute.empty() || c.recompute == (p.recompute == "on");
}

TEST(SearchConstraintsTest, NeverLeavesTheUsersParallelTable) {
  auto base = PresetWorkload("gpt-350m");
  ASSERT_TRUE(base.ok());
  base->reference_global_batch = base->min_global_batch = base->max_global_batch = 32;
  base->max_micro_batch = 4;
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  SearchLimits l;
  l.max_nodes = 2;
  l.max_gpus_per_node = 4;
  l.objective = Objective::kTime;
  const std::vector<Scored> all = FeasibleBruteForce(*base, *hw, l);
  struct Case {
    ParallelConstraints p;
    std::vector<std::string> launch;
  };
  std::vector<Case> cases(8);
  cases[0].p.strategies = {"dp"};
  cases[1].p.strategies = {"dp", "pp"};
  cases[1].p.pipeline_schedule = "1f1b";
  cases[2].p.tp = 2;
  cases[3].p.max_pp = 2;
  cases[3].p.recompute = "off";
  cases[4].p.sharding = {"zero3"};
  cases[5].launch = {"dp", "zero1"};
  cases[6].p.strategies = {"dp", "tp", "zero2"};
  cases[6].launch = {"tp", "zero2"};
  cases[7].p.recompute = "on";
  cases[7].p.pipeline_schedule = "interleaved";
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    Workload w = *base;
    w.parallel = cases[i].p;
    SearchLimits cl = l;
    cl.user_strategies = cases[i].launch;
    auto r = Search(w, *hw, cl);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(Obeys(r->best.config, w.parallel, cl.user_strategies))
        << StrategyName(r->best.config);
    for (const auto* list : {&r->alternatives, &r->pareto}) {
      for (const Candidate& c : *list) {
        EXPECT_TRUE(Obeys(c.config, w.parallel, cl.user_strategies)) << StrategyName(c.config);
      }
    }
    // And it is the best of what obeys: the brute force agrees.
    double best = 1e300;
    uint64_t obeying = 0;
    for (const Scored& sc : all) {
      if (!Obeys(sc.c, w.parallel, cl.user_strategies)) continue;
      ++obeying;
      best = std::min(best, sc.p.time_to_solution_s);
    }
    EXPECT_EQ(r->feasible, obeying);
    EXPECT_EQ(r->best.prediction.time_to_solution_s, best);
  }
  // Unknown names in a launch's list are refused, not ignored.
  SearchLimits bad = l;
  bad.user_strategies = {"ddp2"};
  EXPECT_EQ(Search(*base, *hw, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SearchTest, NothingFitsSaysWhy) {
  auto w = PresetWorkload("llama-70b");
  auto hw = BuiltinHardwareProfile("a100-sxm-40gb");
  SearchLimits l;
  l.max_nodes = 1;
  auto r = Search(*w, *hw, l);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("did not fit in memory"));
}

TEST(SearchTest, LimitsAndAllowedStrategies) {
  auto w = PresetWorkload("gpt-350m");
  auto hw = BuiltinHardwareProfile("h100-sxm");
  SearchLimits l;
  l.max_nodes = 4;
  l.max_total_gpus = 6;
  l.allowed_strategies = {"dp"};
  l.objective = Objective::kTime;
  auto r = Search(*w, *hw, l);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const Candidate* c : {&r->best}) {
    EXPECT_LE(c->config.TotalGpus(), 6);
    EXPECT_EQ(c->config.tp, 1);
    EXPECT_EQ(c->config.pp, 1);
    EXPECT_EQ(c->config.sharding, Sharding::kNone);
  }
  for (const Candidate& c : r->alternatives) {
    EXPECT_LE(c.config.TotalGpus(), 6);
    EXPECT_EQ(c.config.sharding, Sharding::kNone);
  }
  l.allowed_strategies = {"warp"};
  EXPECT_FALSE(Search(*w, *hw, l).ok());
}

TEST(SearchTest, NoiseScaleGrowsSamplesNeeded) {
  auto w = PresetWorkload("gpt-125m");
  w->samples = 1000;
  w->reference_global_batch = 100;
  w->b_noise = 100;
  EXPECT_DOUBLE_EQ(SamplesNeeded(*w, 100), 1000);
  EXPECT_DOUBLE_EQ(SamplesNeeded(*w, 300), 1000 * (1 + 3.0) / (1 + 1.0));
  w->b_noise = 0;
  EXPECT_DOUBLE_EQ(SamplesNeeded(*w, 300), 1000);
}

TEST(SearchTest, StrategyNames) {
  Configuration c;
  c.dp = 4;
  EXPECT_EQ(StrategyName(c), "dp4");
  c.dp = 2;
  c.tp = 2;
  EXPECT_EQ(StrategyName(c), "dp2xtp2");
  c.tp = 1;
  c.pp = 2;
  EXPECT_EQ(StrategyName(c), "dp2xpp2 (1f1b)");
  c.pp = 1;
  c.dp = 8;
  c.sharding = Sharding::kZero3;
  EXPECT_EQ(StrategyName(c), "fsdp8");
  c.dp = 1;
  c.sharding = Sharding::kNone;
  EXPECT_EQ(StrategyName(c), "dp1");
}

TEST(SearchTest, ThousandNodesCompletes) {
  auto w = PresetWorkload("gpt-1.3b");
  auto hw = BuiltinHardwareProfile("h100-sxm");
  SearchLimits l;
  l.max_nodes = 1024;
  l.objective = Objective::kTime;
  auto r = Search(*w, *hw, l);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->evaluated + r->pruned, 20000u);
  EXPECT_FALSE(r->pareto.empty());
  // The Pareto front is ordered by time with falling cost.
  for (size_t i = 1; i < r->pareto.size(); ++i) {
    EXPECT_GT(r->pareto[i].prediction.time_to_solution_s,
              r->pareto[i - 1].prediction.time_to_solution_s);
    EXPECT_LT(r->pareto[i].prediction.cost, r->pareto[i - 1].prediction.cost);
  }
}

}  // namespace
}  // namespace xdeep::tuner
