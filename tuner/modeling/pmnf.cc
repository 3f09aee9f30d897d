// PMNF modelers: Extra-P 4.2's single- and multi-parameter selection rules,
// reproduced step by step (order of hypotheses, leave-one-out scoring, the
// constant clean-up, the term-contribution filter, strict comparisons) so that
// xdeep selects the same model as Extra-P on the same data.
#include "tuner/modeling/pmnf.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tuner/modeling/numerics.h"

namespace xdeep::modeling {
namespace {

using internal::Lstsq;
using internal::NumpyMean;
using internal::PairwiseSum;

// Extra-P's clean-up of a constant coefficient that is numerically zero.
constexpr double kCleanConstantEpsilon = 1e-3;

// c · x^i · log2(x)^j multiplied left to right, as Extra-P's CompoundTerm does.
double TermValue(const CompoundTerm& t, double coefficient, double x) {
  double v = coefficient;
  if (!t.poly.is_zero()) v *= std::pow(x, t.poly.value());
  if (t.log != 0) v *= std::pow(std::log2(x), static_cast<double>(t.log));
  return v;
}

// numpy's max(): NaN wins.
double NanMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return std::max(a, b);
}

struct SingleResult {
  bool constant = true;
  double c0 = 0.0;
  CompoundTerm term;
  double c1 = 0.0;
  double rss = kNaN;
  double smape = kNaN;
  double ar2 = 1.0;
};

void CleanConstant(double phi, std::span<const double> train_y, double* c0) {
  double minimum = train_y[0];
  for (double v : train_y) minimum = std::min(minimum, v);
  if (minimum == 0) {
    if (std::abs(*c0 - minimum) < phi) *c0 = 0;
  } else if (std::abs(*c0 / minimum) < phi) {
    *c0 = 0;
  }
}

// Fits c0 + c1·t(x) on the points other than `skip` (skip < 0: all points).
std::pair<double, double> FitTerm(const CompoundTerm& t, std::span<const double> x,
                                  std::span<const double> y, int skip, bool relative) {
  const int n = static_cast<int>(x.size()) - (skip >= 0 ? 1 : 0);
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  int r = 0;
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    if (i == skip) continue;
    const double w = relative && y[i] != 0 ? 1.0 / std::abs(y[i]) : 1.0;
    a(r, 0) = w;
    a(r, 1) = w * TermValue(t, 1.0, x[i]);
    b(r) = w * y[i];
    ++r;
  }
  const Eigen::VectorXd c = Lstsq(a, b).x;
  return {c(0), c(1)};
}

// Extra-P's constant hypothesis cost (mean; sequential sums).
void ConstantCost(double c, std::span<const double> y, double* rss, double* smape) {
  *rss = 0.0;
  double s = 0.0;
  for (double actual : y) {
    const double d = c - actual;
    *rss += d * d;
    const double abssum = std::abs(actual) + std::abs(c);
    if (abssum != 0) s += std::abs(d) / abssum * 2;
  }
  *smape = s / static_cast<double>(y.size()) * 100;
}

