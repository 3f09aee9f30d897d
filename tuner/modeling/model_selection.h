// The modeler the tuner uses by default: Extra-P's model unless the data
// clearly prefer another one and it extrapolates the measured points no worse.
//
// 1. Extra-P's rules pick a model. Where the repetitions show noise that
//    grows with the value (slope of log σ over log mean >= 0.5), its terms
//    are refitted by relative least squares (the right weighting for such
//    noise) if that fit's misfit is what the noise explains (χ² test, 99 %),
//    its cross-validated error is no higher and it moves the extrapolation
//    (see 3.).
// 2. The joint exponent search (weighted as the noise is: relative, or
//    absolute under additive noise) proposes `alternatives` hypotheses. Each,
//    and Extra-P's terms, is scored by RSS / σ²_mean + k·ln(n) +
//    complexity_weight·(log powers + fractional exponents), σ²_mean being the
//    noise of a point's mean pooled from the repetitions (without repetitions:
//    Extra-P's residual variance). Higher noise thus lets fewer terms and
//    plainer exponents win.
// 3. The best alternative replaces Extra-P's model only where its score is
//    lower by >= min_evidence ("strong" evidence on the Kass-Raftery scale of
//    such differences), its cross-validated error is no higher than
//    Extra-P's, and below max_cv_error (where both miss one doubling by tens
//    of percent, the data lie outside the PMNF space and Extra-P's reference
//    choice stays), and where its prediction one doubling past the grid
//    (each parameter alone, and all together) differs from Extra-P's by more
//    than min_shift standard errors of its own prediction there: where the
//    data cannot tell the two extrapolations apart, the reference stays.
//    It stays too where its prediction at twice every parameter's largest
//    value lies within the range of those of the hypotheses scoring within
//    min_evidence of the best (at least two): they disagree there as much as
//    the change would move it, so the evidence is about the shape on the
//    grid, not about the extrapolation. Where the best hypothesis misses the
//    grid by more than the noise explains (χ² above its one-sided 95 %
//    quantile, normal approximation), the data lie outside the PMNF space
//    and the score ranks misfits: it must then also cross-validate at most
//    outside_cv_ratio times Extra-P's error.
// 4. Where the best hypothesis passes all of 3., the model becomes, of the
//    hypotheses scoring within min_evidence of the best that pass 3. too,
//    the one whose prediction at twice every parameter's largest value is
//    closest to Extra-P's: the data cannot tell these apart, so the evidence
//    says Extra-P's model is wrong, not which of their extrapolations is
//    right, and the smallest change is kept.
//
// The cross-validated error mimics extrapolation: for every parameter with at
// least 4 distinct values, the points at its largest value are left out, the
// model's terms are refitted on the rest and predict them; with 5 or more
// values also the points at its two largest. It is the mean relative error of
// those predictions (%), averaged over the folds. Where no parameter has 4
// values, Extra-P's model is kept and the error is NaN. The rules and their
// thresholds were chosen on bench/modeling's synthetic cases (seed 1000; for
// min_shift three more seeds; for 4. and the χ² test six) and checked on a
// fresh seed each time (bench/modeling/README.md).
#ifndef XDEEP_TUNER_MODELING_MODEL_SELECTION_H_
#define XDEEP_TUNER_MODELING_MODEL_SELECTION_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/modeling/model.h"

namespace xdeep::modeling {

struct SelectionOptions {
  int alternatives = 5;            // joint-search hypotheses beside Extra-P's
  double complexity_weight = 1.0;  // score per log power or fractional exponent
  double min_evidence = 6.0;       // score difference needed to leave Extra-P
  // Standard errors by which a change must move the extrapolation one
  // doubling past the grid (else the data cannot tell the two apart).
  double min_shift = 2.0;
  double max_cv_error = 10.0;  // %
  // Where the challenger's misfit on the grid exceeds its χ² quantile this
  // many standard deviations up (1.645: one-sided 95 %), its cross-validated
  // error must be at most this fraction of Extra-P's.
  double lack_of_fit_z = 1.645;
  double outside_cv_ratio = 0.75;
  // Folds per parameter: 1 leaves out its largest value; 2 also its two
  // largest (where 5 or more values leave 3 to fit).
  int held_out_values = 2;
};

struct SelectedModel {
  Model model;
  // The candidate that won: "Extra-P", "Extra-P's terms, relative LS",
  // "joint search, relative LS" or "joint search, absolute LS".
  std::string modeler;
  double cv_error = kNaN;        // its cross-validated error, %
  std::string other_modeler;     // the runner-up (empty: none cross-validated)
  double other_cv_error = kNaN;  // its cross-validated error, %

  // "2 + 0.5 * p^(1) (modeler Extra-P, cross-validated error 1.3 % vs joint
  // search, relative LS 4.1 %)"
  std::string Explain(std::span<const std::string> names = {}) const;
};

absl::StatusOr<SelectedModel> FitSelected(std::span<const Measurement> points,
                                          const SelectionOptions& options = {});

// One parameter, one value per x (FitCurve's input).
absl::StatusOr<SelectedModel> FitCurveSelected(std::span<const double> x, std::span<const double> y,
                                               const SelectionOptions& options = {});

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_MODEL_SELECTION_H_
