// NumPy-compatible summation and least squares; Student-t quantiles.
#include "tuner/modeling/numerics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

// LAPACK (Fortran ABI): minimum-norm least squares by divide-and-conquer SVD.
extern "C" void dgelsd_(const int* m, const int* n, const int* nrhs, double* a, const int* lda,
                        double* b, const int* ldb, double* s, const double* rcond, int* rank,
                        double* work, const int* lwork, int* iwork, int* info);

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
  // numpy.linalg.lstsq is LAPACK's dgelsd; call the same driver with the same
  // arguments. Another SVD (Eigen's Jacobi, once used here) reaches the same
  // minimum only to cond(A)·eps, and on ill-conditioned designs (a column of
  // n ~ 1e4 next to log2(p) ~ 5) that is enough to reorder hypotheses that
  // fit identically in exact arithmetic; Extra-P's choice among them is
  // dgelsd's, e.g. a + a·b over a + b on a cross of two lines.
  const int m = static_cast<int>(a.rows());
  const int n = static_cast<int>(a.cols());
  const int nrhs = 1;
  const int ldb = std::max(m, n);
  // NumPy: rcond None -> eps·max(m, n); a negative rcond makes LAPACK use eps.
  double r = std::numeric_limits<double>::epsilon() * static_cast<double>(std::max(m, n));
  if (rcond.has_value()) r = *rcond;
  std::vector<double> am(a.data(), a.data() + a.size());  // column-major, as LAPACK wants
  std::vector<double> bm(static_cast<size_t>(ldb), 0.0);
  std::copy(b.data(), b.data() + m, bm.begin());
  std::vector<double> s(static_cast<size_t>(std::min(m, n)));
  int rank = 0, info = 0, lwork = -1;
  double work_size = 0.0;
  int iwork_size = 0;
  dgelsd_(&m, &n, &nrhs, am.data(), &m, bm.data(), &ldb, s.data(), &r, &rank, &work_size, &lwork,
          &iwork_size, &info);
  if (info != 0) return out;
  lwork = static_cast<int>(work_size);
  std::vector<double> work(static_cast<size_t>(std::max(lwork, 1)));
  std::vector<int> iwork(static_cast<size_t>(std::max(iwork_size, 1)));
  dgelsd_(&m, &n, &nrhs, am.data(), &m, bm.data(), &ldb, s.data(), &r, &rank, work.data(), &lwork,
          iwork.data(), &info);
  if (info != 0) return out;  // the SVD did not converge (numpy: LinAlgError)
  out.rank = rank;
  out.x = Eigen::Map<const Eigen::VectorXd>(bm.data(), n);
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