// `ranking`, when given, receives (score, term) of every admissible hypothesis.
SingleResult FitSingle(std::span<const double> x, std::span<const double> y,
                       const ModelerOptions& opt,
                       std::vector<std::pair<double, CompoundTerm>>* ranking = nullptr) {
  const size_t n = x.size();
  SingleResult best;
  best.c0 = NumpyMean(y);
  ConstantCost(best.c0, y, &best.rss, &best.smape);
  const double constant_cost = best.rss;
  if (constant_cost == 0) return best;

  bool log_capable = true;
  for (double v : x) {
    if (opt.allow_negative_exponents ? v <= 1.0 : v < 1.0) log_capable = false;
  }
  std::vector<double> train;
  train.reserve(n);
  for (const CompoundTerm& t :
       DefaultBuildingBlocks(opt.allow_log_terms, opt.allow_negative_exponents)) {
    if (!log_capable && t.log != 0) continue;
    double rss = 0.0, smape = 0.0, c0 = 0.0, c1 = 0.0;
    if (opt.use_crossvalidation) {
      for (size_t i = 0; i < n; ++i) {
        std::tie(c0, c1) = FitTerm(t, x, y, static_cast<int>(i), opt.relative_least_squares);
        train.clear();
        for (size_t j = 0; j < n; ++j) {
          if (j != i) train.push_back(y[j]);
        }
        if (!train.empty()) CleanConstant(opt.epsilon, train, &c0);
        const double predicted = c0 + TermValue(t, c1, x[i]);
        const double d = predicted - y[i];
        rss += d * d;
        const double abssum = std::abs(y[i]) + std::abs(predicted);
        if (abssum != 0) smape += (std::abs(d) / abssum * 2) / static_cast<double>(n) * 100;
      }
      std::tie(c0, c1) = FitTerm(t, x, y, -1, opt.relative_least_squares);
    } else {
      std::tie(c0, c1) = FitTerm(t, x, y, -1, opt.relative_least_squares);
      CleanConstant(kCleanConstantEpsilon, y, &c0);
      std::vector<double> sq(n), sm;
      for (size_t i = 0; i < n; ++i) {
        const double d = c0 + TermValue(t, c1, x[i]) - y[i];
        sq[i] = d * d;
        const double abssum = std::abs(y[i]) + std::abs(c0 + TermValue(t, c1, x[i]));
        if (abssum != 0) sm.push_back(std::abs(d) / abssum * 2);
      }
      rss = PairwiseSum(sq);
      smape = sm.empty() ? kNaN : NumpyMean(sm) * 100;
    }
    if (!std::isfinite(rss)) continue;  // Extra-P: "numeric imprecision"
    if (c1 == 0) continue;
    double contribution = 0.0;
    for (size_t i = 0; i < n; ++i) {
      contribution = NanMax(contribution, std::abs(TermValue(t, c1, x[i]) / y[i]));
    }
    if (contribution < opt.epsilon) continue;
    if (ranking != nullptr) ranking->push_back({opt.compare_with_rss ? rss : smape, t});
    const bool better = opt.compare_with_rss ? rss < best.rss : smape < best.smape;
    if (!better) continue;
    best.constant = false;
    best.c0 = c0;
    best.c1 = c1;
    best.term = t;
    best.rss = rss;
    best.smape = smape;
    const double nn = static_cast<double>(n);
    best.ar2 = 1.0 - (rss / constant_cost) * (nn - 1.0) / (nn - 2.0);
  }
  return best;
}

absl::Status Validate(std::span<const Measurement> points, size_t dims) {
  if (points.empty()) return absl::InvalidArgumentError("no measurements to model");
  for (const Measurement& m : points) {
    if (m.coordinate.size() != dims) {
      return absl::InvalidArgumentError(
          absl::StrCat("measurement has ", m.coordinate.size(), " coordinates, expected ", dims));
    }
    if (m.values.empty()) return absl::InvalidArgumentError("measurement without values");
    for (double v : m.coordinate) {
      if (!std::isfinite(v)) return absl::InvalidArgumentError("non-finite coordinate");
    }
    for (double v : m.values) {
      if (!std::isfinite(v)) return absl::InvalidArgumentError("non-finite measured value");
    }
  }
  return absl::OkStatus();
}

// The points for parameter p's single-parameter model: Extra-P's "best
// measurement points" (auto selection). Group the points into lines along p,
// keep the longest lines, and average them per value of p over the lines
// that share the first line's coordinates.
void BestLine(std::span<const Measurement> points, std::span<const double> y, size_t p,
              std::vector<double>* lx, std::vector<double>* ly) {
  auto partial = [p](const Measurement& m) {
    std::vector<double> key;
    for (size_t d = 0; d < m.coordinate.size(); ++d) {
      if (d != p) key.push_back(m.coordinate[d]);
    }
    return key;
  };
  std::map<std::vector<double>, size_t> index;
  std::vector<std::vector<size_t>> lines;
  for (size_t i = 0; i < points.size(); ++i) {
    auto [it, inserted] = index.try_emplace(partial(points[i]), lines.size());
    if (inserted) lines.emplace_back();
    lines[it->second].push_back(i);
  }
  size_t longest = 0;
  for (const auto& l : lines) longest = std::max(longest, l.size());
  // Regroup the longest lines by their coordinate in p, in order of appearance.
  std::map<double, size_t> by_value;
  std::vector<std::pair<double, std::vector<size_t>>> groups;
  for (const auto& l : lines) {
    if (l.size() != longest) continue;
    for (size_t i : l) {
      const double c = points[i].coordinate[p];
      auto [it, inserted] = by_value.try_emplace(c, groups.size());
      if (inserted) groups.push_back({c, {}});
      groups[it->second].second.push_back(i);
    }
  }
  std::map<std::vector<double>, bool> common;
  for (size_t i : groups.front().second) common[partial(points[i])] = true;
  lx->clear();
  ly->clear();
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<double> vals;
    for (size_t i : groups[g].second) {
      if (g == 0 || common.contains(partial(points[i]))) vals.push_back(y[i]);
    }
    if (vals.empty()) continue;
    lx->push_back(groups[g].first);
    ly->push_back(vals.size() == 1 ? vals[0] : NumpyMean(vals));
  }
}

