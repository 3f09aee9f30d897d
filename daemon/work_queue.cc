// WorkQueue (see work_queue.h).
#include "daemon/work_queue.h"

#include <sched.h>
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

void WorkQueue::Hurry() {
  std::lock_guard lock(mu_);
  sched_param param{};
  // Allowed without privileges: the nice value stays where it was.
  for (pid_t tid : tids_) sched_setscheduler(tid, SCHED_OTHER, &param);
}

void WorkQueue::Loop() {
  // Linux keeps a scheduling policy per thread: this one alone runs lower.
  // SCHED_IDLE, not only a nice value: a nice-19 thread keeps the core it
  // holds until its slice ends (~1.5 ms here), a wait every ordinary request
  // woken on that core paid; an idle-policy thread is preempted at once.
  if (nice_ > 0) {
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice_);
    sched_param param{};
    sched_setscheduler(0, SCHED_IDLE, &param);
    std::lock_guard lock(mu_);
    tids_.push_back(gettid());
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
