// The accuracy bench's synthetic cases (bench/modeling/synthetic_cases.h) as
// a CI check: the generic fit recovers every noise-free PMNF case exactly,
// and the default modeler (FitSelected) is never more than 2 points worse
// than Extra-P's rules on any case, no worse by median and
// 95th percentile per noise condition, and better by one of them from 2 %
// noise on. The full comparison with Extra-P itself is
// bench/modeling/run_accuracy.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "bench/modeling/synthetic_cases.h"
#include "tuner/modeling/generic_expression.h"
#include "tuner/modeling/model_selection.h"
#include "tuner/modeling/pmnf.h"

namespace xdeep::modeling {
namespace {

using bench::SyntheticCase;

double Error(const SyntheticCase& c, const Model& m) {
  std::vector<double> predicted;
  for (const auto& x : c.held_out) predicted.push_back(m.Evaluate(x));
  return bench::HeldOutError(c, predicted);
}

// The accuracy bench's percentile: the ceil(q·n)-th smallest.
double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size(), std::max<size_t>(i, 1)) - 1];
}

TEST(SyntheticAccuracy, GenericFitRecoversEveryNoiseFreePmnfCase) {
  int checked = 0;
  for (const SyntheticCase& c : bench::SyntheticCases()) {
    if (c.kind != bench::NoiseKind::kNone || c.truth.empty()) continue;
    absl::StatusOr<GenericFit> fit = FitGenericExpression(c.points);
    ASSERT_TRUE(fit.ok()) << c.function << ": " << fit.status();
    EXPECT_EQ(bench::StructureKey(fit->model), c.truth)
        << c.function << " -> " << fit->model.ToString(c.params);
    EXPECT_LT(Error(c, fit->model), 0.01) << c.function << " -> " << fit->model.ToString(c.params);
    ++checked;
  }
  EXPECT_EQ(checked, 28);
}

TEST(SyntheticAccuracy, DefaultNeverMuchWorseThanExtraPRules) {
  std::map<std::string, std::vector<double>> selected, extrap;
  for (const SyntheticCase& c : bench::SyntheticCases()) {
    absl::StatusOr<Model> reference = Fit(c.points, ModelerOptions::ExtraP());
    absl::StatusOr<SelectedModel> chosen = FitSelected(c.points);
    ASSERT_TRUE(reference.ok() && chosen.ok()) << c.function;
    const double e_ref = Error(c, *reference), e_sel = Error(c, chosen->model);
    EXPECT_LE(e_sel, e_ref + 2.0) << c.function << ", " << c.NoiseLabel() << ": "
                                  << chosen->Explain(c.params) << " vs "
                                  << reference->ToString(c.params);
    selected[c.NoiseLabel()].push_back(e_sel);
    extrap[c.NoiseLabel()].push_back(e_ref);
  }
  // Issue #28 item 2 on the development seed's 306 cases: by
  // median and 95th percentile at least as good at every noise level, and
  // strictly better by one of them from 2 % noise on, multiplicative and
  // additive (the full 306 cases and a fresh seed: run_accuracy.sh).
  for (const auto& [label, errors] : selected) {
    const double med = Percentile(errors, 0.5), ref_med = Percentile(extrap[label], 0.5);
    const double p95 = Percentile(errors, 0.95), ref_p95 = Percentile(extrap[label], 0.95);
    EXPECT_LE(med, ref_med + 1e-9) << label;
    EXPECT_LE(p95, ref_p95 + 1e-9) << label;
    if (label != "0 %" && label.rfind("1 %", 0) != 0) {
      EXPECT_TRUE(med < ref_med - 1e-9 || p95 < ref_p95 - 1e-9)
          << label << ": median " << med << " vs " << ref_med << ", p95 " << p95 << " vs "
          << ref_p95;
    }
  }
}

// Seed 20261127's case #178 (10 + 2·p + 0.5·q², 10 % multiplicative): the
// joint search's p^(3/4)·log2 p out-scores Extra-P's p^(3/4)·log2(p)² by far,
// but the hypotheses within the evidence threshold of it disagree one
// doubling past the grid more than the two do, so Extra-P's model stays
// (the change extrapolated 6.76 % off at 8-64x against Extra-P's 3.40 %).
TEST(SyntheticAccuracy, NearEqualHypothesesThatDisagreeKeepExtraP) {
  const std::vector<SyntheticCase> cases = bench::SyntheticCases(20261127);
  ASSERT_GT(cases.size(), 178u);
  const SyntheticCase& c = cases[178];
  ASSERT_EQ(c.function, "10 + 2*p + 0.5*q^2");
  absl::StatusOr<Model> reference = Fit(c.points, ModelerOptions::ExtraP());
  absl::StatusOr<SelectedModel> chosen = FitSelected(c.points);
  ASSERT_TRUE(reference.ok() && chosen.ok());
  EXPECT_EQ(chosen->modeler, "Extra-P") << chosen->Explain(c.params);
  EXPECT_LE(Error(c, chosen->model), Error(c, *reference) + 2.0) << chosen->Explain(c.params);
}

