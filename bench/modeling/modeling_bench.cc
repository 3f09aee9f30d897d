// Times a 2-parameter PMNF fit over a 5×5 grid (issue: <= 50 ms on one core)
// with Extra-P's defaults and with xdeep's robust options, next to a baseline
// measured in the same run: one plain Eigen least-squares solve of the same
// size (25 points, constant + 3 terms), so that the ratio says how many
// solves' worth of work the model search costs. Also times the default
// modeler (FitSelected: both fits plus their cross-validation) and the generic
// expression (differential evolution) fit with 1 and 2 terms. Runs pinned to
// one core and times the thread's CPU time: the 2-core VM is shared, and wall
// time there counts the other agents' builds (load 11 made a 6 ms fit read
// 20 ms).
#include <sched.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tuner/modeling/generic_expression.h"
#include "tuner/modeling/model_selection.h"
#include "tuner/modeling/pmnf.h"

namespace {

using xdeep::modeling::Measurement;

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Median CPU seconds per call over `reps` timed calls after one warm-up.
double MedianSeconds(const std::function<void()>& f, int reps) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double start = ThreadCpuSeconds();
    f();
    t.push_back(ThreadCpuSeconds() - start);
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[reps / 2];
}

std::vector<Measurement> Grid5x5() {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  std::vector<Measurement> points;
  for (double p : {2, 4, 8, 16, 32}) {
    for (double n : {1, 2, 4, 8, 16}) {
      const double f = 3 + 0.5 * p * std::log2(p) * std::sqrt(n);
      Measurement m{{p, n}, {}};
      for (int r = 0; r < 5; ++r) m.values.push_back(f * (1 + u(rng)));
      points.push_back(std::move(m));
    }
  }
  return points;
}

}  // namespace

int main() {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  const bool pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
  const std::vector<Measurement> points = Grid5x5();
  constexpr double kTarget = 0.050;

  // Baseline: one least-squares solve of the same shape as a final refit.
  Eigen::MatrixXd a(25, 4);
  Eigen::VectorXd b(25);
  for (int i = 0; i < 25; ++i) {
    const double p = points[i].coordinate[0], n = points[i].coordinate[1];
    a.row(i) << 1.0, p * std::log2(p), std::sqrt(n), p * std::log2(p) * std::sqrt(n);
    b(i) = points[i].Mean();
  }
  volatile double sink = 0;
  const double baseline = MedianSeconds(
      [&] { sink = sink + a.jacobiSvd(Eigen::ComputeThinU | Eigen::ComputeThinV).solve(b)(0); },
      2001);

  std::printf("xdeep modeling bench (%s; thread CPU time, median)\n",
              pinned ? "pinned to CPU 0" : "not pinned");
  std::printf("baseline  Eigen JacobiSVD least squares 25x4       %10.3f us\n", baseline * 1e6);
  struct Variant {
    const char* name;
    xdeep::modeling::ModelerOptions options;
    int reps;
  };
  for (const Variant& v : {Variant{"PMNF 2-param 5x5, Extra-P defaults", {}, 501},
                           Variant{"PMNF 2-param 5x5, robust options",
                                   xdeep::modeling::ModelerOptions::Robust(), 51}}) {
    std::string model;
    const double t = MedianSeconds(
        [&] { model = xdeep::modeling::FitMultiParameter(points, v.options)->ToString(); }, v.reps);
    std::printf("%-44s %10.3f us  = %7.4f of the 50 ms target, %8.1f x baseline\n    %s\n", v.name,
                t * 1e6, t / kTarget, t / baseline, model.c_str());
  }
  {
    std::string model;
    const double t =
        MedianSeconds([&] { model = xdeep::modeling::FitSelected(points)->Explain(); }, 21);
    std::printf("%-44s %10.3f us  = %7.4f of the 50 ms target, %8.1f x baseline\n    %s\n",
                "default modeler (FitSelected) 5x5", t * 1e6, t / kTarget, t / baseline,
                model.c_str());
  }
  for (int terms : {1, 2}) {
    xdeep::modeling::GenericExpressionOptions ge;
    ge.num_terms = terms;
    std::string model;
    const double t = MedianSeconds(
        [&] { model = xdeep::modeling::FitGenericExpression(points, ge)->model.ToString(); }, 11);
    const std::string name =
        "generic expression (pagmo DE) 5x5, " + std::to_string(terms) + " term(s)";
    std::printf("%-44s %10.3f us  = %7.4f of the 50 ms target, %8.1f x baseline\n    %s\n",
                name.c_str(), t * 1e6, t / kTarget, t / baseline, model.c_str());
  }
  return 0;
}
