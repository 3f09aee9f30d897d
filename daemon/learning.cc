// Scoped learning from real runs (see learning.h).
#include "daemon/learning.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

std::vector<double> CorrectionParameters(const tuner::Configuration& c) {
  return {static_cast<double>(c.TotalGpus()), static_cast<double>(c.micro_batch)};
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
  std::vector<modeling::Outcome> outcomes;
  for (const auto& [record, measured] : *runs) {
    v1::Decision d;
    if (!d.ParseFromString(record.decision_blob) || d.prediction().step_time_s() <= 0) continue;
    tuner::Configuration c;
    c.nodes = d.config().nodes();
    c.gpus_per_node = d.config().gpus_per_node();
    c.micro_batch = d.config().micro_batch();
    // The stored prediction may itself have been corrected; the correction
    // is fitted against it and multiplies what the search computes now, so
    // only uncorrected predictions are comparable: decisions keep both.
    const double predicted =
        d.analytical_step_time_s() > 0 ? d.analytical_step_time_s() : d.prediction().step_time_s();
    outcomes.push_back({CorrectionParameters(c), predicted, measured});
  }
  FittedCorrection out;
  out.runs = static_cast<int>(outcomes.size());
  if (outcomes.empty()) return out;
  auto fitted = modeling::ScalingCorrection::Fit(outcomes);
  if (!fitted.ok()) return fitted.status();
  out.correction = *fitted;
  return out;
}

}  // namespace xdeep::daemon
