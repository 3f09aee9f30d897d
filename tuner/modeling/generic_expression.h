// Generic-expression fitting by differential evolution (Kavarakuntla et al.,
// arXiv 2305.11665): the execution time as a sum of K terms, each a product
// over the parameters of x^b · log2(x)^c with free real b and integer c,
// searched by pagmo2's differential evolution on a regularised cost.
//
// Cost(θ) = mean(((f_θ(x) - y) / y)²) + λ · Σ (|b| + c): relative misfit, so
// small and large scales count alike, plus an L1 penalty that prefers absent
// factors and small exponents (the regularisation that keeps DE from fitting
// noise with wild exponents). For each exponent vector θ the coefficients are
// solved exactly by weighted linear least squares (variable projection), so
// DE only searches the exponents. The winner's exponents are snapped to the
// nearest fraction with a small denominator and refitted, which returns the
// result in the PMNF vocabulary (a Model) with the same quality figures.
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
  double regularization = 1e-4;  // λ
  unsigned generations = 250;
  unsigned population = 40;
  unsigned seed = 1;  // deterministic by default
  int max_denominator = 12;
  double epsilon = 0.0005;  // terms contributing less are dropped
};

struct GenericFit {
  Model model;
  double cost = 0.0;         // regularised cost of the snapped model
  double misfit = 0.0;       // its mean squared relative error
  unsigned evaluations = 0;  // fitness evaluations spent by DE
};

absl::StatusOr<GenericFit> FitGenericExpression(std::span<const Measurement> points,
                                                const GenericExpressionOptions& options = {});

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_GENERIC_EXPRESSION_H_
