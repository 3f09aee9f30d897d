// The synthetic cases: the functions, their grids, noise and held-out points.
#include "bench/modeling/synthetic_cases.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace xdeep::modeling::bench {
namespace {

using Fn = std::function<double(std::span<const double>)>;

Factor F(int param, int num, int den, int log) {
  return Factor{param, CompoundTerm{Fraction::Make(num, den), log}};
}

struct Truth {
  std::string text;
  std::vector<std::vector<double>> axes;
  std::optional<Model> pmnf;  // set inside the PMNF space
  Fn outside;                 // set outside it
};

Truth Pmnf(std::string text, std::vector<std::vector<double>> axes, double c0,
           std::vector<ProductTerm> terms) {
  const int dims = static_cast<int>(axes.size());
  return {std::move(text), std::move(axes), Model(dims, c0, std::move(terms)), nullptr};
}

const std::vector<double> kP5 = {2, 4, 8, 16, 32};
const std::vector<double> kP6 = {4, 8, 16, 32, 64, 128};
const std::vector<double> kP7 = {2, 4, 8, 16, 32, 64, 128};
const std::vector<double> kLin6 = {8, 16, 24, 32, 40, 48};
const std::vector<double> kQ5 = {1, 2, 4, 8, 16};
const std::vector<double> kQ6 = {2, 4, 8, 16, 32, 64};

std::vector<Truth> Functions() {
  std::vector<Truth> t;
  // One parameter, PMNF space (one term, as Extra-P's single-parameter space).
  const std::vector<std::vector<double>> one[] = {{kP5}, {kP6}, {kP7}, {kLin6}};
  int i = 0;
  auto axes1 = [&] { return one[i++ % 4]; };
  t.push_back(Pmnf("2 + 3*log2(p)", axes1(), 2, {{3, {F(0, 0, 1, 1)}}}));
  t.push_back(Pmnf("3 + 0.5*p*log2(p)", axes1(), 3, {{0.5, {F(0, 1, 1, 1)}}}));
  t.push_back(Pmnf("10 + 2*p^(3/2)", axes1(), 10, {{2, {F(0, 3, 2, 0)}}}));
  t.push_back(Pmnf("1 + 0.1*p", axes1(), 1, {{0.1, {F(0, 1, 1, 0)}}}));
  t.push_back(Pmnf("5 + 0.2*p^2", axes1(), 5, {{0.2, {F(0, 2, 1, 0)}}}));
  t.push_back(Pmnf("4 + p^(1/2)*log2(p)", axes1(), 4, {{1, {F(0, 1, 2, 1)}}}));
  t.push_back(Pmnf("1 + 0.05*p^3", axes1(), 1, {{0.05, {F(0, 3, 1, 0)}}}));
  t.push_back(Pmnf("2 + 0.7*p^(2/3)", axes1(), 2, {{0.7, {F(0, 2, 3, 0)}}}));
  t.push_back(Pmnf("1 + 0.5*log2(p)^2", axes1(), 1, {{0.5, {F(0, 0, 1, 2)}}}));
  t.push_back(Pmnf("8 + 0.3*p^(1/3)", axes1(), 8, {{0.3, {F(0, 1, 3, 0)}}}));
  t.push_back(Pmnf("0.5 + 0.01*p^2*log2(p)", axes1(), 0.5, {{0.01, {F(0, 2, 1, 1)}}}));
  t.push_back(Pmnf("20 + 1.5*p^(3/4)", axes1(), 20, {{1.5, {F(0, 3, 4, 0)}}}));
  t.push_back(Pmnf("3 + 0.02*p^(3/2)*log2(p)^2", axes1(), 3, {{0.02, {F(0, 3, 2, 2)}}}));
  t.push_back(Pmnf("6 + 0.4*p^(1/4)", axes1(), 6, {{0.4, {F(0, 1, 4, 0)}}}));
  // Two parameters: products, sums and mixed forms.
  const std::vector<std::vector<double>> a5 = {kP5, kQ5}, a6 = {kP6, kQ6};
  t.push_back(Pmnf("3 + 0.5*p*log2(p)*q^(1/2)", a5, 3, {{0.5, {F(0, 1, 1, 1), F(1, 1, 2, 0)}}}));
  t.push_back(Pmnf("2 + 0.05*p^(1/2)*q", a6, 2, {{0.05, {F(0, 1, 2, 0), F(1, 1, 1, 0)}}}));
  t.push_back(Pmnf("1 + 0.3*log2(p)*q^(1/2)", a5, 1, {{0.3, {F(0, 0, 1, 1), F(1, 1, 2, 0)}}}));
  t.push_back(
      Pmnf("5 + 0.01*p*log2(p) + 0.2*q", a6, 5, {{0.01, {F(0, 1, 1, 1)}}, {0.2, {F(1, 1, 1, 0)}}}));
  t.push_back(Pmnf("0.5 + 0.02*p*q^(3/4)", a5, 0.5, {{0.02, {F(0, 1, 1, 0), F(1, 3, 4, 0)}}}));
  t.push_back(Pmnf("10 + 2*p + 0.5*q^2", a6, 10, {{2, {F(0, 1, 1, 0)}}, {0.5, {F(1, 2, 1, 0)}}}));
  t.push_back(Pmnf("1 + 0.1*p + 0.05*p*q", a5, 1,
                   {{0.1, {F(0, 1, 1, 0)}}, {0.05, {F(0, 1, 1, 0), F(1, 1, 1, 0)}}}));
  t.push_back(Pmnf("4 + 0.2*log2(q) + 0.1*p*log2(q)", a6, 4,
                   {{0.2, {F(1, 0, 1, 1)}}, {0.1, {F(0, 1, 1, 0), F(1, 0, 1, 1)}}}));
  t.push_back(Pmnf("2 + 0.03*p^(3/2)*log2(q)", a6, 2, {{0.03, {F(0, 3, 2, 0), F(1, 0, 1, 1)}}}));
  t.push_back(Pmnf("1 + 0.4*p^(1/3) + 0.02*q*log2(q)", a5, 1,
                   {{0.4, {F(0, 1, 3, 0)}}, {0.02, {F(1, 1, 1, 1)}}}));
  // Three parameters, 5 values each.
  const std::vector<std::vector<double>> a3 = {kP5, kQ5, {2, 4, 8, 16, 32}};
  t.push_back(
      Pmnf("2 + 0.01*p*q*r^(1/2)", a3, 2, {{0.01, {F(0, 1, 1, 0), F(1, 1, 1, 0), F(2, 1, 2, 0)}}}));
  t.push_back(Pmnf("1 + 0.1*p*log2(q) + 0.5*r", a3, 1,
                   {{0.1, {F(0, 1, 1, 0), F(1, 0, 1, 1)}}, {0.5, {F(2, 1, 1, 0)}}}));
  t.push_back(Pmnf("3 + 0.2*p^(1/2) + 0.05*q*r", a3, 3,
                   {{0.2, {F(0, 1, 2, 0)}}, {0.05, {F(1, 1, 1, 0), F(2, 1, 1, 0)}}}));
  t.push_back(Pmnf("5 + 0.001*p^2*q*log2(r)", a3, 5,
                   {{0.001, {F(0, 2, 1, 0), F(1, 1, 1, 0), F(2, 0, 1, 1)}}}));
  // Outside the PMNF space.
  t.push_back(
      {"1 + 10*p/(p + 16) (saturation)", {kP6}, std::nullopt, [](std::span<const double> x) {
         return 1 + 10 * x[0] / (x[0] + 16);
       }});
  t.push_back({"2 + 0.1*p, slope 0.4 past p = 16 (piecewise)",
               {kP7},
               std::nullopt,
               [](std::span<const double> x) {
                 return x[0] <= 16 ? 2 + 0.1 * x[0] : 3.6 + 0.4 * (x[0] - 16);
               }});
  t.push_back({"2 + exp(0.15*log2(p)^2) (exponential in log)",
               {kP6},
               std::nullopt,
               [](std::span<const double> x) {
                 const double l = std::log2(x[0]);
                 return 2 + std::exp(0.15 * l * l);
               }});
  t.push_back(
      {"1 + 0.5*log2(p) + 0.01*p (two terms)", {kP7}, std::nullopt, [](std::span<const double> x) {
         return 1 + 0.5 * std::log2(x[0]) + 0.01 * x[0];
       }});
  t.push_back(
      {"1 + 5*p/(p + 8)*q^(1/2) (saturation in p)", a5, std::nullopt,
       [](std::span<const double> x) { return 1 + 5 * x[0] / (x[0] + 8) * std::sqrt(x[1]); }});
  t.push_back({"(2 + 0.05*p)*(q, slope 4x past q = 16) (piecewise in q)", a6, std::nullopt,
               [](std::span<const double> x) {
                 const double q = x[1] <= 16 ? x[1] : 16 + 4 * (x[1] - 16);
                 return (2 + 0.05 * x[0]) * q;
               }});
  return t;
}

}  // namespace

