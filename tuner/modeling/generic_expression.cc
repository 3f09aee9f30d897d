// Differential evolution (pagmo2) over the exponents of a generic expression,
// with coefficients by weighted least squares for every candidate.
#include "tuner/modeling/generic_expression.h"

#include <Eigen/Dense>
#include <cmath>
#include <exception>
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

struct Data {
  int dims = 0;
  int terms = 0;
  Eigen::MatrixXd x;      // n × dims
  Eigen::MatrixXd log2x;  // n × dims
  Eigen::VectorXd y;
  double lambda = 0.0;
  int max_log = 0;
};

// Exponents of term k, parameter p: b at 2(k·dims + p), c at 2(k·dims + p) + 1.
int LogExponent(double raw, int max_log) {
  return std::clamp(static_cast<int>(std::floor(raw)), 0, max_log);
}

struct Evaluation {
  double cost = std::numeric_limits<double>::infinity();
  double misfit = std::numeric_limits<double>::infinity();
  Eigen::VectorXd coefficients;
};

Evaluation Evaluate(const Data& d, std::span<const double> theta) {
  const Eigen::Index n = d.y.size();
  Eigen::MatrixXd a(n, d.terms + 1);
  a.col(0).setOnes();
  double penalty = 0.0;
  for (int k = 0; k < d.terms; ++k) {
    Eigen::VectorXd col = Eigen::VectorXd::Ones(n);
    for (int p = 0; p < d.dims; ++p) {
      const double b = theta[2 * (k * d.dims + p)];
      const int c = LogExponent(theta[2 * (k * d.dims + p) + 1], d.max_log);
      penalty += std::abs(b) + c;
      if (b != 0) col.array() *= d.x.col(p).array().pow(b);
      if (c != 0) col.array() *= d.log2x.col(p).array().pow(c);
    }
    a.col(k + 1) = col;
  }
  // Relative errors: weight each row by 1/|y|.
  const Eigen::VectorXd w = d.y.cwiseAbs().cwiseInverse();
  const Eigen::MatrixXd aw = w.asDiagonal() * a;
  const Eigen::VectorXd yw = d.y.cwiseProduct(w);
  Evaluation e;
  e.coefficients = aw.colPivHouseholderQr().solve(yw);
  const Eigen::VectorXd r = aw * e.coefficients - yw;
  e.misfit = r.squaredNorm() / static_cast<double>(n);
  e.cost = e.misfit + d.lambda * penalty;
  if (!std::isfinite(e.cost)) e.cost = std::numeric_limits<double>::max();
  return e;
}

// pagmo user-defined problem: minimise the regularised cost over exponents.
struct ExponentProblem {
  std::shared_ptr<const Data> data;
  std::vector<double> lower, upper;

  pagmo::vector_double fitness(const pagmo::vector_double& theta) const {
    return {Evaluate(*data, theta).cost};
  }
  std::pair<pagmo::vector_double, pagmo::vector_double> get_bounds() const {
    return {lower, upper};
  }
};

