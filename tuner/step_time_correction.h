// Learning from reported runs by component (docs/learning.md): a run's
// measured / predicted step time is the error of the component of the step
// that the model says set it -- the GPU's kernel time or the host's launch
// time of its compute (StepTime::Passes) -- in its own parallel mode. A
// later prediction gets the fitted factor on that component's time only, in
// configurations of the same mode, recombined by the model's own rule
// (StrategyModel::ScaledCompute): a step set by the other component, and
// every term a mode adds (DDP's reducer, FSDP's gathers, TP's collectives, a
// pipeline's transfers and bubble, the optimizer step), stays as predicted.
// One code path for the daemon (daemon/learning.*) and xdeep_validate.
#ifndef XDEEP_TUNER_STEP_TIME_CORRECTION_H_
#define XDEEP_TUNER_STEP_TIME_CORRECTION_H_

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tuner/configuration.h"
#include "tuner/modeling/scaling_correction.h"
#include "tuner/strategy_model.h"

namespace xdeep::tuner {

// The parallel mode a run teaches: "single", or the strategies it combines,
// '+'-joined in a fixed order ("ddp", "zero1", "zero2", "fsdp", "tp", "pp",
// "cp"; e.g. "fsdp+tp").
std::string LearningMode(const Configuration& c);

// Where a correction is interpolated: total GPUs and micro-batch.
std::vector<double> CorrectionParameters(const Configuration& c);

// A reported run of `c`, whose model step time is `predicted`, measured at
// `measured_over_predicted` times the model's step time (the stored
// analytical figure's ratio): the component that set it, and the factor on
// that component's time that makes the recombined step the measured one
// (bounded to [1/16, 16]; a step the other parts already outlast takes the
// bound). Outcome::predicted is the component's time, measured that times
// the factor.
modeling::Outcome ReportedOutcome(const Configuration& c, const StepTime& predicted,
                                  double measured_over_predicted);

// `analytical` corrected: the factors of c's mode on its kernel and host
// time. The identity correction returns it unchanged.
StepTime CorrectedStepTime(const modeling::ComponentCorrection& correction,
                           const Configuration& c, const StepTime& analytical);

// CorrectedStepTime for a search, which asks once per candidate: the factors
// depend only on the mode, GPUs and micro-batch, so each is evaluated once.
// One per search (the memo is not shared between threads); copies share the
// correction.
class StepTimeCorrector {
 public:
  explicit StepTimeCorrector(std::shared_ptr<const modeling::ComponentCorrection> correction)
      : correction_(std::move(correction)) {}
  StepTime operator()(const Configuration& c, const StepTime& analytical);

 private:
  std::shared_ptr<const modeling::ComponentCorrection> correction_;
  std::map<std::tuple<std::string, int, int>, std::pair<double, double>> factors_;
};

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_STEP_TIME_CORRECTION_H_
