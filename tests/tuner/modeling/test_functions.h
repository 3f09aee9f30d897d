// Helpers for the modeling tests: sample known functions with seeded noise.
#ifndef XDEEP_TESTS_TUNER_MODELING_TEST_FUNCTIONS_H_
#define XDEEP_TESTS_TUNER_MODELING_TEST_FUNCTIONS_H_

#include <functional>
#include <random>
#include <span>
#include <vector>

#include "tuner/modeling/model.h"

namespace xdeep::modeling::testing {

using TrueFunction = std::function<double(std::span<const double>)>;

// `repetitions` values per point, each f(x)·(1 + u), u uniform in
// [-noise, noise] (Extra-P's noise model in its own tests).
inline Measurement Sample(const TrueFunction& f, std::vector<double> x, double noise,
                          int repetitions, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-noise, noise);
  Measurement m{std::move(x), {}};
  for (int r = 0; r < repetitions; ++r) m.values.push_back(f(m.coordinate) * (1.0 + u(rng)));
  return m;
}

// Every combination of the axes' values.
inline std::vector<std::vector<double>> Grid(const std::vector<std::vector<double>>& axes) {
  std::vector<std::vector<double>> out = {{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<double>> next;
    for (const auto& prefix : out) {
      for (double v : axis) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    }
    out = std::move(next);
  }
  return out;
}

inline std::vector<Measurement> SampleGrid(const TrueFunction& f,
                                           const std::vector<std::vector<double>>& axes,
                                           double noise, int repetitions, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Measurement> out;
  for (auto& x : Grid(axes)) out.push_back(Sample(f, x, noise, repetitions, rng));
  return out;
}

}  // namespace xdeep::modeling::testing

#endif  // XDEEP_TESTS_TUNER_MODELING_TEST_FUNCTIONS_H_
