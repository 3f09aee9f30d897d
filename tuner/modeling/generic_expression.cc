// Differential evolution (pagmo2) over the rounded exponents of a generic
// expression, seeded with the best PMNF-like terms and finished by coordinate
// descent; coefficients by weighted least squares for every candidate.
#include "tuner/modeling/generic_expression.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <pagmo/algorithms/de.hpp>
#include <pagmo/population.hpp>
#include <pagmo/problem.hpp>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tuner/modeling/numerics.h"

namespace xdeep::modeling {
namespace {

// Mean squared relative misfit counted as at least this (relative RMS 3e-7):
// below any measured noise, above the rounding of the normal equations, so
// that exact fits tie and the fewer coefficients and smaller exponents win.
constexpr double kMisfitFloor = 1e-13;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr size_t kDescentStarts = 2;  // best seeds refined besides DE's champion

// One parameter's factor of a term: grid index of the power, log exponent.
struct FactorKey {
  int g = 0;
  int c = 0;
  friend bool operator==(const FactorKey&, const FactorKey&) = default;
};
using TermKey = std::vector<FactorKey>;  // one factor per parameter

struct Data {
  int dims = 0;
  int max_log = 0;
  double lambda = 0.0;
  Eigen::Index n = 0;
  Eigen::VectorXd w;                     // 1 / |y|: relative residuals
  Eigen::VectorXd yw;                    // y · w
  std::vector<Fraction> grid;            // exponents, ascending; 0 always included
  std::vector<double> mids;              // midpoints between neighbours, for snapping
  int zero = 0;                          // grid index of exponent 0
  std::vector<Eigen::VectorXd> columns;  // x_p^b · log2(x_p)^c at the points

