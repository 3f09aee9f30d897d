// Learning from real runs (docs/learning.md): which runs may correct whose
// predictions, which runs are not believed, and the fitted correction.
// A correction applies only within one model fingerprint, hardware profile
// and partition, and by default only to the user whose runs they were.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/identity.h"
#include "daemon/store.h"
#include "tuner/configuration.h"
#include "tuner/modeling/scaling_correction.h"

namespace xdeep::daemon {

// The scope whose runs may correct `caller`'s predictions under `policy`
// ([policy] learning_scope).
LearningScope ScopeFor(const PolicyConfig& policy, const Caller& caller, const std::string& account,
                       const std::string& fingerprint, const std::string& hardware,
                       const std::string& partition);

// Why a reported run must never correct predictions, or "" when it may. A
// median step time more than `max_ratio` away from the model's uncorrected
// prediction (a CPU run of a GPU workload, a script that times something
// else) is not believed: learning from it would move every later plan.
std::string OutcomeFlag(double predicted_step_time_s, const std::vector<double>& step_times_s,
                        double max_ratio);

// Real runs in `scope`, fitted into a step-time correction (measured /
// predicted over total GPUs and micro-batch) with xdeep::modeling.
struct FittedCorrection {
  int runs = 0;
  modeling::ScalingCorrection correction;  // identity when runs == 0
};
absl::StatusOr<FittedCorrection> FitCorrection(Store& store, const LearningScope& scope);
std::vector<double> CorrectionParameters(const tuner::Configuration& c);

}  // namespace xdeep::daemon
