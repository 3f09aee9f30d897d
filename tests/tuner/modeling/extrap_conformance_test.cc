// Conformance with Extra-P: on Extra-P's own test cases (shared/testdata/extrap,
// recorded from Extra-P 4.2.5) xdeep's PMNF modelers must select the model that
// Extra-P selects: the same terms with the same exact exponents. Coefficients
// are compared too (~1e-6 relative; Extra-P solves with numpy.linalg.lstsq).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tuner/modeling/pmnf.h"

namespace xdeep::modeling {
namespace {

using nlohmann::json;

std::filesystem::path DataDir() { return XDEEP_EXTRAP_TESTDATA; }

// "3/2", "-1", "0" -> reduced fraction string, so that 2/2 == 1.
std::string CanonicalFraction(const std::string& s) {
  std::vector<std::string> parts = absl::StrSplit(s, '/');
  const int num = std::stoi(parts[0]);
  const int den = parts.size() > 1 ? std::stoi(parts[1]) : 1;
  return Fraction::Make(num, den).ToString();
}

// A term's identity: per parameter "i|j" exponents.
using TermKey = std::vector<std::string>;

struct Expected {
  double constant;
  std::map<TermKey, double> terms;
};

Expected ParseExpected(const json& result, size_t dims) {
  Expected e;
  e.constant = result.at("constant").get<double>();
  for (const json& t : result.at("terms")) {
    TermKey key(dims);
    const json& ex = t.at("exponents_str");
    for (size_t p = 0; p < dims; ++p) {
      key[p] = CanonicalFraction(ex[p][0].get<std::string>()) + "|" +
               CanonicalFraction(ex[p][1].get<std::string>());
    }
    e.terms[key] = t.at("coefficient").get<double>();
  }
  return e;
}

// Extra-P's selected model as an xdeep Model, to compare fitted values.
Model ExtrapModel(const json& result, size_t dims) {
  std::vector<ProductTerm> terms;
  for (const json& t : result.at("terms")) {
    ProductTerm pt{t.at("coefficient").get<double>(), {}};
    const json& ex = t.at("exponents_str");
    for (size_t p = 0; p < dims; ++p) {
      std::vector<std::string> f = absl::StrSplit(ex[p][0].get<std::string>(), '/');
      CompoundTerm c{Fraction::Make(std::stoi(f[0]), f.size() > 1 ? std::stoi(f[1]) : 1),
                     std::stoi(ex[p][1].get<std::string>())};
      if (!c.is_constant()) pt.factors.push_back({static_cast<int>(p), c});
    }
    terms.push_back(pt);
  }
  return Model(static_cast<int>(dims), result.at("constant").get<double>(), terms);
}

// Largest difference of the two models' values at the points, relative to
// the largest measured value.
double MaxRelativeDifference(const Model& a, const Model& b, std::span<const Measurement> pts) {
  double scale = 0.0, diff = 0.0;
  for (const Measurement& m : pts) {
    scale = std::max(scale, std::abs(m.Mean()));
    diff = std::max(diff, std::abs(a.Evaluate(m.coordinate) - b.Evaluate(m.coordinate)));
  }
  return scale > 0 ? diff / scale : diff;
}

// Condition number of the model's least-squares design matrix at the points.
double DesignCondition(const Model& m, std::span<const Measurement> pts) {
  Eigen::MatrixXd a(pts.size(), m.terms().size() + 1);
  for (size_t i = 0; i < pts.size(); ++i) {
    a(i, 0) = 1.0;
    for (size_t j = 0; j < m.terms().size(); ++j)
      a(i, j + 1) = m.terms()[j].Basis(pts[i].coordinate);
  }
  const Eigen::VectorXd s = Eigen::JacobiSVD<Eigen::MatrixXd>(a).singularValues();
  return s(s.size() - 1) > 0 ? s(0) / s(s.size() - 1) : std::numeric_limits<double>::infinity();
}

Expected FromModel(const Model& m) {
  Expected e;
  e.constant = m.constant();
  for (const ProductTerm& t : m.terms()) {
    TermKey key(m.num_params());
    for (int p = 0; p < m.num_params(); ++p) {
      const CompoundTerm c = t.ExponentsOf(p);
      key[p] = c.poly.ToString() + "|" + std::to_string(c.log);
    }
    e.terms[key] = t.coefficient;
  }
  return e;
}

bool Close(double a, double b) {
  const double scale = std::max(std::abs(a), std::abs(b));
  return std::abs(a - b) <= 1e-6 * scale + 1e-9;
}

struct Tally {
  int cases = 0;
  int same_terms = 0;
  int ties = 0;  // other terms, but the same fitted values (a failure all the same)
  int same_values = 0;
  int same_coefficients = 0;
  std::vector<std::string> mismatches;
};

// Runs one case; returns false when its options are not supported.
bool RunCase(const json& c, Tally* tally) {
  ModelerOptions options;
  const json opts = c.value("modeler_options", json::object());
  for (const auto& [key, value] : opts.items()) {
    if (key == "allow_negative_exponents") {
      options.allow_negative_exponents = value.get<bool>();
    } else if (key == "use_crossvalidation") {
      options.use_crossvalidation = value.get<bool>();
    } else {
      return false;
    }
  }
  const size_t dims = c.at("params").size();
  std::vector<Measurement> points;
  for (const json& p : c.at("points")) {
    points.push_back(
        {p.at("coords").get<std::vector<double>>(), p.at("values").get<std::vector<double>>()});
  }
  const Expected want = ParseExpected(c.at("extrap_result"), dims);
  absl::StatusOr<Model> model = Fit(points, options);
  ++tally->cases;
  if (!model.ok()) {
    tally->mismatches.push_back(
        absl::StrCat(c.at("name").get<std::string>(), ": ", model.status().ToString()));
    return true;
  }
  const Expected got = FromModel(*model);
  bool same_terms = got.terms.size() == want.terms.size();
  for (const auto& [key, coefficient] : want.terms) same_terms &= got.terms.contains(key);
  const Model extrap = ExtrapModel(c.at("extrap_result"), dims);
  const double value_diff = MaxRelativeDifference(*model, extrap, points);
  if (!same_terms && value_diff < 1e-9) {
    // Hypotheses spanning the same space on these points (e.g. a + b, a + a*b
    // and b + a*b on a cross of two lines) fit identically in exact
    // arithmetic; Extra-P's choice among them is decided by dgelsd's rounding,
    // which xdeep reproduces by calling dgelsd. Reported apart, still a failure.
    ++tally->ties;
    tally->mismatches.push_back(absl::StrCat(
        "(tie, same fitted values) ", c.at("name").get<std::string>(),
        "\n    extrap: ", c.at("extrap_result").at("function_string").get<std::string>(),
        "\n    xdeep:  ", model->ToString()));
    return true;
  }
  if (!same_terms) {
    tally->mismatches.push_back(absl::StrCat(
        c.at("name").get<std::string>(),
        "\n    extrap: ", c.at("extrap_result").at("function_string").get<std::string>(),
        "\n    xdeep:  ", model->ToString()));
    return true;
  }
  ++tally->same_terms;
  // Two least-squares solvers agree to about cond(A)·eps; past 1e-6 only in
  // fits whose columns are many orders of magnitude apart.
  const double tolerance = std::max(
      1e-6, 100 * std::numeric_limits<double>::epsilon() * DesignCondition(*model, points));
  if (value_diff < tolerance) {
    ++tally->same_values;
  } else {
    tally->mismatches.push_back(absl::StrCat("(fitted values differ by ", value_diff, " > ",
                                             tolerance, ") ", c.at("name").get<std::string>()));
  }
  bool same_coefficients = Close(got.constant, want.constant);
  for (const auto& [key, coefficient] : want.terms) {
    same_coefficients &= Close(got.terms.at(key), coefficient);
  }
  if (same_coefficients) {
    ++tally->same_coefficients;
  } else {
    tally->mismatches.push_back(absl::StrCat(
        "(coefficients) ", c.at("name").get<std::string>(),
        "\n    extrap: ", c.at("extrap_result").at("function_string").get<std::string>(),
        "\n    xdeep:  ", model->ToString()));
  }
  return true;
}

class ExtrapConformance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::filesystem::path cases = DataDir() / "cases.json";
    const std::filesystem::path datafiles = DataDir() / "extrap_datafile_cases.json";
    if (!std::filesystem::exists(cases) || !std::filesystem::exists(datafiles)) return;
    std::ifstream(cases) >> *cases_;
    json d;
    std::ifstream(datafiles) >> d;
    *datafile_cases_ = d.at("cases");
  }

