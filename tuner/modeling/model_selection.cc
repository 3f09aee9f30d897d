// Default model selection: Extra-P's rules or the robust ones, by the error of
// predicting each parameter's largest value from the others.
#include "tuner/modeling/model_selection.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "tuner/modeling/pmnf.h"

namespace xdeep::modeling {
namespace {

constexpr size_t kMinValuesForFold = 4;

// Whether the repetitions' spread grows with the value (slope of log σ over
// log mean >= 0.5 across the points): run-time noise proportional to the
// value, for which relative least squares is right. Unknown (no repetitions,
// or values spanning less than 2x) counts as proportional.
bool ProportionalNoise(std::span<const Measurement> points) {
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
  if (lm.size() < 3) return true;
  const auto [lo, hi] = std::minmax_element(lm.begin(), lm.end());
  if (*hi - *lo < std::log(2.0)) return true;
  const double n = static_cast<double>(lm.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < lm.size(); ++i) mx += lm[i] / n, my += ls[i] / n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < lm.size(); ++i) {
    sxy += (lm[i] - mx) * (ls[i] - my);
    sxx += (lm[i] - mx) * (lm[i] - mx);
  }
  return sxy / sxx >= 0.5;
}

// Mean relative error (%) of `options`' model refitted without each
// parameter's largest value (and, with `held_out` = 2 and 5 or more values,
// without its two largest), at the points left out; NaN without any fold.
double ExtrapolationError(std::span<const Measurement> points, const ModelerOptions& options,
                          int held_out) {
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
      absl::StatusOr<Model> model = Fit(train, options);
      double error = 0.0;
      for (const Measurement& m : test) {
        const double y = m.Mean();
        const double predicted = model.ok() ? model->Evaluate(m.coordinate) : kNaN;
        error += std::isfinite(predicted) && y != 0 ? std::abs(predicted - y) / std::abs(y) : 1.0;
      }
      sum += 100.0 * error / static_cast<double>(test.size());
      ++folds;
    }
  }
  return folds > 0 ? sum / folds : kNaN;
}

}  // namespace

std::string SelectedModel::Explain(std::span<const std::string> names) const {
  if (std::isnan(cv_error)) {
    return absl::StrFormat("%s (modeler %s; too few values to cross-validate)",
                           model.ToString(names), modeler);
  }
  return absl::StrFormat("%s (modeler %s, cross-validated error %.2g %% vs %s %.2g %%)",
                         model.ToString(names), modeler, cv_error, other_modeler, other_cv_error);
}

absl::StatusOr<SelectedModel> FitSelected(std::span<const Measurement> points,
                                          const SelectionOptions& options) {
  absl::StatusOr<Model> extrap = Fit(points, ModelerOptions::ExtraP());
  if (!extrap.ok()) return extrap.status();
  SelectedModel out{*std::move(extrap), "Extra-P", kNaN, "", kNaN};
  // The challenger weights residuals as the noise does: relative where the
  // spread grows with the value, absolute (as Extra-P) where it does not.
  const bool proportional = ProportionalNoise(points);
  if (!proportional && !options.absolute_challenger) return out;
  ModelerOptions challenger_options = ModelerOptions::Robust();
  challenger_options.relative_least_squares = proportional;
  out.other_modeler = proportional ? "robust" : "robust absolute-LS";
  absl::StatusOr<Model> challenger = Fit(points, challenger_options);
  if (!challenger.ok()) return out;
  const double extrap_error =
      ExtrapolationError(points, ModelerOptions::ExtraP(), options.held_out_values);
  if (std::isnan(extrap_error)) return out;
  const double challenger_error =
      ExtrapolationError(points, challenger_options, options.held_out_values);
  out.cv_error = extrap_error;
  out.other_cv_error = challenger_error;
  if (challenger_error < extrap_error * (1.0 - options.margin) &&
      challenger_error < options.max_cv_error) {
    out.model = *std::move(challenger);
    std::swap(out.modeler, out.other_modeler);
    std::swap(out.cv_error, out.other_cv_error);
  }
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
