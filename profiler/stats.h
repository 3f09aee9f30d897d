// Sample statistics for probe timings: min, median, p95, mean, spread.
//
// Probes report a distribution, not one number: the tuner weights noisy figures less,
// and the spread shows when a node was disturbed while it was measured.
#ifndef XDEEP_PROFILER_STATS_H_
#define XDEEP_PROFILER_STATS_H_

#include <vector>

#include "absl/status/statusor.h"

namespace xdeep::profiler {

struct Summary {
  int samples = 0;
  double min = 0;
  double max = 0;
  double mean = 0;
  double median = 0;
  double p95 = 0;
  // (p95 - min) / median: scale-free, so one threshold fits microseconds and seconds.
  double spread = 0;
};

// Percentile q in [0, 100] with linear interpolation between order statistics
// (numpy's default), so results agree with the comparison scripts in bench/.
double Percentile(std::vector<double> values, double q);

// Fails on an empty sample or on any non-finite or negative value: a probe that timed
// nothing must not become a figure.
absl::StatusOr<Summary> Summarize(const std::vector<double>& values);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_STATS_H_