struct MultiHypothesis {
  double constant = 0.0;
  std::vector<ProductTerm> terms;
  double rss = kNaN;
  double smape = kNaN;
  double score = kNaN;  // lower is better: SMAPE, RSS, LOO SMAPE or BIC
};

double EvaluateMulti(const MultiHypothesis& h, std::span<const double> x) {
  double v = h.constant;
  for (const ProductTerm& t : h.terms) v += t.Evaluate(x);
  return v;
}

void MultiCost(std::span<const Measurement> points, std::span<const double> y, MultiHypothesis* h) {
  h->rss = 0.0;
  double smape = 0.0;
  for (size_t i = 0; i < points.size(); ++i) {
    const double predicted = EvaluateMulti(*h, points[i].coordinate);
    const double d = predicted - y[i];
    h->rss += d * d;
    const double abssum = std::abs(y[i]) + std::abs(predicted);
    if (abssum != 0) smape += std::abs(d) / abssum * 2;
  }
  h->smape = smape / static_cast<double>(points.size()) * 100;
}

// Design matrix [1, terms...] of `h` at the points, rows scaled by `w`.
Eigen::MatrixXd Design(std::span<const Measurement> points, const MultiHypothesis& h,
                       const Eigen::VectorXd& w) {
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  const Eigen::Index k = static_cast<Eigen::Index>(h.terms.size()) + 1;
  Eigen::MatrixXd a(n, k);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = w(i);
    for (Eigen::Index j = 1; j < k; ++j) {
      ProductTerm t = h.terms[j - 1];
      t.coefficient = 1.0;
      a(i, j) = w(i) * t.Evaluate(points[i].coordinate);
    }
  }
  return a;
}

Eigen::VectorXd RowWeights(std::span<const double> y, bool relative) {
  Eigen::VectorXd w = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(y.size()));
  if (relative) {
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] != 0) w(i) = 1.0 / std::abs(y[i]);
    }
  }
  return w;
}

// Leave-one-out SMAPE of `h`'s terms refitted without each point in turn,
// from the (weighted) hat matrix: the held-out residual is e_i / (1 - h_ii).
double LeaveOneOutSmape(std::span<const Measurement> points, std::span<const double> y,
                        const MultiHypothesis& h, const Eigen::VectorXd& w) {
  const Eigen::MatrixXd a = Design(points, h, w);
  const Eigen::Index n = a.rows();
  if (n <= a.cols()) return std::numeric_limits<double>::infinity();
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(a, Eigen::ComputeThinU);
  const Eigen::VectorXd& s = svd.singularValues();
  const double cutoff = std::numeric_limits<double>::epsilon() * n * s(0);
  Eigen::VectorXd hat = Eigen::VectorXd::Zero(n);
  for (Eigen::Index j = 0; j < s.size(); ++j) {
    if (s(j) > cutoff) hat += svd.matrixU().col(j).cwiseAbs2();
  }
  double smape = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (1.0 - hat(i) < 1e-12) return std::numeric_limits<double>::infinity();
    const double e = (y[i] - EvaluateMulti(h, points[i].coordinate)) / (1.0 - hat(i));
    const double predicted = y[i] - e;
    const double abssum = std::abs(y[i]) + std::abs(predicted);
    if (abssum != 0) smape += std::abs(e) / abssum * 2;
  }
  return smape / static_cast<double>(n) * 100;
}

// Bayesian information criterion on the (weighted) least-squares residuals:
// n·ln(RSS/n) + k·ln(n). Its ln(n) per coefficient (vs AIC's 2) is what keeps
// noise-fitting extra terms out: with AICc about a quarter of noisy 2-parameter
// products gained one, with BIC about a tenth (tests/tuner/modeling).
double Bic(std::span<const Measurement> points, std::span<const double> y, const MultiHypothesis& h,
           const Eigen::VectorXd& w) {
  const double n = static_cast<double>(points.size());
  const double k = static_cast<double>(h.terms.size()) + 1;
  if (n - k <= 0) return std::numeric_limits<double>::infinity();
  double rss = 0.0;
  for (size_t i = 0; i < points.size(); ++i) {
    const double r =
        w(static_cast<Eigen::Index>(i)) * (EvaluateMulti(h, points[i].coordinate) - y[i]);
    rss += r * r;
  }
  rss = std::max(rss, std::numeric_limits<double>::min());
  return n * std::log(rss / n) + k * std::log(n);
}

