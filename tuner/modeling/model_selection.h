// The modeler the tuner uses by default: fits the points with Extra-P's rules
// and with one challenger, xdeep's joint exponent search (BIC), and keeps the
// model that predicted held-out points better when each was refitted without
// them.
//
// The held-out points mimic extrapolation: for every parameter with at least
// 4 distinct values, the points at its largest value are left out, both
// modelers are refitted on the rest and predict them; with 5 or more values
// also the points at its two largest. The cross-validated error is the mean
// relative error of those predictions (%), averaged over the folds.
//
// The challenger weights residuals as the repetitions say the noise behaves:
// relative least squares (ModelerOptions::Robust()) where the spread grows
// with the value, absolute ones (as Extra-P) where it does not. Extra-P's
// selection is the default; the challenger has to earn its place (decided on
// bench/modeling's synthetic cases, see README):
//   * its cross-validated error is below (1 - margin) times Extra-P's: one or
//     two doublings ahead are a noisy preview of 8-64x, near-ties went either
//     way (margin 0.3 let one case in 306 miss by 14 points where Extra-P
//     was right; 0.4 none);
//   * it is below max_cv_error: where both miss one doubling by tens of
//     percent (data outside the PMNF space), neither is trusted and Extra-P's
//     reference choice stays.
// Where no parameter has 4 values, Extra-P's model is kept and the error is
// NaN.
#ifndef XDEEP_TUNER_MODELING_MODEL_SELECTION_H_
#define XDEEP_TUNER_MODELING_MODEL_SELECTION_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/modeling/model.h"

namespace xdeep::modeling {

struct SelectionOptions {
  double margin = 0.4;
  double max_cv_error = 10.0;  // %
  // Under additive noise, challenge Extra-P with the joint search on
  // absolute residuals; off: keep Extra-P's model there.
  bool absolute_challenger = true;
  // Folds per parameter: 1 leaves out its largest value; 2 also its two
  // largest (where 5 or more values leave 3 to fit).
  int held_out_values = 2;
};

struct SelectedModel {
  Model model;
  std::string modeler;           // the candidate that won: "Extra-P", "robust", ...
  double cv_error = kNaN;        // its cross-validated error, %
  std::string other_modeler;     // the other candidate (empty: none tried)
  double other_cv_error = kNaN;  // its cross-validated error, %

  // "2 + 0.5 * p^(1) (modeler Extra-P, cross-validated error 1.3 % vs robust 4.1 %)"
  std::string Explain(std::span<const std::string> names = {}) const;
};

absl::StatusOr<SelectedModel> FitSelected(std::span<const Measurement> points,
                                          const SelectionOptions& options = {});

// One parameter, one value per x (FitCurve's input).
absl::StatusOr<SelectedModel> FitCurveSelected(std::span<const double> x, std::span<const double> y,
                                               const SelectionOptions& options = {});

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_MODEL_SELECTION_H_
