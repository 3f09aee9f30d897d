// Where one Tune request's events go, whichever transport brought it: the
// gRPC stream (tuning_service.cc) or the local client socket
// (client_socket.h). The worker computing the decision talks only to this.
#pragma once

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

class TuneStream {
 public:
  virtual ~TuneStream() = default;
  // Sends one event (dropped once the client is gone).
  virtual void Push(xdeep::v1::TuneEvent event) = 0;
  // Ends the stream with `status`; nothing is sent after.
  virtual void Finish(const absl::Status& status) = 0;
  // The last event and the end together (gRPC sends both in one operation).
  virtual void FinishWith(xdeep::v1::TuneEvent last, const absl::Status& status) {
    Push(std::move(last));
    Finish(status);
  }
  // The client went away or cancelled (its deadline passed, Ctrl-C).
  virtual bool cancelled() = 0;
  // When it did (steady clock, ns; 0: it has not).
  virtual int64_t cancelled_at_ns() const = 0;
};

}  // namespace xdeep::daemon
