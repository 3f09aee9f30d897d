// Multiplicative correction of analytical predictions, fitted on real runs.
#include "tuner/modeling/scaling_correction.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "Eigen/Dense"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace xdeep::modeling {

absl::StatusOr<ScalingCorrection> ScalingCorrection::Fit(std::span<const Outcome> outcomes,
                                                         const CorrectionOptions& options) {
  if (outcomes.empty()) return absl::InvalidArgumentError("no outcomes to learn from");
  const size_t dims = outcomes[0].parameters.size();
  // Repeated runs at the same parameters become repetitions of one point.
  std::map<std::vector<double>, std::vector<double>> ratios;
  for (const Outcome& o : outcomes) {
    if (o.parameters.size() != dims) {
      return absl::InvalidArgumentError("outcomes with different parameter counts");
    }
    if (!(o.predicted > 0) || !(o.measured > 0) || !std::isfinite(o.predicted) ||
        !std::isfinite(o.measured)) {
      return absl::InvalidArgumentError("predicted and measured times must be positive");
    }
    ratios[o.parameters].push_back(o.measured / o.predicted);
  }
  ScalingCorrection out;
  out.identity_ = false;
  std::vector<Measurement> points;
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0, sum = 0.0;
  int count = 0;
  for (auto& [params, r] : ratios) {
    for (double v : r) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      ++count;
    }
    points.push_back({params, r});
  }
  out.min_factor_ = lo / options.clamp;
  out.max_factor_ = hi * options.clamp;
  out.points_ = static_cast<int>(points.size());
  out.min_points_ = options.min_points_for_model;
  const bool enough = dims > 0 && static_cast<int>(points.size()) >= options.min_points_for_model;
  if (enough) {
    absl::StatusOr<Model> model = modeling::Fit(points, options.modeler);
    if (!model.ok()) return model.status();
    out.model_ = *std::move(model);
  } else {
    out.model_ = Model(static_cast<int>(dims), sum / count, {});
    out.model_.ComputeStatistics(points);
    // Gaussian-process interpolation of log ratios (see the header).
    out.local_ = true;
    out.length_ = options.length_doublings;
    const int n = static_cast<int>(points.size());
    Eigen::VectorXd y(n);
    double log_sum = 0;
    for (int i = 0; i < n; ++i) {
      double l = 0;
      for (double v : points[i].values) l += std::log(v);
      y(i) = l / points[i].values.size();
      log_sum += y(i);
      std::vector<double> x;
      for (double p : points[i].coordinate) x.push_back(std::log2(std::max(p, 1e-12)));
      out.x_.push_back(std::move(x));
    }
    out.mean_ = log_sum / (n + std::max(0.0, options.prior_runs));
    Eigen::MatrixXd k(n, n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) k(i, j) = out.Kernel(out.x_[i], out.x_[j]) + (i == j ? 1e-9 : 0);
    }
    const Eigen::VectorXd alpha = k.ldlt().solve((y.array() - out.mean_).matrix());
    out.alpha_.assign(alpha.data(), alpha.data() + n);
  }
  return out;
}

double ScalingCorrection::Kernel(std::span<const double> a, std::span<const double> b) const {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-d2 / (2 * length_ * length_));
}

double ScalingCorrection::Factor(std::span<const double> parameters) const {
  if (identity_) return 1.0;
  double f = 0;
  if (local_) {
    std::vector<double> x;
    for (double p : parameters) x.push_back(std::log2(std::max(p, 1e-12)));
    double log_f = mean_;
    for (size_t i = 0; i < x_.size(); ++i) log_f += alpha_[i] * Kernel(x, x_[i]);
    f = std::exp(log_f);
  } else {
    f = model_.Evaluate(parameters);
  }
  if (!std::isfinite(f)) return 1.0;
  return std::clamp(f, min_factor_, max_factor_);
}

std::string ScalingCorrection::Describe(std::span<const std::string> names) const {
  if (identity_) return "none";
  if (local_) {
    return absl::StrFormat(
        "measured/predicted interpolated over %d run point(s) by a Gaussian process (a model "
        "needs %d)",
        points_, min_points_);
  }
  return absl::StrFormat("measured/predicted = %s (modeler robust, leave-one-out error %.2g %%)",
                         model_.ToString(names), model_.quality().loo_smape);
}

std::string_view StepComponentName(StepComponent c) {
  switch (c) {
    case StepComponent::kKernel:
      return "GPU kernel time";
    case StepComponent::kHost:
      return "host launch time";
    case StepComponent::kStep:
      break;
  }
  return "step time";
}

absl::StatusOr<ComponentCorrection> ComponentCorrection::Fit(std::span<const Outcome> outcomes,
                                                             const CorrectionOptions& options) {
  if (outcomes.empty()) return absl::InvalidArgumentError("no outcomes to learn from");
  std::map<std::pair<std::string, StepComponent>, std::vector<Outcome>> groups;
  for (const Outcome& o : outcomes) groups[{o.mode, o.component}].push_back(o);
  ComponentCorrection out;
  for (const auto& [key, group] : groups) {
    absl::StatusOr<ScalingCorrection> fit = ScalingCorrection::Fit(group, options);
    if (!fit.ok()) return fit.status();
    out.fits_.emplace(key, *std::move(fit));
  }
  return out;
}

double ComponentCorrection::Factor(const std::string& mode, StepComponent component,
                                   std::span<const double> parameters) const {
  auto it = fits_.find({mode, component});
  return it == fits_.end() ? 1.0 : it->second.Factor(parameters);
}

std::string ComponentCorrection::Describe(std::span<const std::string> names) const {
  if (fits_.empty()) return "none";
  std::vector<std::string> parts;
  for (const auto& [key, fit] : fits_) {
    parts.push_back(absl::StrFormat("%s [%s of %s steps]", fit.Describe(names),
                                    StepComponentName(key.second),
                                    key.first.empty() ? "all" : key.first));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace xdeep::modeling
