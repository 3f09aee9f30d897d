// Terms of the performance-model normal form (PMNF), Extra-P's vocabulary.
//
// A compound term is x^(i) * log2(x)^(j) for one parameter x, with i a small
// rational (kept exact so that selected models compare against Extra-P's
// exactly) and j an integer. A product term multiplies compound terms of
// different parameters and carries one coefficient. The building blocks are
// Extra-P's defaults in Extra-P's order: the order matters because ties in the
// selection keep the earlier hypothesis.
#ifndef XDEEP_TUNER_MODELING_TERMS_H_
#define XDEEP_TUNER_MODELING_TERMS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace xdeep::modeling {

// An exact rational exponent num/den (den > 0, reduced).
struct Fraction {
  int num = 0;
  int den = 1;

  static Fraction Make(int num, int den);
  double value() const { return static_cast<double>(num) / den; }
  bool is_zero() const { return num == 0; }
  std::string ToString() const;  // "3/2", "2", "-1/4"
  friend bool operator==(const Fraction&, const Fraction&) = default;
};

// x^(poly) * log2(x)^(log) of one parameter.
struct CompoundTerm {
  Fraction poly;
  int log = 0;

  bool is_constant() const { return poly.is_zero() && log == 0; }
  double Evaluate(double x) const;
  // "p^(3/2) * log2(p)^(1)"; parts with a zero exponent are left out.
  std::string ToString(std::string_view name) const;
  friend bool operator==(const CompoundTerm&, const CompoundTerm&) = default;
};

// One factor of a product term: a compound term of parameter `param`.
struct Factor {
  int param = 0;
  CompoundTerm term;
  friend bool operator==(const Factor&, const Factor&) = default;
};

// coefficient * Π factors. Factors are kept sorted by parameter index.
struct ProductTerm {
  double coefficient = 1.0;
  std::vector<Factor> factors;

  // The basis value without the coefficient.
  double Basis(std::span<const double> x) const;
  // coefficient * factor * factor ..., multiplied left to right as Extra-P does.
  double Evaluate(std::span<const double> x) const;
  // Exponent (poly, log) of `param` in this term; zero when absent.
  CompoundTerm ExponentsOf(int param) const;
};

// Extra-P's default single-parameter building blocks, in Extra-P's order:
// i in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 4/5, 1, 5/4, 4/3, 3/2, 5/3, 7/4, 2, 9/4,
// 7/3, 5/2, 8/3, 11/4, 3} combined with j in {0, 1, 2} (43 terms; with
// `allow_log_terms` off only the polynomial ones). With
// `allow_negative_exponents` the strong-scaling blocks (negative exponents)
// follow.
std::vector<CompoundTerm> DefaultBuildingBlocks(bool allow_log_terms,
                                                bool allow_negative_exponents);

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_TERMS_H_