  void SetUp() override {
    if (cases_->is_null()) GTEST_SKIP() << "Extra-P test data not found at " << DataDir();
  }

  // Runs every case of `cases` accepted by `select`; expects all to match.
  static void Check(const json& cases, const std::function<bool(const json&)>& select,
                    const std::string& label, bool expect_all) {
    Tally tally;
    int unsupported = 0;
    for (const json& c : cases) {
      if (!select(c)) continue;
      if (!RunCase(c, &tally)) ++unsupported;
    }
    const double rate = tally.cases ? 100.0 * tally.same_terms / tally.cases : 0.0;
    std::printf(
        "[conformance] %-26s %4d cases: same model %4d (%.1f %%), other model with the same values "
        "%d; of the "
        "same models: same coefficients %d, same fitted values %d%s\n",
        label.c_str(), tally.cases, tally.same_terms, rate, tally.ties, tally.same_coefficients,
        tally.same_values,
        unsupported ? absl::StrCat(", ", unsupported, " unsupported").c_str() : "");
    for (const std::string& m : tally.mismatches) std::printf("  mismatch %s\n", m.c_str());
    EXPECT_GT(tally.cases, 0);
    if (expect_all) {
      EXPECT_EQ(tally.same_terms, tally.cases) << label;
      // Ill-conditioned fits (columns 1e12 apart) move coefficients, not values.
      EXPECT_EQ(tally.same_values, tally.same_terms) << label;
    }
  }

