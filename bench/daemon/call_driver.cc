// DriveCalls (see call_driver.h).
#include "bench/daemon/call_driver.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

namespace xdeep::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Slot {
  std::unique_ptr<TuningClient> client;
  std::unique_ptr<PendingCall> call;
  Clock::time_point started;
  bool counted = true;
};

}  // namespace

CallStats DriveCalls(const DriveOptions& o,
                     const std::function<std::unique_ptr<PendingCall>()>& make) {
  CallStats total;
  std::mutex mu;
  std::atomic<uint64_t> next{0}, counted{0};
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(o.seconds);
  const int threads = std::clamp(o.threads, 1, o.in_flight);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    // Thread t runs slots t, t + threads, ...
    const int slots = o.in_flight / threads + (t < o.in_flight % threads ? 1 : 0);
    workers.emplace_back([&, slots] {
      grpc::CompletionQueue cq;
      std::vector<Slot> mine(slots);
      CallStats stats;
      auto start = [&](Slot& s, bool count) {
        s.counted = count;
        s.started = Clock::now();
        s.call->Start(*s.client, &cq, next.fetch_add(1));
      };
      // A counted call may start while time is left and the count allows.
      auto may_start = [&] {
        return Clock::now() < end && (o.calls == 0 || counted.fetch_add(1) < o.calls);
      };
      int in_flight = 0;
      for (Slot& s : mine) {
        // Each slot its own channel, as the thread-per-client benchmark had.
        s.client = xdeep::v1::Tuning::NewStub(
            grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
        s.call = make();
        if (o.warm || may_start()) {
          start(s, !o.warm);
          ++in_flight;
        }
      }
      void* tag = nullptr;
      bool ok = false;
      while (in_flight > 0 && cq.Next(&tag, &ok)) {
        auto it = std::find_if(mine.begin(), mine.end(),
                               [tag](const Slot& s) { return s.call.get() == tag; });
        Slot& s = *it;
        if (!s.call->Step(ok)) continue;
        if (s.counted) {
          if (s.call->succeeded) {
            ++stats.ok;
            stats.latency_ms.push_back(
                std::chrono::duration<double, std::milli>(Clock::now() - s.started).count());
          } else {
            ++stats.errors;
            if (stats.first_error.empty()) stats.first_error = s.call->error;
          }
        }
        if (may_start()) {
          start(s, true);
        } else {
          --in_flight;
        }
      }
      cq.Shutdown();
      while (cq.Next(&tag, &ok)) {
      }
      std::lock_guard lock(mu);
      total.ok += stats.ok;
      total.errors += stats.errors;
      if (total.first_error.empty()) total.first_error = stats.first_error;
      total.latency_ms.insert(total.latency_ms.end(), stats.latency_ms.begin(),
                              stats.latency_ms.end());
    });
  }
  for (auto& w : workers) w.join();
  return total;
}

}  // namespace xdeep::bench
