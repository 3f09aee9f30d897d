// Multiplicative correction of analytical predictions, fitted on real runs.
#include "tuner/modeling/scaling_correction.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/status/status.h"

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
  const bool enough = dims > 0 && static_cast<int>(points.size()) >= options.min_points_for_model;
  if (enough) {
    absl::StatusOr<Model> model = modeling::Fit(points, options.modeler);
    if (!model.ok()) return model.status();
    out.model_ = *std::move(model);
  } else {
    out.model_ = Model(static_cast<int>(dims), sum / count, {});
    out.model_.ComputeStatistics(points);
  }
  return out;
}

double ScalingCorrection::Factor(std::span<const double> parameters) const {
  if (identity_) return 1.0;
  const double f = model_.Evaluate(parameters);
  if (!std::isfinite(f)) return 1.0;
  return std::clamp(f, min_factor_, max_factor_);
}

}  // namespace xdeep::modeling
