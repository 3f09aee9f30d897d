// Scoped learning from real runs (see learning.h).
#include "daemon/learning.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

namespace v1 = xdeep::v1;

std::string OutcomeFlag(double predicted, const std::vector<double>& step_times_s,
                        double max_ratio) {
  std::vector<double> times;
  for (double t : step_times_s) {
    if (t > 0 && std::isfinite(t)) times.push_back(t);
  }
  if (times.empty() || predicted <= 0) return "";
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  const double measured = times[times.size() / 2];
  const double ratio = measured / predicted;
  if (ratio <= max_ratio && ratio >= 1 / max_ratio) return "";
  return fmt::format(
      "median step time {:.4g} s is {:.3g}x the model's {:.4g} s, outside the plausible range "
      "(1/{:g}x to {:g}x, [policy] learning_max_ratio)",
      measured, ratio, predicted, max_ratio, max_ratio);
}

LearningScope ScopeFor(const PolicyConfig& policy, const Caller& caller, const std::string& account,
                       const std::string& fingerprint, const std::string& hardware,
                       const std::string& partition) {
  LearningScope scope{fingerprint, hardware, partition, caller.uid, ""};
  if (policy.learning_scope == "site") scope.uid.reset();
  if (policy.learning_scope == "account") scope.account = account;
  return scope;
}

absl::StatusOr<FittedCorrection> FitCorrection(Store& store, const LearningScope& scope) {
  auto runs = store.MeasuredRuns(scope, 64);
  if (!runs.ok()) return runs.status();
  FittedCorrection out;
  for (const auto& [record, measured] : *runs) {
    v1::Decision d;
    if (!d.ParseFromString(record.decision_blob) || d.prediction().step_time_s() <= 0) continue;
    if (!(measured > 0) || !std::isfinite(measured)) continue;
    // The whole configuration, as Fill (decision_maker.cc) stored it: the
    // model times it again to split the step into its components.
    const v1::Configuration& s = d.config();
    tuner::Configuration c;
    c.nodes = s.nodes();
    c.gpus_per_node = s.gpus_per_node();
    c.dp = std::max(1, s.data_parallel());
    c.tp = std::max(1, s.tensor_parallel());
    c.pp = std::max(1, s.pipeline_parallel());
    c.cp = std::max(1, s.context_parallel());
    c.sharding = static_cast<tuner::Sharding>(std::clamp(s.sharding_stage(), 0, 3));
    c.micro_batch = std::max(1, s.micro_batch());
    c.grad_accum = std::max(1, s.grad_accumulation());
    c.recompute = s.recompute();
    c.selective_recompute = s.selective_recompute();
    c.global_batch = s.global_batch();
    c.schedule = s.pipeline_schedule() == "interleaved" ? tuner::PipelineSchedule::kInterleaved
                                                        : tuner::PipelineSchedule::k1F1B;
    c.virtual_stages = std::max(1, s.virtual_stages());
    c.sequence_parallel = s.sequence_parallel();
    // The stored prediction may itself have been corrected; the correction
    // is fitted against it and multiplies what the search computes now, so
    // only uncorrected predictions are comparable: decisions keep both.
    const double predicted =
        d.analytical_step_time_s() > 0 ? d.analytical_step_time_s() : d.prediction().step_time_s();
    out.reports.push_back({c, measured / predicted});
  }
  out.runs = static_cast<int>(out.reports.size());
  return out;
}

absl::StatusOr<LearnedCorrection> LearnStepTime(const FittedCorrection& fitted,
                                                const tuner::Workload& workload,
                                                const tuner::HardwareProfile& hardware) {
  LearnedCorrection out;
  out.runs = fitted.runs;
  if (fitted.reports.empty()) return out;
  tuner::StrategyModel model(workload, hardware);
  std::vector<modeling::Outcome> outcomes;
  for (const FittedCorrection::Report& r : fitted.reports) {
    outcomes.push_back(tuner::ReportedOutcome(r.config, model.Time(r.config),
                                              r.measured_over_predicted));
  }
  auto correction = modeling::ComponentCorrection::Fit(outcomes);
  if (!correction.ok()) return correction.status();
  out.correction = std::make_shared<const modeling::ComponentCorrection>(*std::move(correction));
  static const std::string kNames[] = {"gpus", "micro_batch"};  // CorrectionParameters
  out.note = fmt::format("step time corrected from {} real run(s): {}", fitted.runs,
                         out.correction->Describe(kNames));
  return out;
}

}  // namespace xdeep::daemon
