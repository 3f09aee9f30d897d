// The probe harness loop.
#include "profiler/harness.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace xdeep::profiler {
namespace {

// Prefixes the probe's name so an error in a report says where it came from.
absl::Status Annotate(const Probe& probe, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(probe.Name(), ": ", s.message()));
}

}  // namespace

absl::StatusOr<ProbeResult> RunProbe(Probe& probe, const HarnessOptions& options) {
  const Deadline deadline = Deadline::In(options.time_limit);
  if (absl::Status s = probe.Setup(deadline); !s.ok()) return Annotate(probe, s);

  if (options.warmup > 0) {
    absl::StatusOr<double> w = probe.RunBatch(options.warmup, deadline);
    if (!w.ok()) return Annotate(probe, w.status());
  }

  int batch = options.batch;
  if (batch <= 0) {
    absl::StatusOr<double> one = probe.RunBatch(1, deadline);
    if (!one.ok()) return Annotate(probe, one.status());
    const double t1 = std::max(*one, 1e-7);
    batch = static_cast<int>(std::ceil(options.target_sample_s / t1));
    batch = std::clamp(batch, 1, std::max(1, options.max_batch));
  }

  std::vector<double> per_op;
  per_op.reserve(options.max_samples);
  double last_sample_s = 0;
  for (int i = 0; i < options.max_samples; ++i) {
    if (options.adaptive_stop && static_cast<int>(per_op.size()) >= options.min_samples &&
        deadline.Remaining() < absl::Seconds(2 * last_sample_s) + absl::Milliseconds(50)) {
      break;  // keep time for the check
    }
    absl::StatusOr<double> t = probe.RunBatch(batch, deadline);
    if (!t.ok()) return Annotate(probe, t.status());
    last_sample_s = *t;
    per_op.push_back(*t / batch);
  }
  if (static_cast<int>(per_op.size()) < options.min_samples) {
    return absl::DeadlineExceededError(
        absl::StrCat(probe.Name(), ": only ", per_op.size(), " samples within the time limit"));
  }
  if (absl::Status s = probe.Check(deadline); !s.ok()) return Annotate(probe, s);

  absl::StatusOr<Summary> summary = Summarize(per_op);
  if (!summary.ok()) return Annotate(probe, summary.status());
  ProbeResult result;
  result.per_op = *summary;
  result.batch = batch;
  result.operations = static_cast<long long>(per_op.size()) * batch;
  return result;
}

}  // namespace xdeep::profiler
