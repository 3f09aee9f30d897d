// The probe harness: one descriptor interface, one loop that times every probe.
//
// Like nccl-tests' common.cu, the harness owns warm-up, batching, the sample loop,
// statistics and the data check; a probe (GEMM, triad, all-reduce, ...) only says how
// to set up, run a batch and verify. The check runs after the timed samples, outside
// every timed region, on the data the timed runs produced.
#ifndef XDEEP_PROFILER_HARNESS_H_
#define XDEEP_PROFILER_HARNESS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "profiler/deadline.h"
#include "profiler/stats.h"

namespace xdeep::profiler {

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string Name() const = 0;
  // Allocates and fills inputs with non-zero data (zeros hide unwritten outputs and
  // run faster than real data on some GPUs).
  virtual absl::Status Setup(const Deadline& deadline) = 0;
  // Runs `reps` operations back to back and returns the seconds the whole batch took,
  // measured by the probe's own clock (device events, or the host clock after a fence).
  // Must return DeadlineExceeded rather than wait past `deadline`.
  virtual absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) = 0;
  // Verifies the output of the timed runs; never timed.
  virtual absl::Status Check(const Deadline& deadline) = 0;
};

struct HarnessOptions {
  int warmup = 3;       // untimed operations before sampling
  int min_samples = 3;  // fewer than this within the limit is an error
  int max_samples = 20;
  // Batch size: operations per sample. 0 = calibrate so a sample lasts about
  // target_sample_s, which keeps event and launch overheads out of short operations.
  // Collectives set it: every rank must issue the same number of operations.
  int batch = 0;
  int max_batch = 200;
  double target_sample_s = 2e-3;
  // Stop sampling early (never below min_samples) when the next sample would cross
  // the deadline. Off for collectives, where ranks must agree on the count.
  bool adaptive_stop = true;
  absl::Duration time_limit = absl::Seconds(10);
};

struct ProbeResult {
  Summary per_op;  // seconds per operation, one value per sample
  int batch = 0;
  long long operations = 0;  // timed operations (samples x batch)
};

// Setup, warm-up, calibration, samples, check; all inside options.time_limit.
absl::StatusOr<ProbeResult> RunProbe(Probe& probe, const HarnessOptions& options);

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_HARNESS_H_
