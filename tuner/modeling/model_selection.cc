// Default model selection: Extra-P's model against the joint search's best
// hypotheses, judged by a noise-aware score and by extrapolation.
#include "tuner/modeling/model_selection.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "tuner/modeling/pmnf.h"

namespace xdeep::modeling {
namespace {

constexpr size_t kMinValuesForFold = 4;
constexpr double kInf = std::numeric_limits<double>::infinity();

// How the repetitions' spread grows with the value: the slope of log σ over
// log mean across the points, >= 0.5 proportional (run-time noise, for which
// relative least squares is right), below additive. Unknown without
// repetitions, without spread or where the values span less than 2x.
enum class NoiseShape { kUnknown, kProportional, kAdditive };
NoiseShape Shape(std::span<const Measurement> points) {
  std::vector<double> lm, ls;
  for (const Measurement& m : points) {
    if (m.values.size() < 2) continue;
    const double mean = m.Mean();
    double ss = 0.0;
    for (double v : m.values) ss += (v - mean) * (v - mean);
    const double sd = std::sqrt(ss / static_cast<double>(m.values.size() - 1));
    if (!(mean > 0) || !(sd > 0)) continue;
    lm.push_back(std::log(mean));
    ls.push_back(std::log(sd));
  }
  if (lm.size() < 3) return NoiseShape::kUnknown;
  const auto [lo, hi] = std::minmax_element(lm.begin(), lm.end());
  if (*hi - *lo < std::log(2.0)) return NoiseShape::kUnknown;
  const double n = static_cast<double>(lm.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < lm.size(); ++i) mx += lm[i] / n, my += ls[i] / n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < lm.size(); ++i) {
    sxy += (lm[i] - mx) * (ls[i] - my);
    sxx += (lm[i] - mx) * (lm[i] - mx);
  }
  return sxy / sxx >= 0.5 ? NoiseShape::kProportional : NoiseShape::kAdditive;
}

// The terms of `structure` with coefficients refitted on `points` by least
// squares, rows weighted by 1/|y| where `relative`; nullopt where the design
// is rank-deficient or there are not more points than coefficients.
std::optional<Model> Refit(const Model& structure, std::span<const Measurement> points,
                           bool relative) {
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  const Eigen::Index k = static_cast<Eigen::Index>(structure.terms().size()) + 1;
  if (n <= k) return std::nullopt;
  Eigen::MatrixXd a(n, k);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double y = points[i].Mean();
    const double w = relative && y != 0 ? 1.0 / std::abs(y) : 1.0;
    b(i) = w * y;
    a(i, 0) = w;
    for (Eigen::Index j = 1; j < k; ++j) {
      a(i, j) = w * structure.terms()[j - 1].Basis(points[i].coordinate);
    }
  }
  // Column scaling keeps p^3 beside a constant well conditioned.
  const Eigen::VectorXd norms = a.colwise().norm().transpose();
  if (!(norms.array() > 0).all() || !norms.allFinite()) return std::nullopt;
  const Eigen::MatrixXd scaled = a * norms.cwiseInverse().asDiagonal();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(scaled);
  if (qr.rank() < k) return std::nullopt;
  const Eigen::VectorXd c = qr.solve(b).cwiseQuotient(norms);
  if (!c.allFinite()) return std::nullopt;
  std::vector<ProductTerm> terms = structure.terms();
  for (Eigen::Index j = 1; j < k; ++j) terms[j - 1].coefficient = c(j);
  return Model(structure.num_params(), c(0), std::move(terms));
}

