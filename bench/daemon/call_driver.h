// Drives many concurrent calls from a few client threads (asynchronous gRPC:
// each thread keeps its share of the calls in flight on its own completion
// queue). A thread per call, as the benchmark had, spent ~0.16 ms of CPU per
// call polling and switching on the very cores it measured; one thread
// spends ~0.09 ms (2-core VM, bench/README.md).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xdeep/v1/tuning.grpc.pb.h"

namespace xdeep::bench {

// gRPC names its generated client class "Stub".
using TuningClient = xdeep::v1::Tuning::Stub;

// One call in flight. Start() issues it (credential included) on `cq` with
// `this` as the tag; Step() takes each of its completions and says when the
// call is over, with its outcome in succeeded / error.
class PendingCall {
 public:
  virtual ~PendingCall() = default;
  virtual void Start(TuningClient& client, grpc::CompletionQueue* cq, uint64_t n) = 0;
  virtual bool Step(bool ok) = 0;

  bool succeeded = false;
  std::string error;
};

struct CallStats {
  std::vector<double> latency_ms;
  uint64_t ok = 0, errors = 0;
  std::string first_error;
};

struct DriveOptions {
  std::string daemon;  // gRPC target
  int in_flight = 16;  // calls in flight at any time
  int threads = 1;     // client threads sharing them
  std::chrono::duration<double> seconds{1};
  // Each call slot's first call (its connection's set-up) is not counted:
  // short windows would otherwise count every connect among their slowest.
  bool warm = false;
  // > 0: the run ends once that many calls are counted (or `seconds` pass),
  // so that two kinds of window can be compared on equal samples.
  uint64_t calls = 0;
};

// Runs calls made by `make` (one object per slot, reused for its next call)
// until the time or the count is up; every call numbered n = 0, 1, ...
CallStats DriveCalls(const DriveOptions& o,
                     const std::function<std::unique_ptr<PendingCall>()>& make);

}  // namespace xdeep::bench
