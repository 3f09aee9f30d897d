// JSON documents of the CLI (see json_output.h and docs/json.md).
#include "daemon/cli/json_output.h"

#include "client/decision_output.h"

namespace xdeep::cli {
namespace {

// A figure the daemon did not estimate (0) is null, not zero.
nlohmann::json Known(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json LayoutJson(const client::LayoutRow& r) {
  return {
      {"strategy", r.strategy},
      {"label", client::StrategyLabel(r)},
      {"recompute", r.recompute},
      {"selective_recompute", r.selective_recompute},
      {"nodes", r.nodes},
      {"gpus_per_node", r.gpus_per_node},
      {"tasks", r.tasks},
      {"dp", r.dp},
      {"tp", r.tp},
      {"pp", r.pp},
      {"sharding_stage", r.sharding_stage},
      {"micro_batch", r.micro_batch},
      {"grad_accumulation", r.grad_accumulation},
      {"global_batch", r.global_batch > 0 ? nlohmann::json(r.global_batch) : nlohmann::json()},
      {"step_time_s", Known(r.step_time_s)},
      {"time_to_solution_s", Known(r.time_to_solution_s)},
      {"cost", Known(r.cost)},
      {"memory_per_gpu_bytes",
       r.memory_per_gpu_bytes > 0 ? nlohmann::json(r.memory_per_gpu_bytes) : nlohmann::json()},
      {"why", r.why},
  };
}

nlohmann::json PlanJson(const client::TuneAnswer& a) {
  nlohmann::json doc = {{"schema", "xdeep.plan/1"}};
  if (a.skipped) {
    doc["skipped"] = true;
    doc["skip_reason"] = a.skip_reason;
    return doc;
  }
  doc["skipped"] = false;
  doc["decision_id"] = a.decision_id;
  doc["workload"] = a.workload_name;
  doc["hardware"] = a.hardware_label;
  doc["currency"] = a.currency;
  doc["configurations_evaluated"] = a.candidates_evaluated;
  doc["explanation"] = a.explanation;
  doc["time_limit_s"] = a.time_limit_s;
  doc["segments"] = a.segments;
  doc["segment_cost"] = a.segment_cost;
  doc["limited_by"] = a.limited_by;
  doc["chosen"] = LayoutJson(a.best);
  doc["alternatives"] = nlohmann::json::array();
  for (const client::LayoutRow& r : a.alternatives) doc["alternatives"].push_back(LayoutJson(r));
  return doc;
}

nlohmann::json BudgetJson(const v1::BudgetResponse& resp) {
  nlohmann::json doc = {{"schema", "xdeep.budget/1"},
                        {"user", resp.user()},
                        {"currency", resp.currency()},
                        {"lines", nlohmann::json::array()}};
  for (const v1::BudgetLine& l : resp.lines()) {
    const bool limited = l.limit() > 0;
    doc["lines"].push_back({
        {"scope", l.scope()},
        {"name", l.name()},
        {"period", l.period()},
        {"period_start_unix", l.period_start_unix()},
        {"limit", limited ? nlohmann::json(l.limit()) : nlohmann::json()},
        {"spent", l.spent()},
        {"reserved", l.reserved()},
        {"remaining", limited ? nlohmann::json(l.remaining()) : nlohmann::json()},
    });
  }
  return doc;
}

nlohmann::json HistoryJson(const v1::ListDecisionsResponse& resp) {
  nlohmann::json doc = {{"schema", "xdeep.history/1"}, {"decisions", nlohmann::json::array()}};
  for (const v1::DecisionSummary& d : resp.decisions()) {
    doc["decisions"].push_back({
        {"decision_id", d.decision_id()},
        {"created_unix", d.created_unix()},
        {"user", d.user()},
        {"workload", d.workload()},
        {"strategy", d.strategy()},
        {"nodes", d.nodes()},
        {"gpus_per_node", d.gpus_per_node()},
        {"job_id", d.job_id() > 0 ? nlohmann::json(d.job_id()) : nlohmann::json()},
        {"state", d.state()},
        {"predicted_step_time_s", Known(d.predicted_step_time_s())},
        {"measured_step_time_s", Known(d.measured_step_time_s())},
        {"predicted_cost", d.predicted_cost()},
        {"settled_cost",
         d.state() == "settled" ? nlohmann::json(d.settled_cost()) : nlohmann::json()},
    });
  }
  return doc;
}

}  // namespace xdeep::cli
