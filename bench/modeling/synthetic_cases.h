// Synthetic scaling cases for judging modelers by extrapolation: known
// functions of 1-3 parameters, sampled at 5-7 values per parameter with 5
// seeded repetitions under no noise or 1 / 2 / 5 / 10 % noise (multiplicative:
// f·(1 + u); additive: f + u·f_min, u uniform in [-level, level]), judged at
// held-out points 8-64x beyond the largest measured value of each parameter.
// Most functions lie in the PMNF space of Extra-P's default building blocks
// (the true model can be recovered exactly); a few lie outside it (saturation,
// piecewise, exponential in log2, a two-term single-parameter sum).
#ifndef XDEEP_BENCH_MODELING_SYNTHETIC_CASES_H_
#define XDEEP_BENCH_MODELING_SYNTHETIC_CASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tuner/modeling/model.h"

namespace xdeep::modeling::bench {

enum class NoiseKind { kNone, kMultiplicative, kAdditive };

struct SyntheticCase {
  int id = 0;
  std::string function;  // the true function, readable
  std::vector<std::string> params;
  // StructureKey of the true model; empty outside the PMNF space.
  std::string truth;
  double noise = 0.0;  // level, e.g. 0.05
  NoiseKind kind = NoiseKind::kNone;
  std::vector<Measurement> points;
  std::vector<std::vector<double>> held_out;
  std::vector<double> held_out_truth;

  std::string NoiseLabel() const;  // "0 %", "5 % mult", "5 % add"
};

// The noise seed the modelers were developed on (bench/modeling/README.md);
// other seeds give fresh draws of the same cases for checking.
inline constexpr uint64_t kDevelopmentSeed = 1000;

// Every case (34 functions x 9 noise conditions), deterministic for a seed:
// case i draws its noise from mt19937_64(seed + i).
std::vector<SyntheticCase> SyntheticCases(uint64_t seed = kDevelopmentSeed);

// The term structure without coefficients, canonical: factors
// "x<param>^<poly>*log^<log>" joined by "*", terms sorted and joined by " + ";
// "const" for a constant model. Exponents printed with 4 decimals.
std::string StructureKey(const Model& model);
// The same from (param, poly, log) factors per term.
std::string StructureKey(const std::vector<std::vector<std::vector<double>>>& terms);

// Mean relative error (%) of `predicted` against the case's truth at its
// held-out points; infinite for non-finite predictions.
double HeldOutError(const SyntheticCase& c, const std::vector<double>& predicted);

}  // namespace xdeep::modeling::bench

#endif  // XDEEP_BENCH_MODELING_SYNTHETIC_CASES_H_
