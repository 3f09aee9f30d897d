// Heuristic-only probe jobs, off the decision path: a decision for a workload
// whose GEMMs the profile's heuristic answers do not cover (HeuristicCoverage)
// is made at once with what exists and offers a job here that asks cuBLASLt's
// heuristic about the missing shapes (`xdeep-probe compute --suite
// gemm-heuristic`, one GPU, seconds, nothing timed); its answers join the
// stored ones, so the workload's next decision uses them.
//
// Deduplicated: one job queued or running per (partition, shape set).
// Rate-limited: at most one job offered per partition per `interval_s`
// ([probes] heuristic_interval_s); 0 turns these jobs off. Jobs run one at a
// time on the queue's own thread.
#ifndef XDEEP_DAEMON_HEURISTIC_PROBE_QUEUE_H_
#define XDEEP_DAEMON_HEURISTIC_PROBE_QUEUE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "daemon/heuristic_coverage.h"

namespace xdeep::daemon {

struct HeuristicProbeJob {
  std::string partition;
  int gpus_per_node = 0;                    // the node size the shapes were listed for
  std::shared_ptr<const HeuristicGap> gap;  // the workload's GEMMs without an answer
};

// Runs one job to its end (submission, wait, ingestion); `stopping` turns
// true when the daemon shuts down (the job is then cancelled).
using RunHeuristicJobFn = std::function<absl::Status(const HeuristicProbeJob& job,
                                                     const std::function<bool()>& stopping)>;

class HeuristicProbeQueue {
 public:
  enum class Offer { kQueued, kPending, kRateLimited, kOff };

  // `clock`: seconds, monotonic; tests pass their own. `start_thread` false:
  // jobs run only through RunOne (tests).
  explicit HeuristicProbeQueue(RunHeuristicJobFn run, std::function<int64_t()> clock = nullptr,
                               bool start_thread = true);
  ~HeuristicProbeQueue();  // cancels a running job and waits for it

  // Never blocks on a job. `job.gap` must not be null.
  Offer Submit(HeuristicProbeJob job, int interval_s);
  // Runs the oldest queued job on the caller's thread; false when none.
  bool RunOne();
  size_t pending() const;

 private:
  void Loop();

  RunHeuristicJobFn run_;
  std::function<int64_t()> clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HeuristicProbeJob> queue_;
  std::set<std::pair<std::string, uint64_t>> pending_;  // queued or running
  std::map<std::string, int64_t> last_offered_;         // partition -> when
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace xdeep::daemon

#endif  // XDEEP_DAEMON_HEURISTIC_PROBE_QUEUE_H_
