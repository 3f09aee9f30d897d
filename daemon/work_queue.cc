// WorkQueue (see work_queue.h).
#include "daemon/work_queue.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

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
  if (nice_ > 0) {
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice_);
    // And a short slice (EEVDF, Linux 6.12+; ignored before): a nice thread
    // otherwise keeps the core it holds for its whole slice, ~1.5 ms here,
    // a wait every ordinary request woken on that core would pay.
    struct {
      uint32_t size, sched_policy;
      uint64_t sched_flags;
      int32_t sched_nice;
      uint32_t sched_priority;
      uint64_t sched_runtime, sched_deadline, sched_period;
      uint32_t sched_util_min, sched_util_max;
    } attr{};
    attr.size = sizeof attr;
    attr.sched_policy = SCHED_OTHER;
    attr.sched_nice = nice_;
    attr.sched_runtime = 100'000;  // ns: the shortest slice the kernel takes
    syscall(SYS_sched_setattr, 0, &attr, 0u);
  }
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