// Extrapolation error of `structure` (%): for each parameter with at least 4
// distinct values its largest value is left out (and, with `held_out` = 2 and
// 5 or more values, its two largest), the coefficients are refitted on the
// rest and the mean relative error at the points left out is taken; the
// folds' errors are averaged. NaN without any fold.
double ExtrapolationError(std::span<const Measurement> points, const Model& structure,
                          bool relative, int held_out) {
  const size_t dims = points[0].coordinate.size();
  double sum = 0.0;
  int folds = 0;
  for (size_t p = 0; p < dims; ++p) {
    std::set<double> values;
    for (const Measurement& m : points) values.insert(m.coordinate[p]);
    for (int k = 1; k <= held_out; ++k) {
      if (values.size() < kMinValuesForFold + static_cast<size_t>(k) - 1) continue;
      const double first_out = *std::next(values.rbegin(), k - 1);
      std::vector<Measurement> train, test;
      for (const Measurement& m : points) {
        (m.coordinate[p] >= first_out ? test : train).push_back(m);
      }
      const std::optional<Model> model = Refit(structure, train, relative);
      double error = 0.0;
      for (const Measurement& m : test) {
        const double y = m.Mean();
        const double predicted = model ? model->Evaluate(m.coordinate) : kNaN;
        error += std::isfinite(predicted) && y != 0 ? std::abs(predicted - y) / std::abs(y) : 1.0;
      }
      sum += 100.0 * error / static_cast<double>(test.size());
      ++folds;
    }
  }
  return folds > 0 ? sum / folds : kNaN;
}

// Sum of squared residuals of `model` at the points' means, relative where
// `relative`.
double WeightedRss(const Model& model, std::span<const Measurement> points, bool relative) {
  double rss = 0.0;
  for (const Measurement& m : points) {
    const double y = m.Mean();
    const double r = (model.Evaluate(m.coordinate) - y) / (relative && y != 0 ? std::abs(y) : 1.0);
    rss += r * r;
  }
  return rss;
}

// How far a hypothesis departs from plain powers: one per logarithm power and
// one per fractional exponent, summed over its factors.
double Complexity(const Model& model) {
  double c = 0.0;
  for (const ProductTerm& t : model.terms()) {
    for (const Factor& f : t.factors) c += f.term.log + (f.term.poly.den != 1 ? 1 : 0);
  }
  return c;
}

// Whether `chi2`, a misfit of `model` at the points in units of the noise of
// a point's mean, is below its one-sided quantile `z` standard deviations up
// for n − k degrees of freedom (normal approximation); false without any.
bool WithinChiSquare(double chi2, const Model& model, std::span<const Measurement> points,
                     double z) {
  const double dof =
      static_cast<double>(points.size()) - 1.0 - static_cast<double>(model.terms().size());
  return dof >= 1 && chi2 <= dof + z * std::sqrt(2.0 * dof);
}

// Whether `model`'s relative misfit at the points' means is what the
// repetitions' noise explains: χ² = RSS / σ²_mean below its one-sided 99 %
// quantile for n − k degrees of freedom (normal approximation). Only then does
// the weighting of a refit matter as the noise says; a model that misses the
// data's shape is no better for being fitted relatively.
bool FitsWithinNoise(const Model& model, std::span<const Measurement> points) {
  const std::optional<double> variance = PooledMeanVariance(points, true);
  if (!variance) return false;
  return WithinChiSquare(WeightedRss(model, points, true) / *variance, model, points, 2.33);
}

// Whether `candidate`'s extrapolation one doubling past the grid (each
// parameter alone and all together, the others at their largest value)
// differs from `reference`'s by more than `z` standard errors of the
// candidate's prediction there (its coefficients' part only).
bool ExtrapolatesDifferently(const Model& reference, Model candidate,
                             std::span<const Measurement> points, bool relative, double z) {
  candidate.set_relative_errors(relative);
  candidate.ComputeStatistics(points);
  const double sigma = candidate.quality().residual_stddev;
  if (!(sigma > 0)) return true;
  const size_t dims = points[0].coordinate.size();
  std::vector<double> largest(dims, 0.0);
  for (const Measurement& m : points) {
    for (size_t p = 0; p < dims; ++p) largest[p] = std::max(largest[p], m.coordinate[p]);
  }
  std::vector<std::vector<double>> targets;
  for (size_t p = 0; p < dims; ++p) {
    targets.push_back(largest);
    targets.back()[p] *= 2;
  }
  targets.push_back(largest);
  for (double& v : targets.back()) v *= 2;
  for (const auto& x : targets) {
    const double f = candidate.Evaluate(x);
    const double u = candidate.Uncertainty(x);
    const double noise = relative ? sigma * std::abs(f) : sigma;
    const double se = std::sqrt(std::max(0.0, u * u - noise * noise));
    if (std::abs(f - reference.Evaluate(x)) > z * se) return true;
  }
  return false;
}

