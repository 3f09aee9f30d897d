// Sampling planner: cheapest-first lines, then Gaussian-process variance per
// cost within the probe budget.
#include "tuner/modeling/sampling_planner.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tuner/modeling/gaussian_process.h"

#include <Eigen/Dense>
#include <cstdlib>

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

namespace {

// Expected variance of the averaged model's log prediction at `targets`
// after one more probe batch at each candidate, for the BIC-weighted
// hypotheses `models` (see PlannerOptions::acquisition). Returns the
// reduction per candidate (>= 0).
struct Hypothesis {
  double weight = 0.0;
  std::vector<ProductTerm> basis;  // constant first (no factors)
  Eigen::MatrixXd information_inverse;  // (Σ n_i h_i h_iᵀ)⁻¹, relative basis
  const Model* model = nullptr;
};

Eigen::VectorXd RelativeBasis(const Hypothesis& h, std::span<const double> x, double value) {
  Eigen::VectorXd g(h.basis.size());
  for (size_t j = 0; j < h.basis.size(); ++j) g(j) = h.basis[j].Basis(x) / value;
  return g;
}

}  // namespace

std::vector<double> ExpectedVarianceReduction(std::span<const Model> models,
                                              std::span<const Measurement> measured,
                                              std::span<const Point> candidates,
                                              std::span<const Point> targets) {
  std::vector<double> out(candidates.size(), 0.0);
  if (models.empty() || targets.empty()) return out;
  // Per-value relative noise variance, pooled over the repetitions; batch =
  // the repetitions one probe returns.
  double pooled = 0.0, dof = 0.0;
  size_t batch = std::numeric_limits<size_t>::max();
  for (const Measurement& m : measured) {
    batch = std::min(batch, m.values.size());
    if (m.values.size() < 2) continue;
    const double mean = m.Mean();
    for (double v : m.values) pooled += (v - mean) * (v - mean) / (mean * mean);
    dof += static_cast<double>(m.values.size() - 1);
  }
  if (batch == 0 || batch == std::numeric_limits<size_t>::max()) batch = 1;
  double sigma2 = dof > 0 ? pooled / dof : NAN;
  if (!(sigma2 > 0)) {
    const double r = models[0].quality().residual_stddev;
    sigma2 = std::isfinite(r) && r > 0 ? r * r * static_cast<double>(batch) : 1e-4;
  }
  const double batch_variance = sigma2 / static_cast<double>(batch);
  // Hypotheses with their weights and information matrices.
  std::vector<Hypothesis> hs;
  const double best = models[0].quality().selection_score;
  double wsum = 0.0;
  for (const Model& m : models) {
    const double delta = m.quality().selection_score - best;
    Hypothesis h;
    h.weight = std::isfinite(delta) ? std::exp(-delta / 2) : 0.0;
    if (h.weight < 1e-6) continue;
    h.model = &m;
    h.basis.push_back(ProductTerm{1.0, {}});
    for (const ProductTerm& t : m.terms()) h.basis.push_back(ProductTerm{1.0, t.factors});
    const Eigen::Index k = static_cast<Eigen::Index>(h.basis.size());
    Eigen::MatrixXd info = Eigen::MatrixXd::Zero(k, k);
    for (const Measurement& pt : measured) {
      const Eigen::VectorXd g = RelativeBasis(h, pt.coordinate, pt.Mean());
      info += (static_cast<double>(pt.values.size()) / static_cast<double>(batch)) * g * g.transpose();
    }
    // A little ridge keeps nearly collinear bases invertible.
    info += 1e-9 * info.diagonal().maxCoeff() * Eigen::MatrixXd::Identity(k, k);
    h.information_inverse = info.inverse();
    wsum += h.weight;
    hs.push_back(std::move(h));
  }
  for (Hypothesis& h : hs) h.weight /= wsum;
  const size_t K = hs.size();
  // Log predictions and relative bases at the targets.
  std::vector<std::vector<double>> log_t(K);
  std::vector<std::vector<Eigen::VectorXd>> g_t(K);
  for (size_t k = 0; k < K; ++k) {
    for (const Point& t : targets) {
      const double v = std::max(hs[k].model->Evaluate(t), 1e-300);
      log_t[k].push_back(std::log(v));
      g_t[k].push_back(RelativeBasis(hs[k], t, v));
    }
  }
  auto total_variance = [&](std::span<const double> w,
                            const std::vector<std::vector<double>>& within) {
    double total = 0.0;
    for (size_t t = 0; t < targets.size(); ++t) {
      double mean = 0.0, sq = 0.0, inside = 0.0;
      for (size_t k = 0; k < K; ++k) {
        mean += w[k] * log_t[k][t];
        sq += w[k] * log_t[k][t] * log_t[k][t];
        inside += w[k] * within[k][t];
      }
      total += inside + std::max(0.0, sq - mean * mean);
    }
    return total;
  };
  std::vector<double> w0(K);
  std::vector<std::vector<double>> within0(K, std::vector<double>(targets.size()));
  for (size_t k = 0; k < K; ++k) {
    w0[k] = hs[k].weight;
    for (size_t t = 0; t < targets.size(); ++t)
      within0[k][t] = batch_variance * g_t[k][t].dot(hs[k].information_inverse * g_t[k][t]);
  }
  const double now = total_variance(w0, within0);
  for (size_t c = 0; c < candidates.size(); ++c) {
    const Point& x = candidates[c];
    std::vector<double> log_x(K), leverage(K);
    std::vector<std::vector<double>> within(K, std::vector<double>(targets.size()));
    for (size_t k = 0; k < K; ++k) {
      const double v = std::max(hs[k].model->Evaluate(x), 1e-300);
      log_x[k] = std::log(v);
      const Eigen::VectorXd gx = RelativeBasis(hs[k], x, v);
      const Eigen::VectorXd ax = hs[k].information_inverse * gx;
      leverage[k] = gx.dot(ax);
      for (size_t t = 0; t < targets.size(); ++t) {
        const double cross = g_t[k][t].dot(ax);
        within[k][t] = within0[k][t] - batch_variance * cross * cross / (1 + leverage[k]);
      }
    }
    // Each hypothesis in turn as the truth: the probe returns its value, the
    // weights follow the likelihood of that value under every hypothesis.
    double expected = 0.0;
    std::vector<double> w(K);
    for (size_t truth = 0; truth < K; ++truth) {
      double sum = 0.0;
      for (size_t j = 0; j < K; ++j) {
        const double s2 = batch_variance * (1 + leverage[j]);
        const double d = log_x[j] - log_x[truth];
        w[j] = w0[j] * std::exp(-d * d / (2 * s2));
        sum += w[j];
      }
      for (double& v : w) v /= sum;
      expected += w0[truth] * total_variance(w, within);
    }
    out[c] = std::max(0.0, now - expected);
  }
  return out;
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
  if (const char* e = std::getenv("XDEEP_PLAN_ACQ"); e != nullptr && std::atoi(e) == 1) {
    absl::StatusOr<std::vector<Model>> models =
        FitAlternatives(measured, options_.averaged_models, options_.modeler);
    if (!models.ok()) return models.status();
    std::vector<Point> targets = options_.targets;
    if (targets.empty()) {
      // One doubling past the largest value of each parameter, across the
      // other parameters' values.
      for (size_t d = 0; d < axes_.size(); ++d) {
        for (const Point& p : candidates_) {
          if (p[d] != axes_[d].back()) continue;
          Point t = p;
          t[d] *= 2;
          targets.push_back(std::move(t));
        }
      }
    }
    std::vector<Point> affordable;
    const bool replicate = std::getenv("XDEEP_PLAN_NOREP") == nullptr;
    for (const Point& p : candidates_) {
      if (Cost(p) <= left && (replicate || !done.contains(p))) affordable.push_back(p);
    }
    if (affordable.empty()) return std::optional<Point>();
    const std::vector<double> gain =
        ExpectedVarianceReduction(*models, measured, affordable, targets);
    const double alpha = std::getenv("XDEEP_PLAN_ALPHA") ? std::atof(std::getenv("XDEEP_PLAN_ALPHA")) : 1.0;
    size_t pick = 0;
    double best_score = -1;
    for (size_t i = 0; i < affordable.size(); ++i) {
      const double score = gain[i] / std::pow(Cost(affordable[i]), alpha);
      if (score > best_score) {
        best_score = score;
        pick = i;
      }
    }
    return std::optional<Point>(affordable[pick]);
  }
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
    auto same = std::find_if(report.measurements.begin(), report.measurements.end(),
                             [&](const Measurement& e) { return e.coordinate == p; });
    if (same != report.measurements.end()) {
      // A repeated probe: more repetitions of the same point.
      same->values.insert(same->values.end(), m->values.begin(), m->values.end());
    } else {
      report.measurements.push_back(*std::move(m));
    }
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
