// The JSON documents of `xdeep --json` (docs/json.md): figures a rejected
// layout never had are null, recomputation shows in the label, and budgets
// without a limit have no remaining amount.
#include <gtest/gtest.h>

#include "daemon/cli/json_output.h"

namespace xdeep::cli {
namespace {

client::TuneAnswer Answer() {
  client::TuneAnswer a;
  a.decision_id = "0123456789abcdef";
  a.workload_name = "gpt-125m";
  a.currency = "EUR";
  a.best.strategy = "dp4";
  a.best.nodes = 1;
  a.best.gpus_per_node = 4;
  a.best.step_time_s = 0.5;
  a.best.time_to_solution_s = 3600;
  a.best.cost = 10;
  a.best.global_batch = 256;
  client::LayoutRow rejected;
  rejected.strategy = "dp8";
  rejected.recompute = true;
  rejected.why = "memory: needs 97.3 GiB per GPU";
  a.alternatives.push_back(rejected);
  return a;
}

TEST(PlanJson, RoundTripsAndNullsWhatWasNotEstimated) {
  const auto doc = nlohmann::json::parse(PlanJson(Answer()).dump());
  EXPECT_EQ(doc["schema"], "xdeep.plan/1");
  EXPECT_EQ(doc["chosen"]["cost"], 10.0);
  EXPECT_EQ(doc["chosen"]["global_batch"], 256);
  const auto& rejected = doc["alternatives"].at(0);
  for (const char* key :
       {"step_time_s", "time_to_solution_s", "cost", "memory_per_gpu_bytes", "global_batch"}) {
    EXPECT_TRUE(rejected[key].is_null()) << key;
  }
  EXPECT_EQ(rejected["label"], "dp8+rc");
  EXPECT_EQ(rejected["why"], "memory: needs 97.3 GiB per GPU");
}

TEST(PlanJson, SkippedAnswerSaysWhy) {
  client::TuneAnswer a;
  a.skipped = true;
  a.skip_reason = "not a GPU partition";
  const auto doc = PlanJson(a);
  EXPECT_TRUE(doc["skipped"].get<bool>());
  EXPECT_EQ(doc["skip_reason"], "not a GPU partition");
  EXPECT_FALSE(doc.contains("chosen"));
}

TEST(BudgetJson, NoLimitMeansNullRemaining) {
  v1::BudgetResponse resp;
  resp.set_currency("EUR");
  auto* unlimited = resp.add_lines();
  unlimited->set_scope("user");
  unlimited->set_spent(3);
  auto* limited = resp.add_lines();
  limited->set_scope("account");
  limited->set_limit(100);
  limited->set_spent(30);
  limited->set_reserved(20);
  limited->set_remaining(50);
  const auto doc = BudgetJson(resp);
  EXPECT_TRUE(doc["lines"][0]["limit"].is_null());
  EXPECT_TRUE(doc["lines"][0]["remaining"].is_null());
  EXPECT_EQ(doc["lines"][1]["remaining"], 50.0);
}

TEST(HistoryJson, UnmeasuredAndUnlaunchedAreNull) {
  v1::ListDecisionsResponse resp;
  auto* preview = resp.add_decisions();
  preview->set_state("none");
  preview->set_predicted_step_time_s(0.4);
  auto* ran = resp.add_decisions();
  ran->set_state("settled");
  ran->set_job_id(42);
  ran->set_measured_step_time_s(0.41);
  ran->set_settled_cost(7.5);
  const auto doc = HistoryJson(resp);
  EXPECT_TRUE(doc["decisions"][0]["job_id"].is_null());
  EXPECT_TRUE(doc["decisions"][0]["measured_step_time_s"].is_null());
  EXPECT_TRUE(doc["decisions"][0]["settled_cost"].is_null());
  EXPECT_EQ(doc["decisions"][1]["job_id"], 42);
  EXPECT_EQ(doc["decisions"][1]["settled_cost"], 7.5);
}

}  // namespace
}  // namespace xdeep::cli
