// The client socket: a local Unix socket beside the daemon's gRPC socket on
// which srun's plugin and xdeep-step-report ask Tune and Report without
// gRPC's runtime (issue #27: a tuned launch maps protobuf and MUNGE only).
// Framing in client/socket_daemon_client.h. Who asks is what the request's
// MUNGE credential says, verified exactly as on the RPC (TuningService::TuneTo,
// ReportFrom); the kernel's word (SO_PEERCRED) only bounds how many
// connections each uid may hold, so that nobody can tie up the daemon's
// threads with silent connections and stall other users.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/tune_stream.h"
#include "daemon/unix_listener.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

class ClientSocket {
 public:
  struct Handler {
    // TuningService::TuneTo.
    std::function<void(const xdeep::v1::TuneRequest&, std::chrono::system_clock::time_point,
                       std::shared_ptr<TuneStream>, const std::string& peer)>
        tune;
    // TuningService::ReportFrom.
    std::function<absl::Status(const xdeep::v1::ReportRequest&, xdeep::v1::ReportResponse*)>
        report;
  };
  struct Limits {
    std::chrono::milliseconds io_timeout{5000};  // to send a request, to take each answer frame
    int per_user = 16;                           // connections one uid may hold at once
    int total = 512;                             // connections at once
  };

  // Listens on `path` (a stale socket there is replaced) and serves until destroyed.
  static absl::StatusOr<std::unique_ptr<ClientSocket>> Start(const std::string& path,
                                                             Handler handler, Limits limits);

  // Stops accepting, ends every connection (their work is cancelled) and
  // removes the socket.
  ~ClientSocket();

  ClientSocket(const ClientSocket&) = delete;
  ClientSocket& operator=(const ClientSocket&) = delete;

 private:
  ClientSocket() = default;
  void Accept();
  // One connection's request and answer, on its own thread.
  void Serve(int fd, uint32_t uid);
  void ServeTune(int fd, uint32_t uid, const std::string& payload, uint32_t timeout_ms);
  void ServeReport(int fd, const std::string& payload);

  std::unique_ptr<UnixListener> listener_;
  Handler handler_;
  Limits limits_;
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::map<uint32_t, int> open_;  // connections per uid
  int open_total_ = 0;
};

}  // namespace xdeep::daemon
