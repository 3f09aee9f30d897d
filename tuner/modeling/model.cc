// Model evaluation, statistics (in-sample, leave-one-out, covariance) and
// Extra-P style printing.
#include "tuner/modeling/model.h"

#include <Eigen/Dense>
#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "tuner/modeling/numerics.h"

namespace xdeep::modeling {

double Measurement::Mean() const { return internal::NumpyMean(values); }

Model::Model(int num_params, double constant, std::vector<ProductTerm> terms)
    : num_params_(num_params), constant_(constant), terms_(std::move(terms)) {
  for (ProductTerm& t : terms_) {
    std::sort(t.factors.begin(), t.factors.end(),
              [](const Factor& a, const Factor& b) { return a.param < b.param; });
  }
}

double Model::Evaluate(std::span<const double> x) const {
  double v = constant_;
  for (const ProductTerm& t : terms_) v += t.Evaluate(x);
  return v;
}

double Model::Uncertainty(std::span<const double> x) const {
  const double sigma = quality_.residual_stddev;
  const size_t k = terms_.size() + 1;
  if (std::isnan(sigma) || covariance_.size() != k * k) {
    return std::numeric_limits<double>::infinity();
  }
  std::vector<double> a(k);
  a[0] = 1.0;
  for (size_t i = 0; i < terms_.size(); ++i) a[i + 1] = terms_[i].Basis(x);
  double q = 0.0;
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < k; ++j) q += a[i] * covariance_[i * k + j] * a[j];
  }
  q = std::max(0.0, q);
  if (relative_) {
    // Noise σ·|f(x)| of a new measurement plus the coefficients' part.
    const double f = Evaluate(x);
    return sigma * std::sqrt(q + f * f);
  }
  return sigma * std::sqrt(1.0 + q);
}

PredictionInterval Model::Predict(std::span<const double> x, double confidence) const {
  PredictionInterval out;
  out.mean = Evaluate(x);
  out.stddev = Uncertainty(x);
  const double dof = quality_.num_points - quality_.num_coefficients;
  const double t = internal::TQuantile(0.5 + confidence / 2, dof);
  out.lower = out.mean - t * out.stddev;
  out.upper = out.mean + t * out.stddev;
  return out;
}

namespace {

// Shortest round-trip form, like Python's repr(float).
std::string FormatNumber(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return absl::StrCat(v);
  return std::string(buf, end);
}

constexpr const char* kDefaultNames[] = {"p", "q", "r", "s", "t", "u", "v", "w", "x",
                                         "y", "z", "a", "b", "c", "d", "e", "f", "g"};

}  // namespace

std::string Model::ToString(std::span<const std::string> names) const {
  std::string out = FormatNumber(constant_);
  for (const ProductTerm& t : terms_) {
    absl::StrAppend(&out, " + ", FormatNumber(t.coefficient));
    for (const Factor& f : t.factors) {
      std::string name;
      if (static_cast<size_t>(f.param) < names.size()) {
        name = names[f.param];
      } else if (f.param < static_cast<int>(std::size(kDefaultNames))) {
        name = kDefaultNames[f.param];
      } else {
        name = absl::StrCat("x", f.param);
      }
      absl::StrAppend(&out, " * ", f.term.ToString(name));
    }
  }
  return out;
}

void Model::ComputeStatistics(std::span<const Measurement> points) {
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  const Eigen::Index k = static_cast<Eigen::Index>(terms_.size()) + 1;
  quality_.num_points = static_cast<int>(n);
  quality_.num_coefficients = static_cast<int>(k);
  if (n == 0) return;
  // Rows weighted by 1/|y| for relative errors (weighted least squares).
  Eigen::MatrixXd a(n, k);
  Eigen::VectorXd y(n), residual(n);
  double rss = 0.0, weighted_rss = 0.0, smape = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const Measurement& m = points[i];
    y(i) = m.Mean();
    const double w = relative_ && y(i) != 0 ? 1.0 / std::abs(y(i)) : 1.0;
    a(i, 0) = w;
    for (Eigen::Index j = 1; j < k; ++j) a(i, j) = w * terms_[j - 1].Basis(m.coordinate);
    const double predicted = Evaluate(m.coordinate);
    residual(i) = y(i) - predicted;
    rss += residual(i) * residual(i);
    weighted_rss += w * w * residual(i) * residual(i);
    const double abssum = std::abs(y(i)) + std::abs(predicted);
    if (abssum != 0.0) smape += std::abs(residual(i)) / abssum * 2;
  }
  quality_.in_sample_rss = rss;
  quality_.in_sample_smape = smape / static_cast<double>(n) * 100;
  quality_.residual_stddev = n > k ? std::sqrt(weighted_rss / static_cast<double>(n - k)) : kNaN;

  // Covariance (AᵀA)⁺ = V S⁻² Vᵀ and the hat diagonal Σ U², which gives the
  // exact leave-one-out residual e_i / (1 - h_ii) without n refits (also for
  // weighted rows: the weight cancels).
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd& s = svd.singularValues();
  const double cutoff = std::numeric_limits<double>::epsilon() *
                        static_cast<double>(std::max(n, k)) * (s.size() ? s(0) : 0.0);
  Eigen::MatrixXd cov = Eigen::MatrixXd::Zero(k, k);
  Eigen::VectorXd hat = Eigen::VectorXd::Zero(n);
  for (Eigen::Index j = 0; j < s.size(); ++j) {
    if (s(j) <= cutoff) continue;
    const Eigen::VectorXd v = svd.matrixV().col(j);
    cov += (v * v.transpose()) / (s(j) * s(j));
    hat += svd.matrixU().col(j).cwiseAbs2();
  }
  covariance_.assign(cov.data(), cov.data() + k * k);  // symmetric: layout does not matter
  if (n > k) {
    double loo_rss = 0.0, loo_smape = 0.0;
    bool ok = true;
    for (Eigen::Index i = 0; i < n && ok; ++i) {
      const double leverage = 1.0 - hat(i);
      if (leverage < 1e-12) {
        ok = false;
        break;
      }
      const double e = residual(i) / leverage;
      loo_rss += e * e;
      const double predicted = y(i) - e;
      const double abssum = std::abs(y(i)) + std::abs(predicted);
      if (abssum != 0.0) loo_smape += std::abs(e) / abssum * 2;
    }
    if (ok) {
      quality_.loo_rss = loo_rss;
      quality_.loo_smape = loo_smape / static_cast<double>(n) * 100;
    }
  }
}

std::vector<double> RelativeErrors(const Model& model, std::span<const Measurement> points) {
  std::vector<double> out;
  out.reserve(points.size());
  for (const Measurement& m : points) {
    const double y = m.Mean();
    out.push_back(std::abs(model.Evaluate(m.coordinate) - y) / std::abs(y));
  }
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  }
  return m;
}

}  // namespace xdeep::modeling
