// Sampling planner: cheapest-first lines, then Gaussian-process variance per
// cost within the probe budget.
#include "tuner/modeling/sampling_planner.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tuner/modeling/gaussian_process.h"

namespace xdeep::modeling {

absl::StatusOr<SamplingPlanner> SamplingPlanner::Create(std::vector<std::vector<double>> axes,
                                                        CostFunction cost, PlannerOptions options) {
  if (axes.empty()) return absl::InvalidArgumentError("planner needs at least one parameter");
  if (!cost) return absl::InvalidArgumentError("planner needs a cost function");
  if (options.line_points < 2) return absl::InvalidArgumentError("line_points must be >= 2");
  if (options.averaged_models < 1)
    return absl::InvalidArgumentError("averaged_models must be >= 1");
  for (auto& axis : axes) {
    std::sort(axis.begin(), axis.end());
    axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
    if (axis.empty()) return absl::InvalidArgumentError("empty parameter axis");
    for (double v : axis) {
      // log2 coordinates for the GP and Extra-P's log terms.
      if (!(v >= 1.0)) return absl::InvalidArgumentError("parameter values must be >= 1");
    }
  }
  SamplingPlanner planner;
  planner.axes_ = std::move(axes);
  planner.cost_ = std::move(cost);
  planner.options_ = options;
  // Every combination of axis values.
  const size_t dims = planner.axes_.size();
  std::vector<size_t> idx(dims, 0);
  while (true) {
    Point p(dims);
    for (size_t d = 0; d < dims; ++d) p[d] = planner.axes_[d][idx[d]];
    const double c = planner.Cost(p);
    if (!(c > 0) || !std::isfinite(c)) {
      return absl::InvalidArgumentError("probe costs must be positive and finite");
    }
    planner.full_grid_cost_ += c;
    planner.candidates_.push_back(std::move(p));
    size_t d = 0;
    while (d < dims && ++idx[d] == planner.axes_[d].size()) idx[d++] = 0;
    if (d == dims) break;
  }
  // Lines through the cheapest point, each the cheapest values along its axis.
  const Point base = *std::min_element(
      planner.candidates_.begin(), planner.candidates_.end(),
      [&](const Point& a, const Point& b) { return planner.Cost(a) < planner.Cost(b); });
  std::set<Point> seen;
  planner.lines_.push_back(base);
  seen.insert(base);
  for (size_t d = 0; d < dims; ++d) {
    std::vector<Point> line;
    for (double v : planner.axes_[d]) {
      Point p = base;
      p[d] = v;
      line.push_back(std::move(p));
    }
    std::stable_sort(line.begin(), line.end(), [&](const Point& a, const Point& b) {
      return planner.Cost(a) < planner.Cost(b);
    });
    line.resize(std::min<size_t>(line.size(), options.line_points));
    for (Point& p : line) {
      if (seen.insert(p).second) planner.lines_.push_back(std::move(p));
    }
  }
  return planner;
}

absl::StatusOr<std::optional<Point>> SamplingPlanner::Next(std::span<const Measurement> measured,
                                                           double spent) const {
  std::set<Point> done;
  for (const Measurement& m : measured) done.insert(m.coordinate);
  const double left = budget() - spent;
  for (const Point& p : lines_) {
    if (!done.contains(p) && Cost(p) <= left) return std::optional<Point>(p);
  }
  if (measured.size() < 2) return std::optional<Point>();
  // GP on log2 coordinates and log values: scaling curves are close to
  // power laws there, so a stationary kernel fits them.
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const Measurement& m : measured) {
    const double v = m.Mean();
    if (!(v > 0)) return absl::InvalidArgumentError("planner needs positive measured values");
    std::vector<double> lx;
    for (double c : m.coordinate) lx.push_back(std::log2(c));
    x.push_back(std::move(lx));
    y.push_back(std::log(v));
  }
  absl::StatusOr<GaussianProcess> gp = GaussianProcess::Fit(x, y);
  if (!gp.ok()) return gp.status();
  // Committee of the best PMNF hypotheses, weighted by their BIC (Akaike-style
  // weights exp(-ΔBIC/2)): where they disagree the model is not pinned down,
  // typically at the large scales that extrapolation needs and that a GP
  // variance in log space undervalues.
  std::vector<Model> committee;
  std::vector<double> weights;
  if (options_.committee_size > 1) {
    absl::StatusOr<std::vector<Model>> alternatives =
        FitAlternatives(measured, options_.committee_size, options_.modeler);
    if (alternatives.ok()) {
      committee = *std::move(alternatives);
      const double best_score = committee[0].quality().selection_score;
      for (const Model& m : committee) {
        const double delta = m.quality().selection_score - best_score;
        weights.push_back(std::isfinite(delta) ? std::exp(-delta / 2) : 0.0);
      }
    }
  }
  std::optional<Point> best;
  double best_score = -1.0;
  for (const Point& p : candidates_) {
    const double c = Cost(p);
    if (done.contains(p) || c > left) continue;
    std::vector<double> lx;
    for (double v : p) lx.push_back(std::log2(v));
    double disagreement = 0.0;
    if (committee.size() > 1) {
      // Weighted variance of the committee's log predictions.
      double sw = 0.0, mean = 0.0, sq = 0.0;
      for (size_t i = 0; i < committee.size(); ++i) {
        const double v = std::log(std::max(committee[i].Evaluate(p), 1e-300));
        sw += weights[i];
        mean += weights[i] * v;
        sq += weights[i] * v * v;
      }
      if (sw > 0) {
        mean /= sw;
        disagreement = std::max(0.0, sq / sw - mean * mean);
      }
    }
    const double score =
        (gp->Predict(lx).variance + disagreement) / std::pow(c, options_.cost_exponent);
    if (score > best_score) {
      best_score = score;
      best = p;
    }
  }
  return best;
}

