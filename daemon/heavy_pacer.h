// Keeps the heavy lane to a share of one core while ordinary Tune requests
// keep arriving. A low priority alone does not: Linux schedules a process's
// threads as one group against other processes (autogroup, or the service's
// cgroup), so a nice-19 thread that runs while the ordinary threads wait for
// MUNGE or their clients spends the group's time, and the ordinary threads
// then wait behind other processes' (perf sched on the 2-core VM: the heavy
// thread got half a core at load 7, the workers' run-queue waits reached
// 64 ms). Only a sleeping thread leaves the group's time to the others.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace xdeep::daemon {

// CPU seconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

class HeavyPacer {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    // The heavy lane's CPU per second of wall time while ordinary requests
    // arrive, and what it may run ahead of that at once.
    double share = 0.2;
    std::chrono::microseconds burst{5000};
    // Ordinary requests count as arriving this long after the last one.
    std::chrono::milliseconds quiet_after{100};
    // The longest single sleep: a cancelled request's stop is noticed within it.
    std::chrono::microseconds nap{5000};
    // Tests replace the clocks and the sleep.
    std::function<Clock::time_point()> now = [] { return Clock::now(); };
    std::function<double()> thread_cpu_s = ThreadCpuSeconds;
    std::function<void(std::chrono::microseconds)> sleep = [](std::chrono::microseconds d) {
      std::this_thread::sleep_for(d);
    };
  };

  HeavyPacer() : HeavyPacer(Options()) {}
  explicit HeavyPacer(Options options);

  // An ordinary request arrived (any thread: one relaxed store).
  void NoteOrdinary();

  // On the heavy lane's thread, between and inside its requests: charges the
  // CPU this thread used since its last call and, while ordinary requests
  // keep arriving, sleeps until the lane is back within its share. Never
  // past `until` (the request's deadline: it is then stopped at once, not
  // late) and never on once `gone()` (the client went away).
  void Checkpoint(Clock::time_point until, const std::function<bool()>& gone);

 private:
  bool OrdinaryArriving(Clock::time_point now) const;

  Options options_;
  std::atomic<int64_t> last_ordinary_ns_{INT64_MIN / 2};
  std::mutex mu_;  // the heavy lane's account (one thread: never contended)
  double credit_s_ = 0;
  double last_cpu_s_ = -1;
  Clock::time_point last_wall_{};
};

}  // namespace xdeep::daemon
