// Sample statistics for probe timings.
#include "profiler/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"

namespace xdeep::profiler {

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 100.0) / 100.0 * (values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - lo;
  return values[lo] + (values[hi] - values[lo]) * frac;
}

absl::StatusOr<Summary> Summarize(const std::vector<double>& values) {
  if (values.empty()) return absl::InvalidArgumentError("no samples to summarise");
  for (double v : values) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError("sample is negative or not finite");
    }
  }
  Summary s;
  s.samples = static_cast<int>(values.size());
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / values.size();
  s.median = Percentile(values, 50);
  s.p95 = Percentile(values, 95);
  s.spread = s.median > 0 ? (s.p95 - s.min) / s.median : 0;
  return s;
}

}  // namespace xdeep::profiler