  static json* cases_;
  static json* datafile_cases_;
};

json* ExtrapConformance::cases_ = new json();
json* ExtrapConformance::datafile_cases_ = new json();

bool TestIs(const json& c, std::initializer_list<const char*> names) {
  const std::string t = c.at("test").get<std::string>();
  for (const char* n : names) {
    if (t.rfind(n, 0) == 0) return true;
  }
  return false;
}

TEST_F(ExtrapConformance, SingleParameterDefaults) {
  Check(
      *cases_,
      [](const json& c) {
        return TestIs(c, {"TestBasicModeler.test_modeling"}) && c.at("modeler_options").empty();
      },
      "single-parameter defaults", true);
}

TEST_F(ExtrapConformance, NegativeExponents) {
  Check(
      *cases_,
      [](const json& c) {
        return TestIs(c, {"TestBasicModeler.test_modeling_negative_exponents"});
      },
      "negative exponents", true);
}

TEST_F(ExtrapConformance, CrossValidationOff) {
  Check(
      *cases_, [](const json& c) { return TestIs(c, {"TestBasicModeler.test_compare"}); },
      "cross-validation off", true);
}

TEST_F(ExtrapConformance, MultiParameterDefaults) {
  Check(
      *cases_,
      [](const json& c) {
        return TestIs(c, {"TestSparseModeling", "TestFindBestMeasurements"});
      },
      "multi-parameter defaults", true);
}

TEST_F(ExtrapConformance, TextFilePipeline) {
  Check(
      *cases_,
      [](const json& c) {
        return TestIs(c, {"TestModeling", "TestConsole"});
      },
      "text-file pipeline", true);
}

TEST_F(ExtrapConformance, DataFiles) {
  Check(
      *datafile_cases_, [](const json&) { return true; }, "data files", true);
}

}  // namespace
}  // namespace xdeep::modeling
