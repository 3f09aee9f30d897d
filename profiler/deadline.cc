// Deadlines and a watchdog.
#include "profiler/deadline.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace xdeep::profiler {

absl::Status Deadline::Check(const std::string& what) const {
  if (!Expired()) return absl::OkStatus();
  return absl::DeadlineExceededError(absl::StrCat(what, ": time limit reached"));
}

Watchdog::Watchdog(absl::Duration limit, std::function<void()> on_expiry) {
  const auto wait = absl::ToChronoMilliseconds(limit);
  thread_ = std::thread([this, wait, cb = std::move(on_expiry)] {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, wait, [this] { return cancelled_; })) return;
    fired_ = true;
    lock.unlock();
    cb();
  });
}

Watchdog::~Watchdog() {
  Cancel();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

bool Watchdog::fired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fired_;
}

}  // namespace xdeep::profiler
