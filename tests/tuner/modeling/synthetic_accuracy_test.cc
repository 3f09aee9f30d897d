// The accuracy bench's synthetic cases (bench/modeling/synthetic_cases.h) as
// a CI check: the generic fit recovers every noise-free PMNF case exactly,
// and the default modeler (FitSelected) is never more than 2 points worse
// than Extra-P's rules on any case of 1-2 parameters, nor worse by median per
// noise condition. The full comparison with Extra-P itself is
// bench/modeling/run_accuracy.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

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

double LowerMedian(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
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
    if (c.params.size() > 2) continue;  // 3 parameters: the bench (slower)
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
  for (const auto& [label, errors] : selected) {
    EXPECT_LE(LowerMedian(errors), LowerMedian(extrap[label]) + 1e-9) << label;
  }
  // The robust model won somewhere under multiplicative noise, and helped.
  double sum_selected = 0.0, sum_extrap = 0.0;
  for (const char* label : {"2 % mult", "5 % mult", "10 % mult"}) {
    for (double e : selected[label]) sum_selected += e;
    for (double e : extrap[label]) sum_extrap += e;
  }
  EXPECT_LT(sum_selected, sum_extrap);
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
