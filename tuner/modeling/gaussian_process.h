// Gaussian-process regression for the sampling planner: where is the fitted
// surface least certain? Squared-exponential kernel with one length scale per
// input (ARD); inputs are scaled to [0, 1] over the training range and
// outputs standardised; length scales and noise are chosen by maximising the
// log marginal likelihood over a small grid (deterministic, no optimiser
// state to tune).
#ifndef XDEEP_TUNER_MODELING_GAUSSIAN_PROCESS_H_
#define XDEEP_TUNER_MODELING_GAUSSIAN_PROCESS_H_

#include <Eigen/Dense>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace xdeep::modeling {

class GaussianProcess {
 public:
  struct Prediction {
    double mean = 0.0;
    double variance = 0.0;  // of the latent function, in the caller's units²
  };

  // x: n points of equal dimension; y: n values. Needs n >= 2.
  static absl::StatusOr<GaussianProcess> Fit(const std::vector<std::vector<double>>& x,
                                             const std::vector<double>& y);

  Prediction Predict(std::span<const double> x) const;
  const std::vector<double>& length_scales() const { return length_scales_; }
  double noise_variance() const { return noise_; }
  double log_marginal_likelihood() const { return log_ml_; }

 private:
  double Kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const;
  Eigen::VectorXd Scale(std::span<const double> x) const;

  Eigen::MatrixXd x_;  // scaled training inputs, one per column
  Eigen::VectorXd lo_, span_;
  double y_mean_ = 0.0, y_scale_ = 1.0;
  std::vector<double> length_scales_;
  double noise_ = 1e-2;
  double log_ml_ = 0.0;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;
};

}  // namespace xdeep::modeling

#endif  // XDEEP_TUNER_MODELING_GAUSSIAN_PROCESS_H_