  int G() const { return static_cast<int>(grid.size()); }
  int Snap(double v) const {
    return static_cast<int>(std::upper_bound(mids.begin(), mids.end(), v) - mids.begin());
  }
  int Log(double raw) const { return std::clamp(static_cast<int>(std::floor(raw)), 0, max_log); }
  bool Absent(FactorKey f) const { return f.g == zero && f.c == 0; }
  TermKey AbsentTerm() const { return TermKey(static_cast<size_t>(dims), FactorKey{zero, 0}); }
  const Eigen::VectorXd& Column(int p, FactorKey f) const {
    return columns[static_cast<size_t>((p * G() + f.g) * (max_log + 1) + f.c)];
  }
  bool Empty(const TermKey& t) const {
    return std::all_of(t.begin(), t.end(), [&](FactorKey f) { return Absent(f); });
  }
};

// Every fraction num/den in [lo, hi] with den <= max_den, and 0.
std::vector<Fraction> ExponentGrid(double lo, double hi, int max_den) {
  std::vector<Fraction> out = {Fraction::Make(0, 1)};
  for (int den = 1; den <= max_den; ++den) {
    for (int num = static_cast<int>(std::ceil(lo * den));
         num <= static_cast<int>(std::floor(hi * den)); ++num) {
      const Fraction f = Fraction::Make(num, den);
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Fraction& a, const Fraction& b) { return a.value() < b.value(); });
  return out;
}

// Distinct non-empty terms, in order.
std::vector<TermKey> Normalize(const Data& d, std::vector<TermKey> terms) {
  std::vector<TermKey> out;
  for (TermKey& t : terms) {
    if (d.Empty(t) || std::find(out.begin(), out.end(), t) != out.end()) continue;
    out.push_back(std::move(t));
  }
  return out;
}

struct Scored {
  double cost = kInfinity;
  double misfit = kInfinity;  // mean squared relative error
};

// BIC of the relative least-squares fit of c0 + Σ c_j·term_j, plus the
// exponent tie-break. Column-scaled normal equations: cheap for k <= 8.
Scored Score(const Data& d, const std::vector<TermKey>& terms) {
  using Small = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 8, 8>;
  using SmallVec = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, 8, 1>;
  const Eigen::Index k = static_cast<Eigen::Index>(terms.size()) + 1;
  const double nn = static_cast<double>(d.n);
  if (k > 8 || nn - static_cast<double>(k) <= 0) return {};
  Eigen::MatrixXd a(d.n, k);
  a.col(0) = d.w;
  double penalty = 0.0;
  Eigen::Index exponents = 0;
  for (Eigen::Index j = 1; j < k; ++j) {
    a.col(j) = d.w;
    for (int p = 0; p < d.dims; ++p) {
      const FactorKey f = terms[j - 1][p];
      if (d.Absent(f)) continue;
      a.col(j).array() *= d.Column(p, f).array();
      penalty += std::abs(d.grid[f.g].value()) + f.c;
      ++exponents;
    }
  }
  SmallVec norms(k), rhs(k);
  for (Eigen::Index i = 0; i < k; ++i) {
    norms(i) = a.col(i).norm();
    if (!(norms(i) > 0) || !std::isfinite(norms(i))) return {};
  }
  Small gram(k, k);
  for (Eigen::Index i = 0; i < k; ++i) {
    rhs(i) = a.col(i).dot(d.yw) / norms(i);
    for (Eigen::Index j = 0; j <= i; ++j) {
      gram(i, j) = gram(j, i) = a.col(i).dot(a.col(j)) / (norms(i) * norms(j));
    }
  }
  Eigen::LDLT<Small> ldlt(gram);
  if (ldlt.info() != Eigen::Success) return {};
  const SmallVec c = ldlt.solve(rhs).cwiseQuotient(norms);
  if (!c.allFinite()) return {};
  const double misfit = (a * c - d.yw).squaredNorm() / nn;
  if (!std::isfinite(misfit)) return {};
  // Every chosen exponent counts as a fitted parameter besides the
  // coefficients; the small-sample term keeps a handful of points from
  // carrying as many terms as they have values.
  const double free = static_cast<double>(k + exponents);
  const double small_sample =
      nn - free - 1 > 0 ? 2 * free * (free + 1) / (nn - free - 1) : kInfinity;
  return {nn * std::log(std::max(misfit, kMisfitFloor)) + free * std::log(nn) + small_sample +
              d.lambda * penalty,
          misfit};
}

// θ layout: term k, parameter p: power at 2(k·dims + p), log at 2(k·dims + p) + 1.
std::vector<TermKey> Decode(const Data& d, int num_terms, std::span<const double> theta) {
  std::vector<TermKey> terms(static_cast<size_t>(num_terms), TermKey(d.dims));
  for (int k = 0; k < num_terms; ++k) {
    for (int p = 0; p < d.dims; ++p) {
      terms[k][p] = {d.Snap(theta[2 * (k * d.dims + p)]), d.Log(theta[2 * (k * d.dims + p) + 1])};
    }
  }
  return Normalize(d, std::move(terms));
}

std::vector<double> Encode(const Data& d, int num_terms, const std::vector<TermKey>& terms) {
  std::vector<double> theta(static_cast<size_t>(2 * num_terms * d.dims), 0.0);
  for (size_t k = 0; k < terms.size() && k < static_cast<size_t>(num_terms); ++k) {
    for (int p = 0; p < d.dims; ++p) {
      theta[2 * (k * d.dims + p)] = d.grid[terms[k][p].g].value();
      theta[2 * (k * d.dims + p) + 1] = terms[k][p].c + 0.5;
    }
  }
  return theta;
}

// pagmo user-defined problem: minimise the score over exponent vectors.
struct ExponentProblem {
  std::shared_ptr<const Data> data;
  int num_terms = 1;
  std::vector<double> lower, upper;

