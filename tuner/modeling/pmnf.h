// PMNF modelers, Extra-P's method (Extra-P 4.2 semantics).
//
// Single parameter: every default building block t(x) gives a hypothesis
// c0 + c1·t(x), fitted by least squares; with cross-validation on (default)
// each is scored by the SMAPE of leave-one-out predictions. A hypothesis whose
// term contributes less than `epsilon` of the measured value at every point is
// dropped; the lowest SMAPE wins, and it must beat the constant baseline
// (mean of the values, in-sample SMAPE). Ties keep the earlier hypothesis.
//
// Multi parameter: for each parameter the "best" lines of points (the longest
// lines through the grid, averaged over the other parameters) get a
// single-parameter model; the non-constant winners are combined into product,
// sum and (for 2-3 parameters) mixed hypotheses, refitted on all points, and
// the lowest in-sample SMAPE wins (starting from the full product).
//
// ModelerOptions::ExtraP() (the default) follows these rules exactly; see
// tests/tuner/modeling/extrap_conformance_test.cc. ModelerOptions::Robust()
// departs from them where noisy, sparse probe plans need it (relative least
// squares, joint exponent search, BIC); see the options below.
#ifndef XDEEP_TUNER_MODELING_PMNF_H_
#define XDEEP_TUNER_MODELING_PMNF_H_

#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/modeling/model.h"

namespace xdeep::modeling {

struct ModelerOptions {
  bool use_crossvalidation = true;
  bool allow_log_terms = true;
  // Adds x^(-i) and log2(x)^(-j) blocks for strong scaling (time falling with
  // the node count). Requires all coordinates > 1.
  bool allow_negative_exponents = false;
  bool allow_combinations_of_sums_and_products = true;
  bool compare_with_rss = false;  // select by RSS instead of SMAPE
  // How multi-parameter hypotheses are scored. Extra-P uses in-sample SMAPE,
  // so with noisy data an extra term that fits noise (a·b + b for a·b) often
  // wins. Leave-one-out SMAPE and BIC (Bayesian information criterion on the
  // least-squares residuals) charge for such terms; BIC does so more firmly.
  enum class MultiSelection { kExtraP, kLeaveOneOut, kBic };
  MultiSelection multi_parameter_selection = MultiSelection::kExtraP;
  // Least squares on relative residuals ((f - y) / y) instead of absolute
  // ones: the right weighting when noise is proportional to the value, as
  // run-time noise is, so that small scales are not drowned by large ones.
  // Off by default (Extra-P fits absolute residuals).
  bool relative_least_squares = false;
  // Multi-parameter only: instead of fixing each parameter's exponents on one
  // line (Extra-P), search exponent combinations and structures jointly on
  // all points, scored by BIC. Robust on sparse plans; ~ms per fit.
  bool joint_exponent_search = false;
  double epsilon = 0.0005;  // minimum term contribution (Extra-P's)

  // Extra-P's defaults: selects exactly what Extra-P 4.2 selects.
  static ModelerOptions ExtraP() { return {}; }
  // xdeep's choice for noisy run times and sparse plans: relative least
  // squares, joint exponent search and BIC selection.
  static ModelerOptions Robust() {
    ModelerOptions o;
    o.multi_parameter_selection = MultiSelection::kBic;
    o.relative_least_squares = true;
    o.joint_exponent_search = true;
    return o;
  }
};

// Fits f(x) for one parameter (coordinate size 1). Needs >= 1 point; Extra-P
// asks for >= 5 and so should callers that want a trustworthy model.
absl::StatusOr<Model> FitSingleParameter(std::span<const Measurement> points,
                                         const ModelerOptions& options = {});

// Convenience for curves: one value per x (e.g. all-reduce time over rank
// count, compute time over micro-batch size).
absl::StatusOr<Model> FitCurve(std::span<const double> x, std::span<const double> y,
                               const ModelerOptions& options = {});

// Fits f(x_1..x_d) for d >= 2 parameters; points need not form a full grid,
// but each parameter needs a line of points (other parameters fixed).
absl::StatusOr<Model> FitMultiParameter(std::span<const Measurement> points,
                                        const ModelerOptions& options = {});

// The `count` best hypotheses of the joint search (relative least squares if
// set, BIC), best first; any number of parameters. Where they disagree the
// data do not pin the model down: the search can check how much a
// prediction depends on the model choice (the sampling planner probes where
// telling them apart helps its extrapolation most).
absl::StatusOr<std::vector<Model>> FitAlternatives(
    std::span<const Measurement> points, int count,
    const ModelerOptions& options = ModelerOptions::Robust());

// Bayesian model averaging over those `count` hypotheses: each weighted by
// exp(-Δ/2) (Δ against the best), summed term by term into one PMNF model.
// Δ is of BIC, or, where points carry repetitions, of RSS / σ²_mean +
// k·log(n) with σ²_mean the noise of a point's mean pooled from them.
// When sparse, noisy points leave several exponents about equally likely
// (p·log2 p, p^(4/3), p^(2/3)·log2(p)^2 on nodes <= 64), picking one
// extrapolates with that one's error; the average hedges between them.
// count = 1 is the joint search's best hypothesis.
absl::StatusOr<Model> FitAveraged(std::span<const Measurement> points, int count,
                                  const ModelerOptions& options = ModelerOptions::Robust());

// FitAveraged's pieces, shared with the sampling planner: σ²_mean, the noise
// variance of a point's mean pooled from the repetitions (of (v − mean) / mean
// where `relative`), nullopt where no point repeats; and the weights
// exp(-Δ/2), summing to 1, of RSS / σ²_mean + k·log(n) over `models`.
std::optional<double> PooledMeanVariance(std::span<const Measurement> points, bool relative);
std::vector<double> NoiseWeights(std::span<const Measurement> points, std::span<const Model> models,
                                 double mean_variance, bool relative);

// Dispatches on the number of parameters, as Extra-P's model generator does.
absl::StatusOr<Model> Fit(std::span<const Measurement> points, const ModelerOptions& options = {});

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_PMNF_H_
