// Generic-expression fitting by differential evolution (after Kavarakuntla et
// al., arXiv 2305.11665): the execution time as a constant plus K terms, each
// a product over the parameters of x^b · log2(x)^c with b a fraction of small
// denominator and c an integer, searched by pagmo2's differential evolution.
//
// The search runs on the rounded exponents: DE moves real vectors, but every
// candidate is scored with its exponents snapped to the nearest fraction with
// denominator <= max_denominator. Scoring the continuous exponents instead let
// a tiny power of x with huge cancelling coefficients imitate log2(x)
// (c0 + c1·x^0.01 ≈ c0 + c1 + 0.0069·c1·log2 x) and win; snapping then turned
// that power into a constant (2 + 3·log2 p came back as a constant, 89.5 % off
// at 8-64x the largest point).
//
// Score: BIC of the relative misfit, n·ln(mean((f - y)² / y²)) + k·ln(n), plus
// `regularization` · Σ(|b| + c) to break ties towards small exponents. Relative
// misfit makes small and large scales count alike; BIC charges ln(n) per
// coefficient, so a term that only fits noise loses, at any noise level (the
// L1 cost it replaces had a fixed weight, too strong for clean data and too
// weak for noisy data). For each exponent vector the coefficients are solved
// by weighted linear least squares (variable projection), so DE only searches
// exponents.
//
// The population starts from the best single terms per parameter (every
// exponent on the grid, fitted alone), their products, sums and pairs, so that
// the PMNF building blocks are always among the candidates; after DE, starting
// from DE's champion and from the two best seeds, each factor in turn is
// replaced by every exponent on the grid while that lowers the score
// (coordinate descent), and the best result is kept. Terms contributing less than `epsilon` of
// every value are then dropped and the rest refitted; that model is returned
// only where its score is no worse than the best candidate found before
// dropping.
#ifndef XDEEP_TUNER_MODELING_GENERIC_EXPRESSION_H_
#define XDEEP_TUNER_MODELING_GENERIC_EXPRESSION_H_

#include <span>

#include "absl/status/statusor.h"
#include "tuner/modeling/model.h"

namespace xdeep::modeling {

struct GenericExpressionOptions {
  int num_terms = 2;
  double min_exponent = -1.0;  // negative: strong scaling
  double max_exponent = 3.0;
  int max_log_exponent = 2;
  double regularization = 1e-3;  // tie-break weight on Σ(|b| + c)
  unsigned generations = 100;
  unsigned population = 40;
  unsigned seed = 1;  // deterministic by default
  int max_denominator = 12;
  double epsilon = 0.0005;  // terms contributing less are dropped
};

struct GenericFit {
  Model model;
  double cost = 0.0;         // score (BIC + tie-break) of the returned model
  double misfit = 0.0;       // its mean squared relative error
  unsigned evaluations = 0;  // fitness evaluations spent by DE and the descent
};

absl::StatusOr<GenericFit> FitGenericExpression(std::span<const Measurement> points,
                                                const GenericExpressionOptions& options = {});

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_GENERIC_EXPRESSION_H_