double Score(std::span<const Measurement> points, std::span<const double> y,
             const MultiHypothesis& h, const ModelerOptions& options) {
  using enum ModelerOptions::MultiSelection;
  switch (options.multi_parameter_selection) {
    case kLeaveOneOut:
      return LeaveOneOutSmape(points, y, h, RowWeights(y, options.relative_least_squares));
    case kBic:
      return Bic(points, y, h, RowWeights(y, options.relative_least_squares));
    case kExtraP:
      break;
  }
  return options.compare_with_rss ? h.rss : h.smape;
}

void MultiCoefficients(std::span<const Measurement> points, std::span<const double> y,
                       MultiHypothesis* h, bool relative) {
  const Eigen::VectorXd w = RowWeights(y, relative);
  const Eigen::MatrixXd a = Design(points, *h, w);
  const Eigen::Index k = a.cols();
  const Eigen::VectorXd b =
      Eigen::Map<const Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(y.size()))
          .cwiseProduct(w);
  internal::LstsqResult r = Lstsq(a, b);
  // NumPy's default rcond can collapse the rank; Extra-P retries with eps.
  if (r.rank < k) r = Lstsq(a, b, -1.0);
  h->constant = r.x(0);
  for (Eigen::Index j = 1; j < k; ++j) h->terms[j - 1].coefficient = r.x(j);
}

Model ToModel(int dims, const MultiHypothesis& h, std::span<const Measurement> points,
              double constant_cost, bool is_constant, bool relative) {
  Model model(dims, h.constant, h.terms);
  model.set_relative_errors(relative);
  FitQuality q;
  q.rss = h.rss;
  q.smape = h.smape;
  q.selection_score = h.score;
  if (is_constant) {
    q.ar2 = 1.0;
  } else {
    // Extra-P counts every factor as a degree of freedom.
    int counter = 0;
    for (const ProductTerm& t : h.terms) counter += static_cast<int>(t.factors.size());
    const double n = static_cast<double>(points.size());
    q.ar2 = 1.0 - (h.rss / constant_cost) * (n - 1.0) / (n - counter - 1.0);
  }
  model.set_quality(q);
  model.ComputeStatistics(points);
  return model;
}

// Hypothesis structures over m non-constant parameters, Extra-P's order:
// each hypothesis is a list of terms, each term a list of parameter slots.
using Structure = std::vector<std::vector<size_t>>;
std::vector<Structure> Structures(size_t m, bool combinations) {
  using Term = std::vector<size_t>;
  std::vector<Structure> out;
  Term all;
  std::vector<Term> add;
  for (size_t i = 0; i < m; ++i) {
    all.push_back(i);
    add.push_back({i});
  }
  if (m == 1) return {{all}};
  out.push_back({all});
  out.push_back(add);
  if (!combinations) return out;
  if (m == 2) {
    out.push_back({add[0], all});
    out.push_back({add[1], all});
  } else if (m == 3) {
    const Term xy = {0, 1}, yz = {1, 2}, xz = {0, 2};
    const std::vector<Structure> mixed = {{all, add[0]},
                                          {all, add[1]},
                                          {all, add[2]},
                                          {all, xy},
                                          {all, yz},
                                          {all, xz},
                                          {all, xy, add[2]},
                                          {all, yz, add[0]},
                                          {all, xz, add[1]},
                                          {all, add[0], add[1]},
                                          {all, add[0], add[2]},
                                          {all, add[1], add[2]},
                                          {xy, add[2]},
                                          {xy, add[2], add[1]},
                                          {xy, add[2], add[0]},
                                          {xz, add[1]},
                                          {xz, add[1], add[0]},
                                          {xz, add[1], add[2]},
                                          {yz, add[0]},
                                          {yz, add[0], add[1]},
                                          {yz, add[0], add[2]}};
    out.insert(out.end(), mixed.begin(), mixed.end());
  }
  return out;
}