// The default against Extra-P's rules on the other development seeds at 5 and
// 10 % noise, where every loss of > 1 pp so far was (the per-level medians
// tie on some seeds; bench/modeling/README.md).
TEST(SyntheticAccuracy, DefaultNeverMuchWorseOnAnyDevelopmentSeed) {
  for (uint64_t seed : {5000u, 20261127u, 777000u, 424242u, 8675309u}) {
    for (const SyntheticCase& c : bench::SyntheticCases(seed)) {
      if (c.noise < 0.05) continue;
      absl::StatusOr<Model> reference = Fit(c.points, ModelerOptions::ExtraP());
      absl::StatusOr<SelectedModel> chosen = FitSelected(c.points);
      ASSERT_TRUE(reference.ok() && chosen.ok()) << c.function;
      EXPECT_LE(Error(c, chosen->model), Error(c, *reference) + 2.0)
          << "seed " << seed << " #" << c.id << " " << c.function << ", " << c.NoiseLabel() << ": "
          << chosen->Explain(c.params) << " vs " << reference->ToString(c.params);
    }
  }
}

// Seed 777000's case #25 (10 + 2·p^(3/2), 10 % multiplicative): the joint
// search's best, p^(5/4)·log2 p, and p^(3/2) score within 2 of each other and
// both beat Extra-P's p^(4/3)·log2 p by > 30; the best extrapolated 24.6 %
// off at 8-64x against Extra-P's 2.8 %. Of the two, p^(3/2) moves Extra-P's
// prediction one doubling past the grid least, and is taken.
TEST(SyntheticAccuracy, NearEqualHypothesesTakeTheSmallestChange) {
  const std::vector<SyntheticCase> cases = bench::SyntheticCases(777000);
  ASSERT_GT(cases.size(), 25u);
  const SyntheticCase& c = cases[25];
  ASSERT_EQ(c.function, "10 + 2*p^(3/2)");
  absl::StatusOr<Model> reference = Fit(c.points, ModelerOptions::ExtraP());
  absl::StatusOr<SelectedModel> chosen = FitSelected(c.points);
  ASSERT_TRUE(reference.ok() && chosen.ok());
  EXPECT_EQ(bench::StructureKey(chosen->model), c.truth) << chosen->Explain(c.params);
  EXPECT_LE(Error(c, chosen->model), Error(c, *reference) + 2.0) << chosen->Explain(c.params);
}

// Seed 8675309's case #295 (1 + 5·p/(p + 8)·q^(1/2), saturation outside the
// PMNF space, 10 % multiplicative): the joint search's best out-scores
// Extra-P's model by 15 but misses the grid beyond the noise (χ² 34.2 for 22
// degrees of freedom) and cross-validates only 13 % lower, so Extra-P's
// model stays (the change extrapolated 32.9 % off against 30.2 %).
TEST(SyntheticAccuracy, MisfitOutsideThePmnfSpaceNeedsAClearlyLowerCvError) {
  const std::vector<SyntheticCase> cases = bench::SyntheticCases(8675309);
  ASSERT_GT(cases.size(), 295u);
  const SyntheticCase& c = cases[295];
  ASSERT_EQ(c.function.rfind("1 + 5*p/(p + 8)*q^(1/2)", 0), 0u) << c.function;
  absl::StatusOr<Model> reference = Fit(c.points, ModelerOptions::ExtraP());
  absl::StatusOr<SelectedModel> chosen = FitSelected(c.points);
  ASSERT_TRUE(reference.ok() && chosen.ok());
  EXPECT_EQ(chosen->modeler, "Extra-P") << chosen->Explain(c.params);
  EXPECT_LE(Error(c, chosen->model), Error(c, *reference) + 2.0) << chosen->Explain(c.params);
}

TEST(SyntheticAccuracy, SelectedModelExplainsItself) {
  for (const SyntheticCase& c : bench::SyntheticCases()) {
    if (c.function != "3 + 0.5*p*log2(p)" || c.NoiseLabel() != "5 % mult") continue;
    absl::StatusOr<SelectedModel> s = FitSelected(c.points);
    ASSERT_TRUE(s.ok());
    const std::string text = s->Explain(c.params);
    EXPECT_NE(text.find(s->model.ToString(c.params)), std::string::npos) << text;
    EXPECT_NE(text.find("modeler " + s->modeler), std::string::npos) << text;
    EXPECT_NE(text.find("cross-validated error"), std::string::npos) << text;
    EXPECT_TRUE(std::isfinite(s->cv_error)) << text;
    return;
  }
  FAIL() << "case not found";
}

TEST(SyntheticAccuracy, TooFewValuesKeepExtraPAndSaySo) {
  const std::vector<double> x = {2, 4, 8}, y = {1, 2, 3};
  absl::StatusOr<SelectedModel> s = FitCurveSelected(x, y);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->modeler, "Extra-P");
  EXPECT_TRUE(std::isnan(s->cv_error));
  EXPECT_NE(s->Explain().find("too few values"), std::string::npos);
  EXPECT_FALSE(FitCurveSelected(x, std::vector<double>{1, 2}).ok());
}

}  // namespace
}  // namespace xdeep::modeling