std::string SyntheticCase::NoiseLabel() const {
  if (kind == NoiseKind::kNone) return "0 %";
  return absl::StrCat(std::lround(noise * 100), " % ",
                      kind == NoiseKind::kMultiplicative ? "mult" : "add");
}

std::vector<SyntheticCase> SyntheticCases(uint64_t seed) {
  struct Condition {
    double level;
    NoiseKind kind;
  };
  std::vector<Condition> conditions = {{0.0, NoiseKind::kNone}};
  for (double level : {0.01, 0.02, 0.05, 0.10}) {
    conditions.push_back({level, NoiseKind::kMultiplicative});
    conditions.push_back({level, NoiseKind::kAdditive});
  }
  const std::vector<std::string> names = {"p", "q", "r"};
  std::vector<SyntheticCase> out;
  for (const Truth& t : Functions()) {
    const Fn f =
        t.pmnf ? Fn([m = *t.pmnf](std::span<const double> x) { return m.Evaluate(x); }) : t.outside;
    const size_t dims = t.axes.size();
    // Grid points, every combination of the axes' values.
    std::vector<std::vector<double>> grid = {{}};
    for (const auto& axis : t.axes) {
      std::vector<std::vector<double>> next;
      for (const auto& prefix : grid) {
        for (double v : axis) {
          next.push_back(prefix);
          next.back().push_back(v);
        }
      }
      grid = std::move(next);
    }
    // Held out: every parameter at 8-64x its largest value, and each alone.
    std::vector<double> largest;
    for (const auto& axis : t.axes) largest.push_back(*std::max_element(axis.begin(), axis.end()));
    std::vector<std::vector<double>> held_out;
    for (double factor : {8.0, 16.0, 32.0, 64.0}) {
      std::vector<double> all = largest;
      for (double& v : all) v *= factor;
      held_out.push_back(all);
      if (dims == 1) continue;
      for (size_t p = 0; p < dims; ++p) {
        std::vector<double> one = largest;
        one[p] *= factor;
        held_out.push_back(one);
      }
    }
    for (const Condition& cond : conditions) {
      SyntheticCase c;
      c.id = static_cast<int>(out.size());
      c.function = t.text;
      c.params.assign(names.begin(), names.begin() + static_cast<long>(dims));
      if (t.pmnf) c.truth = StructureKey(*t.pmnf);
      c.noise = cond.level;
      c.kind = cond.kind;
      double f_min = std::numeric_limits<double>::infinity();
      for (const auto& x : grid) f_min = std::min(f_min, f(x));
      std::mt19937_64 rng(seed + static_cast<uint64_t>(c.id));
      std::uniform_real_distribution<double> u(-cond.level, cond.level);
      for (const auto& x : grid) {
        Measurement m{x, {}};
        const double v = f(x);
        for (int r = 0; r < 5; ++r) {
          switch (cond.kind) {
            case NoiseKind::kNone:
              m.values.push_back(v);
              break;
            case NoiseKind::kMultiplicative:
              m.values.push_back(v * (1 + u(rng)));
              break;
            case NoiseKind::kAdditive:
              m.values.push_back(v + u(rng) * f_min);
              break;
          }
        }
        c.points.push_back(std::move(m));
      }
      c.held_out = held_out;
      for (const auto& x : held_out) c.held_out_truth.push_back(f(x));
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string StructureKey(const std::vector<std::vector<std::vector<double>>>& terms) {
  std::vector<std::string> keys;
  for (const auto& term : terms) {
    std::vector<std::vector<double>> factors = term;
    std::sort(factors.begin(), factors.end());
    std::vector<std::string> parts;
    for (const auto& f : factors) {
      if (f.size() != 3 || (f[1] == 0 && f[2] == 0)) continue;
      parts.push_back(absl::StrFormat("x%d^%.4f*log^%d", static_cast<int>(f[0]), f[1] + 0.0,
                                      static_cast<int>(std::lround(f[2]))));
    }
    if (!parts.empty()) keys.push_back(absl::StrJoin(parts, "*"));
  }
  if (keys.empty()) return "const";
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return absl::StrJoin(keys, " + ");
}

std::string StructureKey(const Model& model) {
  std::vector<std::vector<std::vector<double>>> terms;
  for (const ProductTerm& t : model.terms()) {
    std::vector<std::vector<double>> factors;
    for (const Factor& f : t.factors) {
      factors.push_back(
          {static_cast<double>(f.param), f.term.poly.value(), static_cast<double>(f.term.log)});
    }
    terms.push_back(std::move(factors));
  }
  return StructureKey(terms);
}

double HeldOutError(const SyntheticCase& c, const std::vector<double>& predicted) {
  if (predicted.size() != c.held_out_truth.size()) return std::numeric_limits<double>::infinity();
  double sum = 0.0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    if (!std::isfinite(predicted[i])) return std::numeric_limits<double>::infinity();
    sum += std::abs(predicted[i] - c.held_out_truth[i]) / std::abs(c.held_out_truth[i]);
  }
  return 100.0 * sum / static_cast<double>(predicted.size());
}

}  // namespace xdeep::modeling::bench
