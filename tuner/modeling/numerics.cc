// NumPy-compatible summation and least squares; Student-t quantiles.
#include "tuner/modeling/numerics.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace xdeep::modeling::internal {

double PairwiseSum(std::span<const double> v) {
  const size_t n = v.size();
  if (n < 8) {
    double res = 0.0;
    for (double x : v) res += x;
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = v[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += v[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += v[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return PairwiseSum(v.subspan(0, n2)) + PairwiseSum(v.subspan(n2));
}

LstsqResult Lstsq(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, std::optional<double> rcond) {
  LstsqResult out;
  out.x = Eigen::VectorXd::Zero(a.cols());
  if (a.rows() == 0 || a.cols() == 0) return out;
  const double eps = std::numeric_limits<double>::epsilon();
  double threshold = eps * static_cast<double>(std::max(a.rows(), a.cols()));
  if (rcond.has_value()) threshold = *rcond < 0 ? eps : *rcond;
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::VectorXd& s = svd.singularValues();
  if (s.size() == 0 || !(s(0) > 0.0)) return out;
  const double cutoff = threshold * s(0);
  Eigen::VectorXd utb = svd.matrixU().transpose() * b;
  for (Eigen::Index i = 0; i < s.size(); ++i) {
    if (s(i) > cutoff) {
      utb(i) /= s(i);
      ++out.rank;
    } else {
      utb(i) = 0.0;
    }
  }
  out.x = svd.matrixV() * utb;
  return out;
}

namespace {

// Acklam's rational approximation of the standard normal quantile, refined by
// one Halley step; accurate to ~1e-15.
double NormalQuantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  if (p <= 0.0) return -std::numeric_limits<double>::infinity();
  if (p >= 1.0) return std::numeric_limits<double>::infinity();
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - 0.02425) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::numbers::sqrt2) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

}  // namespace

double TQuantile(double p, double dof) {
  if (!(dof > 0)) return std::numeric_limits<double>::infinity();
  if (dof == 1) return std::tan(std::numbers::pi * (p - 0.5));
  if (dof == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
  // Cornish-Fisher expansion around the normal quantile (Abramowitz & Stegun
  // 26.7.5); good to a few 1e-3 for dof >= 3, which is all an interval needs.
  const double z = NormalQuantile(p);
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  const double g1 = (z3 + z) / 4;
  const double g2 = (5 * z5 + 16 * z3 + 3 * z) / 96;
  const double g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384;
  const double g4 = (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / 92160;
  return z + g1 / dof + g2 / (dof * dof) + g3 / (dof * dof * dof) + g4 / (dof * dof * dof * dof);
}

}  // namespace xdeep::modeling::internal
