// Deadlines and a watchdog: how every probe stays inside its time limit.
//
// Probes never block without a bound: device waits poll an event against a Deadline,
// NCCL calls run on non-blocking communicators that are aborted when it passes. The
// Watchdog is the last resort for a call that ignores all of that (a wedged driver
// call): it fires a callback, which in xdeep-probe writes the report and exits.
#ifndef XDEEP_PROFILER_DEADLINE_H_
#define XDEEP_PROFILER_DEADLINE_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace xdeep::profiler {

class Deadline {
 public:
  static Deadline In(absl::Duration d) { return Deadline(absl::Now() + d); }
  static Deadline Never() { return Deadline(absl::InfiniteFuture()); }
  explicit Deadline(absl::Time end) : end_(end) {}

  bool Expired() const { return absl::Now() >= end_; }
  absl::Duration Remaining() const { return std::max(end_ - absl::Now(), absl::ZeroDuration()); }
  absl::Time end() const { return end_; }
  // The earlier of the two.
  Deadline Min(const Deadline& other) const { return Deadline(std::min(end_, other.end_)); }
  // DeadlineExceeded naming what was being waited for, or OK.
  absl::Status Check(const std::string& what) const;

 private:
  absl::Time end_;
};

// Calls `on_expiry` once from its own thread if not destroyed (or Cancel()ed) within
// `limit`. Destruction joins the thread, so the callback never outlives its owner.
class Watchdog {
 public:
  Watchdog(absl::Duration limit, std::function<void()> on_expiry);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void Cancel();
  bool fired() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  bool fired_ = false;
  std::thread thread_;
};

}  // namespace xdeep::profiler

#endif  // XDEEP_PROFILER_DEADLINE_H_
