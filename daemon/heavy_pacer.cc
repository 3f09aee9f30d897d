// HeavyPacer (see heavy_pacer.h).
#include "daemon/heavy_pacer.h"

#include <time.h>

#include <algorithm>

namespace xdeep::daemon {

HeavyPacer::HeavyPacer(Options options) : options_(std::move(options)) {}

void HeavyPacer::NoteOrdinary() {
  last_ordinary_ns_.store(options_.now().time_since_epoch() / std::chrono::nanoseconds(1),
                          std::memory_order_relaxed);
}

bool HeavyPacer::OrdinaryArriving(Clock::time_point now) const {
  const int64_t last = last_ordinary_ns_.load(std::memory_order_relaxed);
  return now.time_since_epoch() / std::chrono::nanoseconds(1) - last <
         options_.quiet_after / std::chrono::nanoseconds(1);
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void HeavyPacer::Checkpoint(Clock::time_point until, const std::function<bool()>& gone) {
  std::lock_guard lock(mu_);
  const double burst_s = std::chrono::duration<double>(options_.burst).count();
  // Credit accrues at `share` per second of wall time, up to the burst; the
  // CPU used since the last checkpoint is spent from it.
  auto accrue = [&](Clock::time_point now) {
    credit_s_ =
        std::min(burst_s, credit_s_ + options_.share *
                                          std::chrono::duration<double>(now - last_wall_).count());
    last_wall_ = now;
  };
  Clock::time_point now = options_.now();
  const double cpu = options_.thread_cpu_s();
  if (last_cpu_s_ < 0) {  // the first call: what the thread used before is not owed
    credit_s_ = burst_s;
    last_wall_ = now;
    last_cpu_s_ = cpu;
  }
  accrue(now);
  credit_s_ -= std::max(0.0, cpu - last_cpu_s_);
  last_cpu_s_ = cpu;
  while (credit_s_ < 0) {
    // What was used while nobody else asked is not owed afterwards.
    if (!OrdinaryArriving(now)) {
      credit_s_ = burst_s;
      return;
    }
    if (now >= until || gone()) return;
    const auto owed = std::chrono::duration_cast<std::chrono::microseconds>(
        std::chrono::duration<double>(-credit_s_ / options_.share));
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - now);
    const auto nap = std::max(std::chrono::microseconds(1), std::min({owed, options_.nap, left}));
    options_.sleep(nap);
    now = options_.now();
    accrue(now);
  }
}

}  // namespace xdeep::daemon