// Joint search (xdeep, not Extra-P): every combination of per-parameter
// exponents (all building blocks for 2 parameters, the best-ranked on the
// lines for more) and every structure, fitted on all points and scored by
// BIC. Extra-P fixes each parameter's exponents on one averaged line first;
// with sparse, noisy points that line may not show the parameter's effect at
// all (e.g. the node count's effect at the smallest size), while all points
// together do.
// Returns the `top` best hypotheses, best first (ties keep the earlier).
std::vector<MultiHypothesis> JointSearch(std::span<const Measurement> points,
                                         std::span<const double> y, size_t dims,
                                         const ModelerOptions& options, size_t top = 1) {
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  const Eigen::VectorXd w = RowWeights(y, options.relative_least_squares);
  const Eigen::VectorXd yw = Eigen::Map<const Eigen::VectorXd>(y.data(), n).cwiseProduct(w);
  const size_t keep = dims <= 2 ? 1000 : dims == 3 ? 10 : 5;
  // Candidate terms per parameter and their columns at the points.
  std::vector<std::vector<CompoundTerm>> candidates(dims);
  std::vector<std::vector<Eigen::VectorXd>> columns(dims);
  std::vector<double> lx, ly;
  for (size_t p = 0; p < dims; ++p) {
    BestLine(points, y, p, &lx, &ly);
    std::vector<std::pair<double, CompoundTerm>> ranking;
    FitSingle(lx, ly, options, &ranking);
    std::stable_sort(ranking.begin(), ranking.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    bool log_capable = true;
    for (const Measurement& m : points) log_capable &= m.coordinate[p] >= 1.0;
    if (dims == 2 || ranking.empty()) {
      for (const CompoundTerm& t :
           DefaultBuildingBlocks(options.allow_log_terms, options.allow_negative_exponents)) {
        if (log_capable || t.log == 0) ranking.push_back({0.0, t});
      }
    }
    for (const auto& [score, t] : ranking) {
      if (candidates[p].size() >= keep) break;
      if (std::find(candidates[p].begin(), candidates[p].end(), t) != candidates[p].end()) continue;
      candidates[p].push_back(t);
      Eigen::VectorXd col(n);
      for (Eigen::Index i = 0; i < n; ++i) col(i) = t.Evaluate(points[i].coordinate[p]);
      columns[p].push_back(std::move(col));
    }
  }
  const double nn = static_cast<double>(n);
  std::vector<MultiHypothesis> best;
  // Mixed-radix counter over (absent, candidate 0, candidate 1, ...) per parameter.
  std::vector<size_t> choice(dims, 0);
  // Buffers reused across the thousands of small fits (k <= 8 coefficients).
  using Small = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 8, 8>;
  using SmallVec = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, 8, 1>;
  std::vector<Eigen::VectorXd> cols(8, Eigen::VectorXd(n));
  Eigen::VectorXd residual(n);
  while (true) {
    std::vector<std::pair<size_t, size_t>> chosen;  // (parameter, candidate)
    for (size_t p = 0; p < dims; ++p) {
      if (choice[p] > 0) chosen.push_back({p, choice[p] - 1});
    }
    const std::vector<Structure> structures =
        chosen.empty() ? std::vector<Structure>{{}}
                       : Structures(chosen.size(), options.allow_combinations_of_sums_and_products);
    for (const Structure& st : structures) {
      const Eigen::Index k = static_cast<Eigen::Index>(st.size()) + 1;
      if (nn - k <= 0 || k > 8) continue;
      cols[0] = w;
      for (size_t j = 0; j < st.size(); ++j) {
        Eigen::VectorXd& col = cols[j + 1];
        col = w;
        for (size_t slot : st[j])
          col.array() *= columns[chosen[slot].first][chosen[slot].second].array();
      }
      // Column-scaled normal equations: cheap for small k, and the scaling
      // keeps the Gram matrix conditioned well enough to rank hypotheses.
      SmallVec norms(k), rhs(k);
      bool usable = true;
      for (Eigen::Index i = 0; i < k; ++i) {
        norms(i) = cols[i].norm();
        usable &= norms(i) > 0 && std::isfinite(norms(i));
      }
      if (!usable) continue;
      Small gram(k, k);
      for (Eigen::Index i = 0; i < k; ++i) {
        rhs(i) = cols[i].dot(yw) / norms(i);
        for (Eigen::Index j = 0; j <= i; ++j) {
          gram(i, j) = gram(j, i) = cols[i].dot(cols[j]) / (norms(i) * norms(j));
        }
      }
      Eigen::LDLT<Small> ldlt(gram);
      if (ldlt.info() != Eigen::Success) continue;
      SmallVec c = ldlt.solve(rhs);
      c = c.cwiseQuotient(norms);
      if (!c.allFinite()) continue;
      residual = -yw;
      for (Eigen::Index j = 0; j < k; ++j) residual += c(j) * cols[j];
      const double rss = std::max(residual.squaredNorm(), std::numeric_limits<double>::min());
      // Same minimum term contribution as Extra-P.
      bool big_enough = true;
      for (Eigen::Index j = 1; j < k && big_enough; ++j) {
        const double contribution = (cols[j] * c(j)).cwiseQuotient(yw).cwiseAbs().maxCoeff();
        big_enough = c(j) != 0 && !(contribution < options.epsilon);
      }
      if (!big_enough) continue;
      const double kk = static_cast<double>(k);
      const double score = nn * std::log(rss / nn) + kk * std::log(nn);
      if (best.size() < top || score < best.back().score) {
        MultiHypothesis h;
        h.score = score;
        for (const auto& term : st) {
          ProductTerm pt;
          for (size_t slot : term) {
            pt.factors.push_back({static_cast<int>(chosen[slot].first),
                                  candidates[chosen[slot].first][chosen[slot].second]});
          }
          h.terms.push_back(std::move(pt));
        }
        auto at = std::upper_bound(best.begin(), best.end(), score,
                                   [](double v, const MultiHypothesis& b) { return v < b.score; });
        best.insert(at, std::move(h));
        if (best.size() > top) best.pop_back();
      }
    }
    size_t p = 0;
    while (p < dims && ++choice[p] > candidates[p].size()) choice[p++] = 0;
    if (p == dims) break;
  }
  for (MultiHypothesis& h : best) {
    MultiCoefficients(points, y, &h, options.relative_least_squares);
    MultiCost(points, y, &h);
  }
  return best;
}

}  // namespace