// Best rational approximation with denominator <= max_den.
Fraction Snap(double v, int max_den) {
  Fraction best = Fraction::Make(static_cast<int>(std::lround(v)), 1);
  double best_err = std::abs(v - best.value());
  for (int den = 2; den <= max_den; ++den) {
    const Fraction f = Fraction::Make(static_cast<int>(std::lround(v * den)), den);
    const double err = std::abs(v - f.value());
    if (err < best_err - 1e-12) {
      best = f;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<GenericFit> FitGenericExpression(std::span<const Measurement> points,
                                                const GenericExpressionOptions& options) {
  if (points.empty()) return absl::InvalidArgumentError("no measurements to model");
  if (options.num_terms < 1) return absl::InvalidArgumentError("num_terms must be >= 1");
  if (options.population < 5) return absl::InvalidArgumentError("DE needs a population >= 5");
  if (!(options.min_exponent < options.max_exponent) || options.max_log_exponent < 0 ||
      options.max_denominator < 1) {
    return absl::InvalidArgumentError("empty exponent range");
  }
  auto data = std::make_shared<Data>();
  data->dims = static_cast<int>(points[0].coordinate.size());
  data->terms = options.num_terms;
  data->lambda = options.regularization;
  data->max_log = options.max_log_exponent;
  const Eigen::Index n = static_cast<Eigen::Index>(points.size());
  data->x.resize(n, data->dims);
  data->log2x.resize(n, data->dims);
  data->y.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Measurement& m = points[i];
    if (static_cast<int>(m.coordinate.size()) != data->dims || m.values.empty()) {
      return absl::InvalidArgumentError("measurements need equal dimensions and values");
    }
    for (int p = 0; p < data->dims; ++p) {
      // Log terms need x >= 1 and powers need x > 0, as in Extra-P.
      if (!(m.coordinate[p] >= 1.0)) {
        return absl::InvalidArgumentError("generic expressions need coordinates >= 1");
      }
      data->x(i, p) = m.coordinate[p];
      data->log2x(i, p) = std::log2(m.coordinate[p]);
    }
    data->y(i) = m.Mean();
    if (data->y(i) == 0 || !std::isfinite(data->y(i))) {
      return absl::InvalidArgumentError("relative misfit needs non-zero finite values");
    }
  }
  ExponentProblem udp{data, {}, {}};
  for (int k = 0; k < data->terms * data->dims; ++k) {
    udp.lower.push_back(options.min_exponent);
    udp.upper.push_back(options.max_exponent);
    udp.lower.push_back(0.0);
    udp.upper.push_back(options.max_log_exponent + 0.999);
  }
  // pagmo reports misuse by throwing; exceptions must not leave the library.
  pagmo::vector_double theta;
  unsigned long long evaluations = 0;
  try {
    pagmo::problem problem{udp};
    pagmo::population population{problem, options.population, options.seed};
    // DE/rand/1/exp (variant 2) with pagmo's defaults F = 0.8, CR = 0.9; the
    // tolerances stop early once the population has collapsed.
    pagmo::algorithm algorithm{
        pagmo::de(options.generations, 0.8, 0.9, 2u, 1e-12, 1e-8, options.seed)};
    population = algorithm.evolve(population);
    theta = population.champion_x();
    evaluations = population.get_problem().get_fevals();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("differential evolution failed: ", e.what()));
  }

  // Snap exponents to small fractions, drop empty and negligible terms, refit.
  std::vector<ProductTerm> terms;
  for (int k = 0; k < data->terms; ++k) {
    ProductTerm t;
    for (int p = 0; p < data->dims; ++p) {
      const CompoundTerm c{Snap(theta[2 * (k * data->dims + p)], options.max_denominator),
                           LogExponent(theta[2 * (k * data->dims + p) + 1], data->max_log)};
      if (!c.is_constant()) t.factors.push_back({p, c});
    }
    if (t.factors.empty()) continue;
    bool duplicate = false;
    for (const ProductTerm& u : terms) duplicate |= u.factors == t.factors;
    if (!duplicate) terms.push_back(std::move(t));
  }
  auto refit = [&](std::vector<ProductTerm>* ts) {
    Eigen::MatrixXd a(n, ts->size() + 1);
    for (Eigen::Index i = 0; i < n; ++i) {
      a(i, 0) = 1.0;
      for (size_t j = 0; j < ts->size(); ++j) a(i, j + 1) = (*ts)[j].Basis(points[i].coordinate);
    }
    const Eigen::VectorXd w = data->y.cwiseAbs().cwiseInverse();
    const Eigen::VectorXd c = internal::Lstsq(w.asDiagonal() * a, data->y.cwiseProduct(w)).x;
    for (size_t j = 0; j < ts->size(); ++j) (*ts)[j].coefficient = c(j + 1);
    return c(0);
  };
  double constant = refit(&terms);
  // Drop terms below the contribution threshold (as the PMNF modelers do).
  std::vector<ProductTerm> kept;
  for (const ProductTerm& t : terms) {
    double contribution = 0.0;
    for (Eigen::Index i = 0; i < n; ++i) {
      contribution =
          std::max(contribution, std::abs(t.Evaluate(points[i].coordinate) / data->y(i)));
    }
    if (contribution >= options.epsilon) kept.push_back(t);
  }
  if (kept.size() != terms.size()) constant = refit(&kept);

  GenericFit out;
  out.model = Model(data->dims, constant, kept);
  out.model.set_relative_errors(true);  // fitted on relative residuals
  double misfit = 0.0, penalty = 0.0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double r = (out.model.Evaluate(points[i].coordinate) - data->y(i)) / data->y(i);
    misfit += r * r;
  }
  for (const ProductTerm& t : out.model.terms()) {
    for (const Factor& f : t.factors) penalty += std::abs(f.term.poly.value()) + f.term.log;
  }
  out.misfit = misfit / static_cast<double>(n);
  out.cost = out.misfit + options.regularization * penalty;
  out.evaluations = static_cast<unsigned>(evaluations);
  FitQuality q;
  out.model.set_quality(q);
  out.model.ComputeStatistics(points);
  q = out.model.quality();
  q.rss = q.in_sample_rss;
  q.smape = q.in_sample_smape;
  double mean = data->y.mean(), tss = (data->y.array() - mean).square().sum();
  const double k = static_cast<double>(out.model.terms().size());
  q.ar2 = tss > 0 ? 1.0 - (q.rss / tss) * (n - 1.0) / (n - k - 1.0) : 1.0;
  out.model.set_quality(q);
  return out;
}

}  // namespace xdeep::modeling