// One doubling past the grid: every parameter at twice its largest value.
std::vector<double> DoubledGrid(std::span<const Measurement> points) {
  std::vector<double> x(points[0].coordinate.size(), 0.0);
  for (const Measurement& m : points) {
    for (size_t p = 0; p < x.size(); ++p) x[p] = std::max(x[p], 2.0 * m.coordinate[p]);
  }
  return x;
}

bool SameTerms(const Model& a, const Model& b) {
  if (a.terms().size() != b.terms().size()) return false;
  for (const ProductTerm& t : a.terms()) {
    if (std::none_of(b.terms().begin(), b.terms().end(),
                     [&](const ProductTerm& u) { return u.factors == t.factors; })) {
      return false;
    }
  }
  return true;
}

// Whether `reference`'s prediction one doubling past the grid (every
// parameter at twice its largest value) lies within the range of the
// predictions there of the hypotheses scoring below `max_score` (at least two,
// Extra-P's own terms not counted): where the hypotheses the data cannot tell
// apart disagree at least as much as the change would move the prediction,
// the data do not argue for the change.
template <typename Score>
bool WithinNearEqualSpread(const Model& reference, std::span<const Model> hypotheses,
                           const Score& score, double max_score, std::span<const double> x) {
  double lo = kInf, hi = -kInf;
  int count = 0;
  for (const Model& m : hypotheses) {
    if (SameTerms(m, reference) || !(score(m) < max_score)) continue;
    const double f = m.Evaluate(x);
    lo = std::min(lo, f), hi = std::max(hi, f), ++count;
  }
  const double r = reference.Evaluate(x);
  return count >= 2 && r >= lo && r <= hi;
}

}  // namespace

std::string SelectedModel::Explain(std::span<const std::string> names) const {
  if (std::isnan(cv_error)) {
    return absl::StrFormat("%s (modeler %s; too few values to cross-validate)",
                           model.ToString(names), modeler);
  }
  if (other_modeler.empty()) {
    return absl::StrFormat("%s (modeler %s, cross-validated error %.2g %%)", model.ToString(names),
                           modeler, cv_error);
  }
  return absl::StrFormat("%s (modeler %s, cross-validated error %.2g %% vs %s %.2g %%)",
                         model.ToString(names), modeler, cv_error, other_modeler, other_cv_error);
}