absl::StatusOr<Model> FitSingleParameter(std::span<const Measurement> points,
                                         const ModelerOptions& options) {
  if (absl::Status s = Validate(points, 1); !s.ok()) return s;
  std::vector<double> x, y;
  for (const Measurement& m : points) {
    x.push_back(m.coordinate[0]);
    y.push_back(m.Mean());
  }
  const SingleResult r = FitSingle(x, y, options);
  std::vector<ProductTerm> terms;
  if (!r.constant) terms.push_back(ProductTerm{r.c1, {Factor{0, r.term}}});
  Model model(1, r.c0, std::move(terms));
  model.set_relative_errors(options.relative_least_squares);
  FitQuality q;
  q.rss = r.rss;
  q.smape = r.smape;
  q.ar2 = r.ar2;
  q.cross_validated = options.use_crossvalidation && !r.constant;
  model.set_quality(q);
  model.ComputeStatistics(points);
  return model;
}

absl::StatusOr<Model> FitCurve(std::span<const double> x, std::span<const double> y,
                               const ModelerOptions& options) {
  if (x.size() != y.size()) return absl::InvalidArgumentError("x and y differ in length");
  std::vector<Measurement> points;
  points.reserve(x.size());
  for (size_t i = 0; i < x.size(); ++i) points.push_back({{x[i]}, {y[i]}});
  return FitSingleParameter(points, options);
}

