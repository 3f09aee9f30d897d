// PMNF terms: exact exponents, evaluation, Extra-P style printing, and the
// default building blocks.
#include "tuner/modeling/terms.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace xdeep::modeling {

Fraction Fraction::Make(int num, int den) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  const int g = std::gcd(num, den);
  if (g > 1) {
    num /= g;
    den /= g;
  }
  if (num == 0) den = 1;
  return Fraction{num, den};
}

std::string Fraction::ToString() const {
  if (den == 1) return absl::StrCat(num);
  return absl::StrCat(num, "/", den);
}

double CompoundTerm::Evaluate(double x) const {
  // Same operations as Extra-P (x ** float, log2(x) ** float) so that selections
  // that hinge on the last bits of a fit agree.
  double v = 1.0;
  if (!poly.is_zero()) v *= std::pow(x, poly.value());
  if (log != 0) v *= std::pow(std::log2(x), static_cast<double>(log));
  return v;
}

std::string CompoundTerm::ToString(std::string_view name) const {
  std::string out;
  if (!poly.is_zero()) out += std::string(name) + "^(" + poly.ToString() + ")";
  if (log != 0) {
    if (!out.empty()) out += " * ";
    out += "log2(" + std::string(name) + ")^(" + std::to_string(log) + ")";
  }
  return out;
}

double ProductTerm::Basis(std::span<const double> x) const {
  double v = 1.0;
  for (const Factor& f : factors) v *= f.term.Evaluate(x[f.param]);
  return v;
}

double ProductTerm::Evaluate(std::span<const double> x) const {
  double v = coefficient;
  for (const Factor& f : factors) v *= f.term.Evaluate(x[f.param]);
  return v;
}

CompoundTerm ProductTerm::ExponentsOf(int param) const {
  for (const Factor& f : factors) {
    if (f.param == param) return f.term;
  }
  return CompoundTerm{};
}

namespace {

struct Block {
  int a, b, c;  // x^(a/b) * log2(x)^c
};

// Extra-P 4.2's default exponent table, in its order (ties keep the earlier).
constexpr Block kLogBlocks[] = {{0, 1, 1}, {0, 1, 2}, {1, 4, 0}, {1, 3, 0},  {1, 4, 1}, {1, 3, 1},
                                {1, 4, 2}, {1, 3, 2}, {1, 2, 0}, {1, 2, 1},  {1, 2, 2}, {2, 3, 0},
                                {3, 4, 0}, {2, 3, 1}, {3, 4, 1}, {4, 5, 0},  {2, 3, 2}, {3, 4, 2},
                                {1, 1, 0}, {1, 1, 1}, {1, 1, 2}, {5, 4, 0},  {5, 4, 1}, {4, 3, 0},
                                {4, 3, 1}, {3, 2, 0}, {3, 2, 1}, {3, 2, 2},  {5, 3, 0}, {7, 4, 0},
                                {2, 1, 0}, {2, 1, 1}, {2, 1, 2}, {9, 4, 0},  {7, 3, 0}, {5, 2, 0},
                                {5, 2, 1}, {5, 2, 2}, {8, 3, 0}, {11, 4, 0}, {3, 1, 0}, {3, 1, 1}};
constexpr Block kNegativeLogBlocks[] = {
    {0, 1, -1},  {0, 1, -2},  {-1, 4, -1}, {-1, 3, -1}, {-1, 4, -2}, {-1, 3, -2},
    {-1, 2, -1}, {-1, 2, -2}, {-2, 3, -1}, {-3, 4, -1}, {-2, 3, -2}, {-3, 4, -2},
    {-1, 1, -1}, {-1, 1, -2}, {-5, 4, -1}, {-4, 3, -1}, {-3, 2, -1}, {-3, 2, -2},
    {-2, 1, -1}, {-2, 1, -2}, {-5, 2, -1}, {-5, 2, -2}, {-3, 1, -1}};
constexpr Block kPolyBlocks[] = {{1, 4, 0}, {1, 3, 0}, {1, 2, 0},  {2, 3, 0}, {3, 4, 0},
                                 {4, 5, 0}, {1, 1, 0}, {5, 4, 0},  {4, 3, 0}, {3, 2, 0},
                                 {5, 3, 0}, {7, 4, 0}, {2, 1, 0},  {9, 4, 0}, {7, 3, 0},
                                 {5, 2, 0}, {8, 3, 0}, {11, 4, 0}, {3, 1, 0}};

void Append(std::span<const Block> blocks, int sign, std::vector<CompoundTerm>* out) {
  for (const Block& b : blocks) {
    out->push_back(CompoundTerm{Fraction::Make(sign * b.a, b.b), b.c});
  }
}

}  // namespace

std::vector<CompoundTerm> DefaultBuildingBlocks(bool allow_log_terms,
                                                bool allow_negative_exponents) {
  std::vector<CompoundTerm> out;
  if (allow_log_terms) {
    Append(kLogBlocks, 1, &out);
    if (allow_negative_exponents) Append(kNegativeLogBlocks, 1, &out);
  } else {
    Append(kPolyBlocks, 1, &out);
  }
  if (allow_negative_exponents) Append(kPolyBlocks, -1, &out);
  return out;
}

}  // namespace xdeep::modeling
