// HeuristicProbeQueue (heuristic_probe_queue.h).
#include "daemon/heuristic_probe_queue.h"

#include <chrono>

#include "spdlog/spdlog.h"

namespace xdeep::daemon {

HeuristicProbeQueue::HeuristicProbeQueue(RunHeuristicJobFn run, std::function<int64_t()> clock,
                                         bool start_thread)
    : run_(std::move(run)), clock_(clock ? std::move(clock) : [] {
        return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
      }) {
  if (start_thread) worker_ = std::thread([this] { Loop(); });
}

HeuristicProbeQueue::~HeuristicProbeQueue() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

HeuristicProbeQueue::Offer HeuristicProbeQueue::Submit(HeuristicProbeJob job, int interval_s) {
  if (interval_s <= 0) return Offer::kOff;
  std::lock_guard lock(mu_);
  if (stopping_) return Offer::kOff;
  if (pending_.contains({job.partition, job.gap->shape_set})) return Offer::kPending;
  const int64_t now = clock_();
  auto last = last_offered_.find(job.partition);
  if (last != last_offered_.end() && now - last->second < interval_s) return Offer::kRateLimited;
  last_offered_[job.partition] = now;
  pending_.insert({job.partition, job.gap->shape_set});
  queue_.push_back(std::move(job));
  cv_.notify_one();
  return Offer::kQueued;
}

bool HeuristicProbeQueue::RunOne() {
  HeuristicProbeJob job;
  {
    std::lock_guard lock(mu_);
    if (queue_.empty()) return false;
    job = std::move(queue_.front());
    queue_.pop_front();
  }
  auto stopping = [this] {
    std::lock_guard lock(mu_);
    return stopping_;
  };
  const absl::Status s = run_(job, stopping);
  if (s.ok()) {
    spdlog::info("event=probe.heuristic_done partition={} shapes={}", job.partition,
                 job.gap->missing.size());
  } else {
    spdlog::warn("event=probe.heuristic_failed partition={} shapes={} reason=\"{}\"", job.partition,
                 job.gap->missing.size(), std::string(s.message()));
  }
  std::lock_guard lock(mu_);
  pending_.erase({job.partition, job.gap->shape_set});
  return true;
}

size_t HeuristicProbeQueue::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

void HeuristicProbeQueue::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
    }
    RunOne();
  }
}

}  // namespace xdeep::daemon
