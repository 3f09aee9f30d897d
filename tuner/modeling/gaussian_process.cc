// Gaussian-process regression: ARD squared-exponential kernel, grid-searched
// hyperparameters, Cholesky solves.
#include "tuner/modeling/gaussian_process.h"

#include <cmath>
#include <numbers>

#include "absl/status/status.h"

namespace xdeep::modeling {
namespace {

constexpr double kLengthScales[] = {0.1, 0.2, 0.4, 0.8, 1.6, 3.2};
constexpr double kNoiseVariances[] = {1e-4, 1e-3, 1e-2, 1e-1};

}  // namespace

double GaussianProcess::Kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const {
  double r2 = 0.0;
  for (Eigen::Index d = 0; d < a.size(); ++d) {
    const double z = (a(d) - b(d)) / length_scales_[d];
    r2 += z * z;
  }
  return std::exp(-0.5 * r2);
}

Eigen::VectorXd GaussianProcess::Scale(std::span<const double> x) const {
  Eigen::VectorXd out(lo_.size());
  for (Eigen::Index d = 0; d < lo_.size(); ++d) out(d) = (x[d] - lo_(d)) / span_(d);
  return out;
}

absl::StatusOr<GaussianProcess> GaussianProcess::Fit(const std::vector<std::vector<double>>& x,
                                                     const std::vector<double>& y) {
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  if (n < 2 || y.size() != x.size()) {
    return absl::InvalidArgumentError("a Gaussian process needs >= 2 points with values");
  }
  const Eigen::Index dims = static_cast<Eigen::Index>(x[0].size());
  if (dims < 1 || dims > 4) {
    return absl::InvalidArgumentError("Gaussian process supports 1 to 4 inputs");
  }
  GaussianProcess gp;
  gp.lo_ = Eigen::VectorXd::Constant(dims, std::numeric_limits<double>::infinity());
  Eigen::VectorXd hi = -gp.lo_;
  for (const auto& p : x) {
    if (static_cast<Eigen::Index>(p.size()) != dims) {
      return absl::InvalidArgumentError("points of unequal dimension");
    }
    for (Eigen::Index d = 0; d < dims; ++d) {
      gp.lo_(d) = std::min(gp.lo_(d), p[d]);
      hi(d) = std::max(hi(d), p[d]);
    }
  }
  gp.span_ = (hi - gp.lo_).cwiseMax(1e-12);
  gp.x_.resize(dims, n);
  for (Eigen::Index i = 0; i < n; ++i) gp.x_.col(i) = gp.Scale(x[i]);
  Eigen::VectorXd ys = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
  gp.y_mean_ = ys.mean();
  gp.y_scale_ = std::sqrt((ys.array() - gp.y_mean_).square().mean());
  if (!(gp.y_scale_ > 0)) gp.y_scale_ = 1.0;
  const Eigen::VectorXd yn = (ys.array() - gp.y_mean_) / gp.y_scale_;

  // Every combination of per-input length scales and noise levels.
  const int per_dim = static_cast<int>(std::size(kLengthScales));
  int combos = 1;
  for (Eigen::Index d = 0; d < dims; ++d) combos *= per_dim;
  double best = -std::numeric_limits<double>::infinity();
  std::vector<double> best_scales;
  double best_noise = kNoiseVariances[0];
  Eigen::MatrixXd k(n, n);
  for (int c = 0; c < combos; ++c) {
    gp.length_scales_.assign(dims, 0.0);
    for (Eigen::Index d = 0, r = c; d < dims; ++d, r /= per_dim) {
      gp.length_scales_[d] = kLengthScales[r % per_dim];
    }
    for (Eigen::Index i = 0; i < n; ++i) {
      for (Eigen::Index j = 0; j <= i; ++j)
        k(i, j) = k(j, i) = gp.Kernel(gp.x_.col(i), gp.x_.col(j));
    }
    for (double noise : kNoiseVariances) {
      Eigen::MatrixXd kn = k;
      kn.diagonal().array() += noise;
      Eigen::LLT<Eigen::MatrixXd> llt(kn);
      if (llt.info() != Eigen::Success) continue;
      const Eigen::VectorXd alpha = llt.solve(yn);
      const double log_det = 2 * llt.matrixLLT().diagonal().array().log().sum();
      const double lml = -0.5 * yn.dot(alpha) - 0.5 * log_det -
                         0.5 * static_cast<double>(n) * std::log(2 * std::numbers::pi);
      if (lml > best) {
        best = lml;
        best_scales = gp.length_scales_;
        best_noise = noise;
      }
    }
  }
  if (best_scales.empty()) return absl::InternalError("no hyperparameters gave a valid kernel");
  gp.length_scales_ = best_scales;
  gp.noise_ = best_noise;
  gp.log_ml_ = best;
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j <= i; ++j) k(i, j) = k(j, i) = gp.Kernel(gp.x_.col(i), gp.x_.col(j));
  }
  k.diagonal().array() += gp.noise_;
  gp.llt_.compute(k);
  gp.alpha_ = gp.llt_.solve(yn);
  return gp;
}

GaussianProcess::Prediction GaussianProcess::Predict(std::span<const double> x) const {
  const Eigen::VectorXd xs = Scale(x);
  Eigen::VectorXd ks(x_.cols());
  for (Eigen::Index i = 0; i < x_.cols(); ++i) ks(i) = Kernel(xs, x_.col(i));
  Prediction p;
  p.mean = ks.dot(alpha_) * y_scale_ + y_mean_;
  const Eigen::VectorXd v = llt_.matrixL().solve(ks);
  p.variance = std::max(0.0, 1.0 - v.squaredNorm()) * y_scale_ * y_scale_;
  return p;
}

}  // namespace xdeep::modeling
