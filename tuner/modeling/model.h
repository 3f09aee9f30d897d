// A fitted scaling model and the quality figures of its fit.
//
// f(x) = c0 + Σ_k c_k · Π_p x_p^(i_kp) · log2(x_p)^(j_kp): a constant plus
// product terms (see terms.h). Besides evaluation it carries what the search
// needs to prefer robust choices: RSS, SMAPE, adjusted R², leave-one-out
// errors and the least-squares covariance, from which Uncertainty() gives the
// standard deviation of a new measurement at any point (extrapolation widens
// it).
#ifndef XDEEP_TUNER_MODELING_MODEL_H_
#define XDEEP_TUNER_MODELING_MODEL_H_

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "tuner/modeling/terms.h"

namespace xdeep::modeling {

// One measured point: its coordinate (one value per parameter) and the
// repetitions measured there. Models are fitted to the mean of the repetitions.
struct Measurement {
  std::vector<double> coordinate;
  std::vector<double> values;

  double Mean() const;  // summed the way numpy.mean sums (pairwise)
};

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct FitQuality {
  // Extra-P's reported figures: leave-one-out values for a cross-validated
  // single-parameter model, in-sample values otherwise.
  double rss = kNaN;
  double smape = kNaN;  // percent
  double ar2 = kNaN;    // adjusted R²
  // In-sample figures of the final coefficients on all points.
  double in_sample_rss = kNaN;
  double in_sample_smape = kNaN;
  // Leave-one-out refit of the chosen terms (held-out error at every point);
  // NaN when there are no more points than coefficients.
  double loo_rss = kNaN;
  double loo_smape = kNaN;
  // sqrt(in-sample RSS / (n - k)), of relative residuals for models fitted
  // with relative errors; NaN when n <= k.
  double residual_stddev = kNaN;
  // The score the modeler ranked hypotheses by (lower is better): BIC in the
  // joint search, else SMAPE or RSS; NaN where not applicable.
  double selection_score = kNaN;
  int num_points = 0;
  int num_coefficients = 0;
  bool cross_validated = false;
};

struct PredictionInterval {
  double mean = kNaN;
  double stddev = kNaN;  // of a new measurement at the point
  double lower = kNaN;
  double upper = kNaN;
};

class Model {
 public:
  Model() = default;
  Model(int num_params, double constant, std::vector<ProductTerm> terms);

  int num_params() const { return num_params_; }
  double constant() const { return constant_; }
  const std::vector<ProductTerm>& terms() const { return terms_; }
  bool is_constant() const { return terms_.empty(); }
  const FitQuality& quality() const { return quality_; }

  double Evaluate(std::span<const double> x) const;
  double Evaluate(double x) const { return Evaluate(std::span<const double>(&x, 1)); }

  // Standard deviation of a new measurement at x: residual noise plus the
  // coefficients' uncertainty propagated through the basis (grows when
  // extrapolating). Infinite when the fit has no residual degrees of freedom.
  double Uncertainty(std::span<const double> x) const;
  // Student-t prediction interval at `confidence` (e.g. 0.95).
  PredictionInterval Predict(std::span<const double> x, double confidence = 0.95) const;

  // Extra-P style: "200 + 10 * log2(p)^(1)" or "1.4 + 0.3 * x^(3/2) * log2(y)^(1)".
  // Without names, parameters are called p, q, r, ... as in Extra-P.
  std::string ToString(std::span<const std::string> names = {}) const;

  // Set by the modelers: quality figures and the unscaled covariance
  // (AᵀA)⁺ of [constant, terms...], row-major, (1+terms)².
  void set_quality(const FitQuality& q) { quality_ = q; }
  void set_covariance(std::vector<double> unscaled) { covariance_ = std::move(unscaled); }
  // Fitted on relative residuals (noise proportional to the value): the
  // statistics then weight rows by 1/|y|, residual_stddev is relative, and
  // Uncertainty() scales with the predicted value.
  void set_relative_errors(bool relative) { relative_ = relative; }
  bool relative_errors() const { return relative_; }
  // Computes in-sample, leave-one-out, residual and covariance figures of the
  // current coefficients on `points`; keeps rss/smape/ar2 as already set.
  void ComputeStatistics(std::span<const Measurement> points);

 private:
  int num_params_ = 0;
  double constant_ = 0.0;
  std::vector<ProductTerm> terms_;
  FitQuality quality_;
  std::vector<double> covariance_;
  bool relative_ = false;
};

// Relative prediction errors |f(x) - y| / |y| of `model` at `points`.
std::vector<double> RelativeErrors(const Model& model, std::span<const Measurement> points);
double Median(std::vector<double> v);

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_MODEL_H_
