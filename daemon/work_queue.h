// A fixed pool of threads for Tune computations, so gRPC's callback threads
// never block on the search. Joined on destruction after draining. A pool
// with a positive `nice` runs below the daemon's other threads (the heavy
// lane: the kernel gives it what they leave).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace xdeep::daemon {

class WorkQueue {
 public:
  explicit WorkQueue(int threads, int nice = 0);
  ~WorkQueue();  // runs what is queued, then joins
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Post(std::function<void()> task);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  int nice_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace xdeep::daemon