absl::StatusOr<Model> FitMultiParameter(std::span<const Measurement> points,
                                        const ModelerOptions& options) {
  if (points.empty()) return absl::InvalidArgumentError("no measurements to model");
  const size_t dims = points[0].coordinate.size();
  if (dims < 2) return absl::InvalidArgumentError("multi-parameter fit needs >= 2 parameters");
  if (absl::Status s = Validate(points, dims); !s.ok()) return s;
  std::vector<double> y;
  for (const Measurement& m : points) y.push_back(m.Mean());

  if (options.joint_exponent_search) {
    std::vector<double> sq(y.size());
    const double mean = NumpyMean(y);
    for (size_t i = 0; i < y.size(); ++i) sq[i] = (y[i] - mean) * (y[i] - mean);
    const std::vector<MultiHypothesis> h = JointSearch(points, y, dims, options);
    if (h.empty()) return absl::InvalidArgumentError("too few points for any hypothesis");
    return ToModel(static_cast<int>(dims), h[0], points, PairwiseSum(sq), h[0].terms.empty(),
                   options.relative_least_squares);
  }
  // Per-parameter single-parameter models on the best lines.
  struct Pair {
    int param;
    SingleResult fit;
  };
  std::vector<Pair> pairs;
  std::vector<double> lx, ly;
  for (size_t p = 0; p < dims; ++p) {
    BestLine(points, y, p, &lx, &ly);
    SingleResult r = FitSingle(lx, ly, options);
    if (!r.constant) pairs.push_back({static_cast<int>(p), r});
  }
  const double mean = NumpyMean(y);
  std::vector<double> sq(y.size());
  for (size_t i = 0; i < y.size(); ++i) sq[i] = (y[i] - mean) * (y[i] - mean);
  const double constant_cost = PairwiseSum(sq);
  const int d = static_cast<int>(dims);

  if (pairs.empty()) {
    MultiHypothesis h;
    h.constant = mean;
    ConstantCost(mean, y, &h.rss, &h.smape);
    return ToModel(d, h, points, constant_cost, true, options.relative_least_squares);
  }
  auto factor = [&](size_t i) { return Factor{pairs[i].param, pairs[i].fit.term}; };
  if (pairs.size() == 1) {
    // The single-parameter coefficients as they are, or refitted on all points.
    MultiHypothesis reused;
    reused.constant = pairs[0].fit.c0;
    reused.terms = {ProductTerm{pairs[0].fit.c1, {factor(0)}}};
    MultiCost(points, y, &reused);
    MultiHypothesis refit;
    refit.terms = {ProductTerm{1.0, {factor(0)}}};
    MultiCoefficients(points, y, &refit, options.relative_least_squares);
    MultiCost(points, y, &refit);
    const bool take_refit =
        options.compare_with_rss ? refit.rss < reused.rss : refit.smape < reused.smape;
    return ToModel(d, take_refit ? refit : reused, points, constant_cost, false,
                   options.relative_least_squares);
  }

  // Hypotheses as lists of terms, each term a list of pair indices; Extra-P's order.
  const std::vector<Structure> functions =
      Structures(pairs.size(), options.allow_combinations_of_sums_and_products);
  MultiHypothesis best;
  for (size_t f = 0; f < functions.size(); ++f) {
    MultiHypothesis h;
    for (const std::vector<size_t>& t : functions[f]) {
      ProductTerm pt;
      for (size_t i : t) pt.factors.push_back(factor(i));
      h.terms.push_back(std::move(pt));
    }
    MultiCoefficients(points, y, &h, options.relative_least_squares);
    MultiCost(points, y, &h);
    h.score = Score(points, y, h, options);
    if (f == 0) {
      best = h;  // the full product is the starting point, filtered or not
      continue;
    }
    bool big_enough = true;
    for (const ProductTerm& t : h.terms) {
      double contribution = 0.0;
      for (size_t i = 0; i < points.size(); ++i) {
        contribution = NanMax(contribution, std::abs(t.Evaluate(points[i].coordinate) / y[i]));
      }
      if (t.coefficient == 0 || contribution < options.epsilon) {
        big_enough = false;
        break;
      }
    }
    if (!big_enough) continue;
    if (h.score < best.score) best = std::move(h);
  }
  return ToModel(d, best, points, constant_cost, false, options.relative_least_squares);
}

absl::StatusOr<std::vector<Model>> FitAlternatives(std::span<const Measurement> points, int count,
                                                   const ModelerOptions& options) {
  if (points.empty()) return absl::InvalidArgumentError("no measurements to model");
  if (count < 1) return absl::InvalidArgumentError("count must be >= 1");
  const size_t dims = points[0].coordinate.size();
  if (absl::Status s = Validate(points, dims); !s.ok()) return s;
  std::vector<double> y;
  for (const Measurement& m : points) y.push_back(m.Mean());
  std::vector<double> sq(y.size());
  const double mean = NumpyMean(y);
  for (size_t i = 0; i < y.size(); ++i) sq[i] = (y[i] - mean) * (y[i] - mean);
  std::vector<Model> out;
  for (const MultiHypothesis& h :
       JointSearch(points, y, dims, options, static_cast<size_t>(count))) {
    out.push_back(ToModel(static_cast<int>(dims), h, points, PairwiseSum(sq), h.terms.empty(),
                          options.relative_least_squares));
  }
  if (out.empty()) return absl::InvalidArgumentError("too few points for any hypothesis");
  return out;
}

