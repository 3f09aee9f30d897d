// The modeler the tuner uses by default: fits the points with Extra-P's rules
// and with xdeep's robust rules and keeps the model that predicted held-out
// points better when each was refitted without them.
//
// The held-out points mimic extrapolation: for every parameter with at least
// 4 distinct values, the points at its largest value are left out, both
// modelers are refitted on the rest and predict them. The cross-validated
// error is the mean relative error of those predictions (%), averaged over
// the parameters. Extra-P's selection is the default; the robust one has to
// earn its place (decided on bench/modeling's synthetic cases, see README):
//   * its cross-validated error is below (1 - margin) times Extra-P's: one
//     doubling ahead is a noisy preview of 8-64x, near-ties went either way;
//   * it is below max_cv_error: where both miss one doubling by tens of
//     percent (data outside the PMNF space), neither is trusted and Extra-P's
//     reference choice stays;
//   * the repetitions' spread grows with the value (proportional noise, for
//     which its relative least squares is right; under additive noise
//     Extra-P's absolute fit extrapolated better on the bench).
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
  double margin = 0.5;
  double max_cv_error = 10.0;  // %
};

struct SelectedModel {
  Model model;
  std::string modeler;        // "Extra-P" or "robust": the candidate that won
  double cv_error = kNaN;     // its cross-validated error, %
  double other_cv_error = kNaN;  // the losing candidate's, %

  // "2 + 0.5 * p^(1) (modeler Extra-P, cross-validated error 1.3 % vs robust 4.1 %)"
  std::string Explain(std::span<const std::string> names = {}) const;
};

absl::StatusOr<SelectedModel> FitSelected(std::span<const Measurement> points,
                                          const SelectionOptions& options = {});

// One parameter, one value per x (FitCurve's input).
absl::StatusOr<SelectedModel> FitCurveSelected(std::span<const double> x,
                                               std::span<const double> y,
                                               const SelectionOptions& options = {});

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_MODEL_SELECTION_H_
