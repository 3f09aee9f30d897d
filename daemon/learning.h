// Learning from real runs (docs/learning.md): which runs may correct whose
// predictions, which runs are not believed, and the fitted correction.
// A correction applies only within one model fingerprint, hardware profile
// and partition, and by default only to the user whose runs they were.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/identity.h"
#include "daemon/store.h"
#include "tuner/configuration.h"
#include "tuner/hardware_profile.h"
#include "tuner/step_time_correction.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

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

// Real runs in `scope`: each believed run's configuration and its measured
// / predicted step time (against the decision's uncorrected prediction).
struct FittedCorrection {
  int runs = 0;
  struct Report {
    tuner::Configuration config;
    double measured_over_predicted = 1;
  };
  std::vector<Report> reports;
};
absl::StatusOr<FittedCorrection> FitCorrection(Store& store, const LearningScope& scope);
using tuner::CorrectionParameters;

// The search's correction from `fitted`'s runs, for the workload and hardware
// being planned (the scope fixes their fingerprint and profile): each run's
// configuration is timed by the model to see which component of its step set
// it, and corrects only that component, in its own mode
// (tuner/step_time_correction.h). Immutable, so one is kept and shared by
// every request of its scope (DecisionCache::Correction); each search wraps
// it in its own tuner::StepTimeCorrector.
struct LearnedCorrection {
  int runs = 0;
  std::shared_ptr<const modeling::ComponentCorrection> correction;  // null when runs == 0
  std::string note;  // what was fitted, for the explanation and the search's cache key
};
absl::StatusOr<LearnedCorrection> LearnStepTime(const FittedCorrection& fitted,
                                                const tuner::Workload& workload,
                                                const tuner::HardwareProfile& hardware);

}  // namespace xdeep::daemon
