// Correcting the analytical model from real runs (design: "outcomes of real
// runs correct the analytical model through the fitted models").
//
// Each outcome pairs the analytical prediction with what the run measured, at
// the run's parameters (e.g. nodes, micro-batch). The correction is a PMNF
// model of the ratio measured / predicted over those parameters, so that a
// systematic divergence that grows with scale (DDLBench's warning: real
// frameworks diverge from the analytic model) is learned and extrapolated.
// With fewer than `min_points_for_model` distinct parameter points there is
// too little to fit a model; the log-ratio is then interpolated over
// log2(parameters) by a Gaussian-process posterior mean: exact at the runs
// seen, decaying over `length_doublings` doublings of any parameter towards
// the runs' mean ratio shrunk towards 1 (`prior_runs` pseudo-runs with ratio 1),
// since one run says most about its neighbours. Applied factors are clamped to
// [min ratio / clamp, max ratio · clamp] so that one extrapolation cannot run
// away.
#ifndef XDEEP_TUNER_MODELING_SCALING_CORRECTION_H_
#define XDEEP_TUNER_MODELING_SCALING_CORRECTION_H_

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/modeling/model.h"
#include "tuner/modeling/pmnf.h"

namespace xdeep::modeling {

// Which part of a step an outcome's ratio is of: the whole step, or one
// component of its compute (the GPU's kernel time, the host's launch time).
enum class StepComponent { kStep, kKernel, kHost };
std::string_view StepComponentName(StepComponent c);

struct Outcome {
  std::vector<double> parameters;
  double predicted = 0.0;  // analytical model, > 0
  double measured = 0.0;   // real run, > 0
  // What was measured: the component that set the reported step, and the
  // parallel mode it ran in ("" for any). ScalingCorrection fits whatever it
  // is given; ComponentCorrection keeps (mode, component) apart.
  StepComponent component = StepComponent::kStep;
  std::string mode;
};

struct CorrectionOptions {
  int min_points_for_model = 5;
  double length_doublings = 1.0;
  double prior_runs = 2.0;
  double clamp = 2.0;
  ModelerOptions modeler = ModelerOptions::Robust();
};

class ScalingCorrection {
 public:
  // The identity correction (factor 1 everywhere).
  ScalingCorrection() = default;

  static absl::StatusOr<ScalingCorrection> Fit(std::span<const Outcome> outcomes,
                                               const CorrectionOptions& options = {});

  // Multiplicative factor measured / predicted expected at `parameters`.
  double Factor(std::span<const double> parameters) const;
  double Apply(std::span<const double> parameters, double analytical_prediction) const {
    return analytical_prediction * Factor(parameters);
  }
  // The fitted model; with few runs, the constant mean ratio (for display).
  const Model& model() const { return model_; }
  // For explanations: the fitted model's expression over `names`, the modeler
  // and its cross-validated (leave-one-out SMAPE) error, or how the few runs
  // are interpolated instead.
  std::string Describe(std::span<const std::string> names = {}) const;
  bool is_identity() const { return identity_; }

 private:
  double Kernel(std::span<const double> a, std::span<const double> b) const;
  bool identity_ = true;
  Model model_;
  // Few runs: log factor = mean_ + sum_i alpha_i k(x, x_i) over log2 parameters.
  bool local_ = false;
  int points_ = 0;
  int min_points_ = 0;
  double length_ = 1.0, mean_ = 0.0;
  std::vector<std::vector<double>> x_;
  std::vector<double> alpha_;
  double min_factor_ = 1.0, max_factor_ = 1.0;
};

// One ScalingCorrection per (mode, component) of the outcomes: a run
// corrects only the component it measured, and only in its own mode; every
// other (mode, component) keeps the factor 1.
class ComponentCorrection {
 public:
  ComponentCorrection() = default;  // the identity
  static absl::StatusOr<ComponentCorrection> Fit(std::span<const Outcome> outcomes,
                                                 const CorrectionOptions& options = {});
  double Factor(const std::string& mode, StepComponent component,
                std::span<const double> parameters) const;
  bool is_identity() const { return fits_.empty(); }
  // Each fitted (mode, component): its ScalingCorrection's description.
  std::string Describe(std::span<const std::string> names = {}) const;

 private:
  std::map<std::pair<std::string, StepComponent>, ScalingCorrection> fits_;
};

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_SCALING_CORRECTION_H_