absl::StatusOr<PlanReport> SamplingPlanner::Run(const ProbeFunction& probe) const {
  PlanReport report;
  report.full_grid_cost = full_grid_cost_;
  const std::set<Point> line_set(lines_.begin(), lines_.end());
  while (true) {
    absl::StatusOr<std::optional<Point>> next = Next(report.measurements, report.cost);
    if (!next.ok()) return next.status();
    if (!next->has_value()) break;
    const Point& p = **next;
    absl::StatusOr<Measurement> m = probe(p);
    if (!m.ok()) return m.status();
    m->coordinate = p;
    report.measurements.push_back(*std::move(m));
    report.cost += Cost(p);
    (line_set.contains(p) ? report.line_probes : report.uncertainty_probes)++;
  }
  report.cost_fraction = report.cost / full_grid_cost_;
  if (report.measurements.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("budget ", budget(), " buys no probe at all"));
  }
  absl::StatusOr<Model> model =
      options_.modeler.joint_exponent_search && options_.averaged_models > 1
          ? FitAveraged(report.measurements, options_.averaged_models, options_.modeler)
          : Fit(report.measurements, options_.modeler);
  if (!model.ok()) return model.status();
  report.model = *std::move(model);
  return report;
}

absl::StatusOr<PlanAccuracy> CompareWithFullGrid(const Model& plan_model,
                                                 std::span<const Measurement> full_grid,
                                                 std::span<const Measurement> held_out,
                                                 const ModelerOptions& options) {
  if (held_out.empty()) return absl::InvalidArgumentError("no held-out points");
  absl::StatusOr<Model> full = Fit(full_grid, options);
  if (!full.ok()) return full.status();
  PlanAccuracy out;
  out.plan_median_error = Median(RelativeErrors(plan_model, held_out));
  out.full_grid_median_error = Median(RelativeErrors(*full, held_out));
  out.difference_pp = 100 * (out.plan_median_error - out.full_grid_median_error);
  out.full_grid_model = *std::move(full);
  return out;
}

}  // namespace xdeep::modeling
