// WorkQueue (see work_queue.h).
#include "daemon/work_queue.h"

#include <sys/resource.h>
#include <unistd.h>

namespace xdeep::daemon {

WorkQueue::WorkQueue(int threads, int nice) : nice_(nice) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkQueue::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void WorkQueue::Loop() {
  // Linux keeps a nice value per thread: this one alone runs lower.
  if (nice_ > 0) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice_);
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace xdeep::daemon