absl::StatusOr<SelectedModel> FitSelected(std::span<const Measurement> points,
                                          const SelectionOptions& options) {
  absl::StatusOr<Model> extrap = Fit(points, ModelerOptions::ExtraP());
  if (!extrap.ok()) return extrap.status();
  SelectedModel out{*std::move(extrap), "Extra-P", kNaN, "", kNaN};
  const NoiseShape shape = Shape(points);
  // Unknown counts as proportional, as run-time noise mostly is.
  const bool proportional = shape != NoiseShape::kAdditive;
  out.cv_error = ExtrapolationError(points, out.model, false, options.held_out_values);
  if (std::isnan(out.cv_error)) return out;
  if (shape == NoiseShape::kProportional && out.cv_error < options.max_cv_error) {
    std::optional<Model> m = Refit(out.model, points, true);
    if (m && FitsWithinNoise(*m, points) &&
        ExtrapolatesDifferently(out.model, *m, points, true, options.min_shift)) {
      const double cv = ExtrapolationError(points, *m, true, options.held_out_values);
      if (cv <= out.cv_error) {
        out.model = *std::move(m);
        out.modeler = "Extra-P's terms, relative LS";
        out.cv_error = cv;
      }
    }
  }
  ModelerOptions joint = ModelerOptions::Robust();
  joint.relative_least_squares = proportional;
  absl::StatusOr<std::vector<Model>> alternatives =
      FitAlternatives(points, options.alternatives, joint);
  if (!alternatives.ok()) return out;
  // The noise of a point's mean, from the repetitions; without them (or
  // without noise) from Extra-P's residuals.
  const double n = static_cast<double>(points.size());
  double variance;
  if (std::optional<double> v = PooledMeanVariance(points, proportional)) {
    variance = *v;
  } else {
    const double k = 1.0 + static_cast<double>(out.model.terms().size());
    variance = WeightedRss(out.model, points, proportional) / std::max(1.0, n - k);
  }
  variance = std::max(variance, 1e-300);
  auto score = [&](const Model& m) {
    const double k = 1.0 + static_cast<double>(m.terms().size());
    return WeightedRss(m, points, proportional) / variance + k * std::log(n) +
           options.complexity_weight * Complexity(m);
  };
  // Extra-P's terms are scored as fitted with the noise's weighting, as the
  // alternatives are: absolute least squares would otherwise lose to any
  // relative fit under proportional noise.
  const std::optional<Model> reweighted = Refit(out.model, points, proportional);
  const Model* best = &out.model;
  const double extrap_score = score(reweighted ? *reweighted : out.model);
  double best_score = extrap_score;
  for (const Model& m : *alternatives) {
    if (SameTerms(m, out.model)) continue;
    const double s = score(m);
    if (s < best_score) best = &m, best_score = s;
  }
  if (best == &out.model) return out;
  const std::vector<double> doubled = DoubledGrid(points);
  // Extra-P's extrapolation among those of the hypotheses the data cannot
  // tell from the best: the evidence is about the hypotheses' shape on the
  // grid, not about the extrapolation.
  const bool undecided = WithinNearEqualSpread(out.model, *alternatives, score,
                                               best_score + options.min_evidence, doubled);
  // Whether `m` may replace Extra-P's model; sets its cross-validated error.
  auto admissible = [&](const Model& m, double* cv) {
    *cv = ExtrapolationError(points, m, proportional, options.held_out_values);
    if (extrap_score - score(m) < options.min_evidence || !(*cv < options.max_cv_error) ||
        !ExtrapolatesDifferently(out.model, m, points, proportional, options.min_shift)) {
      return false;
    }
    // Where the hypothesis misses the grid by more than the noise explains,
    // the data lie outside the PMNF space: the score then ranks misfits, and
    // only a clearly lower cross-validated error speaks for its extrapolation.
    const bool fits = WithinChiSquare(WeightedRss(m, points, proportional) / variance, m, points,
                                      options.lack_of_fit_z);
    return *cv <= (fits ? 1.0 : options.outside_cv_ratio) * out.cv_error;
  };
  double best_cv = kNaN;
  const bool change = admissible(*best, &best_cv) && !undecided;
  out.other_modeler = proportional ? "joint search, relative LS" : "joint search, absolute LS";
  out.other_cv_error = best_cv;
  if (!change) return out;
  // Of the admissible hypotheses the data cannot tell from the best (scoring
  // within min_evidence of it), the one that moves Extra-P's prediction one
  // doubling past the grid least: the evidence picks the set, not which of
  // their extrapolations is right.
  const double reference = out.model.Evaluate(doubled);
  auto distance = [&](const Model& m) { return std::abs(m.Evaluate(doubled) - reference); };
  const Model* chosen = best;
  double chosen_cv = best_cv;
  for (const Model& m : *alternatives) {
    double cv = kNaN;
    if (&m != best && !SameTerms(m, out.model) && score(m) < best_score + options.min_evidence &&
        distance(m) < distance(*chosen) && admissible(m, &cv)) {
      chosen = &m, chosen_cv = cv;
    }
  }
  out.other_cv_error = out.cv_error;
  std::swap(out.modeler, out.other_modeler);
  out.model = *chosen;
  out.cv_error = chosen_cv;
  return out;
}

absl::StatusOr<SelectedModel> FitCurveSelected(std::span<const double> x, std::span<const double> y,
                                               const SelectionOptions& options) {
  if (x.size() != y.size()) return absl::InvalidArgumentError("x and y differ in length");
  std::vector<Measurement> points;
  for (size_t i = 0; i < x.size(); ++i) points.push_back({{x[i]}, {y[i]}});
  return FitSelected(points, options);
}

}  // namespace xdeep::modeling