  pagmo::vector_double fitness(const pagmo::vector_double& theta) const {
    const double cost = Score(*data, Decode(*data, num_terms, theta)).cost;
    return {std::isfinite(cost) ? cost : std::numeric_limits<double>::max()};
  }
  std::pair<pagmo::vector_double, pagmo::vector_double> get_bounds() const {
    return {lower, upper};
  }
};

// Starting candidates: each parameter's best single terms (every exponent on
// the grid fitted alone on all points) and the products of the two best of
// every subset of parameters, alone and (num_terms >= 2) in pairs: sums,
// mixed forms like a + a·b, two terms of one parameter. Sorted best first.
std::vector<std::pair<double, std::vector<TermKey>>> Seeds(const Data& d, int num_terms,
                                                           unsigned* evaluations) {
  const size_t per_param = d.dims == 1 ? 6 : 4;
  std::vector<std::vector<TermKey>> best(static_cast<size_t>(d.dims));
  for (int p = 0; p < d.dims; ++p) {
    std::vector<std::pair<double, TermKey>> ranked;
    for (int g = 0; g < d.G(); ++g) {
      for (int c = 0; c <= d.max_log; ++c) {
        TermKey t = d.AbsentTerm();
        t[p] = {g, c};
        if (d.Empty(t)) continue;
        ranked.push_back({Score(d, {t}).cost, t});
        ++*evaluations;
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < ranked.size() && i < per_param; ++i) best[p].push_back(ranked[i].second);
  }
  // The pool: single terms, and products of each parameter subset's two best.
  std::vector<TermKey> pool;
  for (const auto& terms : best) pool.insert(pool.end(), terms.begin(), terms.end());
  for (int subset = 1; subset < (1 << d.dims); ++subset) {
    if ((subset & (subset - 1)) == 0) continue;  // one parameter: a single term
    std::vector<size_t> pick(static_cast<size_t>(d.dims), 0);
    while (true) {
      TermKey product = d.AbsentTerm();
      for (int p = 0; p < d.dims; ++p) {
        if ((subset >> p & 1) && pick[p] < best[p].size()) product[p] = best[p][pick[p]][p];
      }
      pool.push_back(product);
      int p = 0;
      while (p < d.dims &&
             (!(subset >> p & 1) || ++pick[p] >= std::min<size_t>(2, best[p].size()))) {
        pick[p++] = 0;
      }
      if (p == d.dims) break;
    }
  }
  std::vector<std::vector<TermKey>> seeds;
  for (size_t i = 0; i < pool.size(); ++i) {
    seeds.push_back({pool[i]});
    if (num_terms < 2) continue;
    for (size_t j = i + 1; j < pool.size(); ++j) seeds.push_back({pool[i], pool[j]});
  }
  std::vector<std::pair<double, std::vector<TermKey>>> out;
  for (auto& s : seeds) {
    s = Normalize(d, std::move(s));
    if (static_cast<int>(s.size()) > num_terms) continue;
    out.push_back({Score(d, s).cost, std::move(s)});
    ++*evaluations;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// Replaces one factor at a time by every exponent on the grid while the score
// drops (at most `sweeps` passes over all factors).
std::vector<TermKey> Descend(const Data& d, int num_terms, std::vector<TermKey> terms, double* cost,
                             unsigned* evaluations, int sweeps = 4) {
  std::vector<TermKey> slots = terms;
  slots.resize(static_cast<size_t>(num_terms), d.AbsentTerm());
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    bool improved = false;
    for (int k = 0; k < num_terms; ++k) {
      for (int p = 0; p < d.dims; ++p) {
        const FactorKey kept = slots[k][p];
        FactorKey best = kept;
        for (int g = 0; g < d.G(); ++g) {
          for (int c = 0; c <= d.max_log; ++c) {
            if (FactorKey{g, c} == kept) continue;
            slots[k][p] = {g, c};
            const double trial = Score(d, Normalize(d, slots)).cost;
            ++*evaluations;
            if (trial < *cost - 1e-9) {
              *cost = trial;
              best = {g, c};
              improved = true;
            }
          }
        }
        slots[k][p] = best;
      }
    }
    if (!improved) break;
  }
  return Normalize(d, std::move(slots));
}

std::vector<ProductTerm> ToProductTerms(const Data& d, const std::vector<TermKey>& terms) {
  std::vector<ProductTerm> out;
  for (const TermKey& t : terms) {
    ProductTerm pt;
    for (int p = 0; p < d.dims; ++p) {
      if (!d.Absent(t[p])) pt.factors.push_back({p, CompoundTerm{d.grid[t[p].g], t[p].c}});
    }
    out.push_back(std::move(pt));
  }
  return out;
}

}  // namespace

absl::StatusOr<GenericFit> FitGenericExpression(std::span<const Measurement> points,
                                                const GenericExpressionOptions& options) {
  if (points.empty()) return absl::InvalidArgumentError("no measurements to model");
  if (options.num_terms < 1 || options.num_terms > 7) {
    return absl::InvalidArgumentError("num_terms must be 1-7");
  }
  if (options.population < 5) return absl::InvalidArgumentError("DE needs a population >= 5");
  if (!(options.min_exponent < options.max_exponent) || options.max_log_exponent < 0 ||
      options.max_denominator < 1 || options.max_denominator > 64 ||
      !(options.max_exponent - options.min_exponent <= 64)) {
    return absl::InvalidArgumentError(
        "exponent range must be non-empty and at most 64 wide, max_denominator 1-64");
  }
  auto data = std::make_shared<Data>();
  Data& d = *data;
  d.dims = static_cast<int>(points[0].coordinate.size());
  d.max_log = options.max_log_exponent;
  d.lambda = options.regularization;
  d.n = static_cast<Eigen::Index>(points.size());
  if (d.dims < 1) return absl::InvalidArgumentError("measurements need >= 1 coordinate");
  Eigen::MatrixXd x(d.n, d.dims);
  Eigen::VectorXd y(d.n);
  for (Eigen::Index i = 0; i < d.n; ++i) {
    const Measurement& m = points[i];
    if (static_cast<int>(m.coordinate.size()) != d.dims || m.values.empty()) {
      return absl::InvalidArgumentError("measurements need equal dimensions and values");
    }
    for (int p = 0; p < d.dims; ++p) {
      // Log terms need x >= 1 and powers need x > 0, as in Extra-P.
      if (!(m.coordinate[p] >= 1.0) || !std::isfinite(m.coordinate[p])) {
        return absl::InvalidArgumentError("generic expressions need finite coordinates >= 1");
      }
      x(i, p) = m.coordinate[p];
    }
    y(i) = m.Mean();
    if (y(i) == 0 || !std::isfinite(y(i))) {
      return absl::InvalidArgumentError("relative misfit needs non-zero finite values");
    }
  }
  d.w = y.cwiseAbs().cwiseInverse();
  d.yw = y.cwiseProduct(d.w);
  d.grid = ExponentGrid(options.min_exponent, options.max_exponent, options.max_denominator);
  for (size_t g = 0; g + 1 < d.grid.size(); ++g) {
    d.mids.push_back((d.grid[g].value() + d.grid[g + 1].value()) / 2);
  }
  d.zero = static_cast<int>(std::find(d.grid.begin(), d.grid.end(), Fraction::Make(0, 1)) -
                            d.grid.begin());
  for (int p = 0; p < d.dims; ++p) {
    for (const Fraction& b : d.grid) {
      for (int c = 0; c <= d.max_log; ++c) {
        Eigen::VectorXd col(d.n);
        for (Eigen::Index i = 0; i < d.n; ++i) col(i) = CompoundTerm{b, c}.Evaluate(x(i, p));
        d.columns.push_back(std::move(col));
      }
    }
  }

  unsigned evaluations = 0;
  const int num_terms = options.num_terms;
  const auto seeds = Seeds(d, num_terms, &evaluations);
  ExponentProblem udp{data, num_terms, {}, {}};
  for (int k = 0; k < num_terms * d.dims; ++k) {
    udp.lower.push_back(std::min(options.min_exponent, 0.0));
    udp.upper.push_back(std::max(options.max_exponent, 0.0));
    udp.lower.push_back(0.0);
    udp.upper.push_back(options.max_log_exponent + 0.999);
  }
  // pagmo reports misuse by throwing; exceptions must not leave the library.
  pagmo::vector_double theta;
  try {
    pagmo::problem problem{udp};
    pagmo::population population{problem, options.population, options.seed};
    // Half the population starts at the seeds, the rest stays random.
    for (size_t i = 0; i < seeds.size() && i < options.population / 2; ++i) {
      population.set_x(i, Encode(d, num_terms, seeds[i].second));
    }
    // DE/rand/1/exp (variant 2) with pagmo's defaults F = 0.8, CR = 0.9; the
    // tolerances stop early once the population's scores have collapsed.
    pagmo::algorithm algorithm{
        pagmo::de(options.generations, 0.8, 0.9, 2u, 1e-9, 1e-8, options.seed)};
    population = algorithm.evolve(population);
    theta = population.champion_x();
    evaluations += static_cast<unsigned>(population.get_problem().get_fevals());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("differential evolution failed: ", e.what()));
  }
  // Coordinate descent from DE's champion and from the best seeds (a start
  // where one factor is off by one step on the grid converges in a sweep).
  std::vector<TermKey> champion = Decode(d, num_terms, theta);
  double champion_cost = Score(d, champion).cost;
  const std::vector<TermKey> de_champion = champion;
  champion = Descend(d, num_terms, champion, &champion_cost, &evaluations);
  for (size_t i = 0; i < seeds.size() && i < kDescentStarts; ++i) {
    if (seeds[i].second == de_champion) continue;  // descended already
    double cost = seeds[i].first;
    std::vector<TermKey> local = Descend(d, num_terms, seeds[i].second, &cost, &evaluations);
    if (cost < champion_cost) {
      champion = std::move(local);
      champion_cost = cost;
    }
  }

  // Weighted least squares by dgelsd for the returned coefficients.
  auto refit = [&](std::vector<ProductTerm>* ts) {
    Eigen::MatrixXd a(d.n, static_cast<Eigen::Index>(ts->size()) + 1);
    for (Eigen::Index i = 0; i < d.n; ++i) {
      a(i, 0) = 1.0;
      for (size_t j = 0; j < ts->size(); ++j) a(i, j + 1) = (*ts)[j].Basis(points[i].coordinate);
    }
    const Eigen::VectorXd c = internal::Lstsq(d.w.asDiagonal() * a, d.yw).x;
    for (size_t j = 0; j < ts->size(); ++j) (*ts)[j].coefficient = c(j + 1);
    return c(0);
  };
  std::vector<ProductTerm> terms = ToProductTerms(d, champion);
  double constant = refit(&terms);
  // Drop terms below the contribution threshold (as the PMNF modelers do);
  // keep the reduced model only where it scores no worse than the best found.
  std::vector<TermKey> kept_keys;
  std::vector<ProductTerm> kept;
  for (size_t j = 0; j < terms.size(); ++j) {
    double contribution = 0.0;
    for (Eigen::Index i = 0; i < d.n; ++i) {
      contribution =
          std::max(contribution, std::abs(terms[j].Evaluate(points[i].coordinate) / y(i)));
    }
    if (contribution >= options.epsilon) {
      kept.push_back(terms[j]);
      kept_keys.push_back(champion[j]);
    }
  }
  Scored final_score = Score(d, champion);
  if (kept.size() != terms.size()) {
    const Scored reduced = Score(d, kept_keys);
    if (reduced.cost <= champion_cost) {
      final_score = reduced;
      terms = std::move(kept);
      constant = refit(&terms);
    }
  }

  GenericFit out;
  out.model = Model(d.dims, constant, terms);
  out.model.set_relative_errors(true);  // fitted on relative residuals
  out.cost = final_score.cost;
  out.misfit = 0.0;
  for (Eigen::Index i = 0; i < d.n; ++i) {
    const double r = (out.model.Evaluate(points[i].coordinate) - y(i)) / y(i);
    out.misfit += r * r / static_cast<double>(d.n);
  }
  out.evaluations = evaluations;
  out.model.ComputeStatistics(points);
  FitQuality q = out.model.quality();
  q.rss = q.in_sample_rss;
  q.smape = q.in_sample_smape;
  q.selection_score = out.cost;
  const double mean = y.mean(), tss = (y.array() - mean).square().sum();
  const double nn = static_cast<double>(d.n), k = static_cast<double>(out.model.terms().size());
  q.ar2 = tss > 0 && nn - k - 1.0 > 0 ? 1.0 - (q.rss / tss) * (nn - 1.0) / (nn - k - 1.0) : 1.0;
  out.model.set_quality(q);
  return out;
}

}  // namespace xdeep::modeling
