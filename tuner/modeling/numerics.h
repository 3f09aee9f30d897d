// Numerics shared by the modelers: numpy-compatible summation and least
// squares, so that selections agree with Extra-P's (NumPy) down to ties.
#ifndef XDEEP_TUNER_MODELING_NUMERICS_H_
#define XDEEP_TUNER_MODELING_NUMERICS_H_

#include <Eigen/Dense>
#include <optional>
#include <span>

namespace xdeep::modeling::internal {

// numpy.sum's pairwise summation (8-way unrolled blocks of up to 128).
double PairwiseSum(std::span<const double> v);
inline double NumpyMean(std::span<const double> v) {
  return PairwiseSum(v) / static_cast<double>(v.size());
}

struct LstsqResult {
  Eigen::VectorXd x;
  int rank = 0;
};

// numpy.linalg.lstsq: minimum-norm least squares by LAPACK's dgelsd, the
// driver NumPy calls; singular values <= rcond * s_max count as zero. rcond
// unset means NumPy's default eps * max(rows, cols); a negative rcond means
// machine epsilon. rank 0 and x = 0 if the SVD does not converge.
LstsqResult Lstsq(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                  std::optional<double> rcond = std::nullopt);

// Two-sided Student-t quantile, e.g. TQuantile(0.975, dof).
double TQuantile(double p, double dof);

}  // namespace xdeep::modeling::internal

#endif  // XDEEP_TUNER_MODELING_NUMERICS_H_