namespace {
// exp(-Δ/2) of each score against the lowest, summing to 1.
std::vector<double> WeightsFromScores(std::span<const double> scores) {
  const double lowest = *std::min_element(scores.begin(), scores.end());
  std::vector<double> weights;
  double sum = 0.0;
  for (double score : scores) {
    const double delta = score - lowest;
    weights.push_back(std::isfinite(delta) ? std::exp(-delta / 2) : 0.0);
    sum += weights.back();
  }
  for (double& w : weights) w /= sum;
  return weights;
}
}  // namespace

std::optional<double> PooledMeanVariance(std::span<const Measurement> points, bool relative) {
  double pooled = 0.0, dof = 0.0, values = 0.0;
  for (const Measurement& m : points) {
    values += static_cast<double>(m.values.size());
    if (m.values.size() < 2) continue;
    const double mean = m.Mean();
    const double scale = relative ? mean * mean : 1.0;
    for (double v : m.values) pooled += (v - mean) * (v - mean) / scale;
    dof += static_cast<double>(m.values.size() - 1);
  }
  if (!(dof > 0 && pooled > 0)) return std::nullopt;
  // Per-value variance over the average number of repetitions per point.
  return pooled / dof / (values / static_cast<double>(points.size()));
}

std::vector<double> NoiseWeights(std::span<const Measurement> points, std::span<const Model> models,
                                 double mean_variance, bool relative) {
  const double n = static_cast<double>(points.size());
  std::vector<double> scores;
  for (const Model& m : models) {
    double rss = 0.0;
    for (const Measurement& p : points) {
      const double y = p.Mean();
      const double r = (m.Evaluate(p.coordinate) - y) / (relative ? y : 1.0);
      rss += r * r;
    }
    const double k = 1.0 + static_cast<double>(m.terms().size());
    scores.push_back(rss / mean_variance + k * std::log(n));
  }
  return WeightsFromScores(scores);
}

absl::StatusOr<Model> FitAveraged(std::span<const Measurement> points, int count,
                                  const ModelerOptions& options) {
  absl::StatusOr<std::vector<Model>> models = FitAlternatives(points, count, options);
  if (!models.ok()) return models.status();
  if (models->size() == 1) return std::move(models->front());
  const double best = models->front().quality().selection_score;
  // Weights exp(-Δ/2) of an information criterion. BIC's n·log(RSS/n)
  // takes the noise from the fit's own residuals, and on a plan's ~20 points
  // its differences put nearly all weight on one exponent. Where the points
  // carry repetitions the noise of their means is measured instead:
  // χ² = RSS / σ²_mean plus BIC's k·log(n) (planner test, 30 seeds,
  // 5 + 0.01·p·log2 p + 0.2·n: +3.08 -> +2.36 pp; the others unchanged).
  std::vector<double> weights;
  if (std::optional<double> mean_variance =
          PooledMeanVariance(points, options.relative_least_squares)) {
    weights = NoiseWeights(points, *models, *mean_variance, options.relative_least_squares);
  } else {
    std::vector<double> scores;
    for (const Model& m : *models) scores.push_back(m.quality().selection_score);
    weights = WeightsFromScores(scores);
  }
  double constant = 0.0;
  std::vector<ProductTerm> terms;
  for (size_t k = 0; k < models->size(); ++k) {
    const double w = weights[k];
    if (w == 0) continue;
    constant += w * (*models)[k].constant();
    for (ProductTerm t : (*models)[k].terms()) {
      t.coefficient *= w;
      auto same = std::find_if(terms.begin(), terms.end(),
                               [&](const ProductTerm& u) { return u.factors == t.factors; });
      if (same != terms.end()) {
        same->coefficient += t.coefficient;
      } else {
        terms.push_back(std::move(t));
      }
    }
  }
  Model model(models->front().num_params(), constant, std::move(terms));
  model.set_relative_errors(options.relative_least_squares);
  FitQuality q;
  q.selection_score = best;  // of the best member; the average has no BIC of its own
  model.set_quality(q);
  model.ComputeStatistics(points);
  return model;
}

absl::StatusOr<Model> Fit(std::span<const Measurement> points, const ModelerOptions& options) {
  if (points.empty()) return absl::InvalidArgumentError("no measurements to model");
  if (points[0].coordinate.size() == 1) return FitSingleParameter(points, options);
  return FitMultiParameter(points, options);
}

}  // namespace xdeep::modeling
