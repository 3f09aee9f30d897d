// The admission socket: a local Unix socket on which slurmctld's xdeep-admit
// asks whether a job may be submitted (client/admit_wire.h). The caller is
// who the kernel says is at the other end (SO_PEERCRED), which nobody can
// forge, so the check needs neither MUNGE nor gRPC (issue #27: <= 3 ms per
// strict submission). Everyone may connect; anyone but a controller user is
// refused as soon as the connection is accepted, before a byte is read, so
// no user can hold the one serving thread (slurmctld submits one job at a
// time) and make slurmctld's checks time out.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/identity.h"
#include "daemon/unix_listener.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

class AdmitSocket {
 public:
  struct Handler {
    // Whether `caller` may ask at all (TuningService::MayAdmit).
    std::function<absl::Status(const Caller&)> may_ask;
    // The answer (TuningService::AdmitAs).
    std::function<absl::Status(const Caller&, const xdeep::v1::AdmitRequest&,
                               xdeep::v1::AdmitResponse*)>
        admit;
  };

  // Listens on `path` (a stale socket there is replaced) and serves until
  // destroyed. A controller user gets `io_timeout` to send its request and
  // read the answer.
  static absl::StatusOr<std::unique_ptr<AdmitSocket>> Start(
      const std::string& path, Handler handler,
      std::chrono::milliseconds io_timeout = std::chrono::seconds(5));

  // Stops serving (a request in progress finishes) and removes the socket.
  ~AdmitSocket();

  AdmitSocket(const AdmitSocket&) = delete;
  AdmitSocket& operator=(const AdmitSocket&) = delete;

 private:
  AdmitSocket() = default;
  void Serve();
  void Answer(int fd);

  std::unique_ptr<UnixListener> listener_;
  Handler handler_;
  std::chrono::milliseconds io_timeout_{0};
  std::thread thread_;
};

}  // namespace xdeep::daemon
