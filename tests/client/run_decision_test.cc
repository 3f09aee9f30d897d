// Decision variables and the decision file: round trips, and every
// inconsistency refused with a line naming it.
#include "client/run_decision.h"

#include <gtest/gtest.h>

#include <map>

namespace xdeep::client {
namespace {

RunDecision Sample() {
  TuneAnswer a;
  a.decision_id = "d1";
  a.workload_name = "gpt";
  a.best = LayoutRow{.strategy = "dp2xtp2xpp2 (interleaved v2)",
                     .nodes = 2,
                     .gpus_per_node = 4,
                     .tasks = 8,
                     .dp = 2,
                     .tp = 2,
                     .pp = 2,
                     .sharding_stage = 1,
                     .micro_batch = 4,
                     .grad_accumulation = 8,
                     .recompute = true,
                     .global_batch = 64,
                     .pipeline_schedule = "interleaved",
                     .virtual_stages = 2,
                     .step_time_s = 0.5,
                     .time_to_solution_s = 3600,
                     .cost = 1.25,
                     .memory_per_gpu_bytes = 1 << 30};
  return RunDecisionOf(a, AppLauncher::kTorchrun);
}

std::function<std::string(const char*)> Lookup(const Variables& vars,
                                               std::map<std::string, std::string> over = {}) {
  std::map<std::string, std::string> m(vars.begin(), vars.end());
  for (auto& [k, v] : over) m[k] = v;
  return [m](const char* name) {
    auto it = m.find(name);
    return it == m.end() ? std::string() : it->second;
  };
}

TEST(RunDecisionTest, VariablesAndFileRoundTrip) {
  const RunDecision d = Sample();
  RunDecision back;
  std::string error;
  ASSERT_TRUE(ReadDecisionVariables(Lookup(DecisionVariables(d)), &back, &error)) << error;
  EXPECT_EQ(back.pipeline_schedule, "interleaved");
  EXPECT_EQ(back.virtual_stages, 2);
  EXPECT_EQ(back.launcher, AppLauncher::kTorchrun);
  RunDecision parsed;
  ASSERT_TRUE(ParseDecisionFile(DecisionFileJson(back), &parsed, &error)) << error;
  EXPECT_EQ(DecisionFileJson(parsed), DecisionFileJson(d));
  EXPECT_NE(DecisionFileJson(d).find("\"schema\": \"xdeep.decision/1\""), std::string::npos);
}

TEST(RunDecisionTest, InconsistentVariablesAreRefused) {
  const Variables vars = DecisionVariables(Sample());
  const std::map<std::string, std::string> cases[] = {{{"XDEEP_DP", "3"}},
                                                      {{"XDEEP_GLOBAL_BATCH", "65"}},
                                                      {{"XDEEP_TASKS", "7"}},
                                                      {{"XDEEP_MICRO_BATCH", "x"}},
                                                      {{"XDEEP_LAUNCHER", "mpirun"}},
                                                      {{"XDEEP_DECISION_ID", ""}},
                                                      {{"XDEEP_SHARDING_STAGE", "4"}},
                                                      {{"XDEEP_SELECTIVE_RECOMPUTE", "1"}}};
  for (const auto& over : cases) {
    RunDecision d;
    std::string error;
    EXPECT_FALSE(ReadDecisionVariables(Lookup(vars, over), &d, &error)) << over.begin()->first;
    EXPECT_NE(error, "");
  }
}

TEST(RunDecisionTest, SelectiveRecomputeRoundTrip) {
  RunDecision d = Sample();
  d.recompute = false;
  d.selective_recompute = true;
  const Variables vars = DecisionVariables(d);
  RunDecision back;
  std::string error;
  ASSERT_TRUE(ReadDecisionVariables(Lookup(vars), &back, &error)) << error;
  EXPECT_TRUE(back.selective_recompute);
  EXPECT_FALSE(back.recompute);
  RunDecision parsed;
  ASSERT_TRUE(ParseDecisionFile(DecisionFileJson(d), &parsed, &error)) << error;
  EXPECT_TRUE(parsed.selective_recompute);
  // Both modes at once is no decision.
  std::string both = DecisionFileJson(d);
  const size_t at = both.find("\"recompute\": false");
  ASSERT_NE(at, std::string::npos);
  both.replace(at, 18, "\"recompute\": true");
  EXPECT_FALSE(ParseDecisionFile(both, &parsed, &error));
  EXPECT_NE(error.find("selective"), std::string::npos) << error;
}

TEST(RunDecisionTest, BrokenFilesAreRefused) {
  RunDecision d;
  std::string error;
  EXPECT_FALSE(ParseDecisionFile("{", &d, &error));
  EXPECT_FALSE(ParseDecisionFile("{\"schema\": \"xdeep.decision/2\"}", &d, &error));
  EXPECT_NE(error.find("xdeep.decision/1"), std::string::npos);
  EXPECT_FALSE(
      ParseDecisionFile("{\"schema\": \"xdeep.decision/1\", \"decision_id\": 3}", &d, &error));
}

TEST(RunDecisionTest, LauncherOfTheCommand) {
  EXPECT_EQ(LauncherOfProgram("/usr/bin/torchrun"), "torchrun");
  EXPECT_EQ(LauncherOfProgram("accelerate"), "accelerate");
  EXPECT_EQ(LauncherOfProgram("python3"), "");
}

}  // namespace
}  // namespace xdeep::client
