// DaemonClient over the daemon's local client socket (daemon/client_socket.h):
// the same requests as the gRPC client, each with a fresh MUNGE credential,
// as frames of client/admit_wire.h on a Unix socket beside the daemon's gRPC
// socket. No gRPC runtime: srun's plugin maps protobuf and MUNGE only, and
// xdeep-step-report skips gRPC's channel (issue #27: a tuned launch's cost).
// One request per connection:
//   request  frame status = the method (kTuneMethod, kReportMethod), payload =
//            the client's timeout in ms (u32, big-endian) + the request message;
//   Tune     answers TuneEvent frames (status 0); the connection closes after
//            the last; a failure is a frame with a nonzero absl status code
//            and its text;
//   Report   answers one frame: ReportResponse (status 0) or the failure.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "client/daemon_client.h"
#include "client/munge_credential.h"

namespace xdeep::client {

inline constexpr uint8_t kTuneMethod = 1;
inline constexpr uint8_t kReportMethod = 2;
// A workload's TOML travels in the request: gRPC's default limit.
inline constexpr uint32_t kClientFrameMaxBytes = 4 * 1024 * 1024;

// The client socket beside a daemon address "unix:///run/xdeep/xdeepd.sock"
// (its path + ".client", the daemon's default [server] client_socket); empty
// for other addresses (TCP: gRPC only).
inline std::string ClientSocketPath(const std::string& address) {
  constexpr std::string_view kUnixPrefix = "unix://";
  if (!address.starts_with(kUnixPrefix)) return "";
  return address.substr(kUnixPrefix.size()) + ".client";
}

// Each request's credential: MUNGE's, unless a test of the transport alone
// supplies its own (libmunge retries for ~2 s where no munged runs).
using CredentialSource = std::function<std::string()>;

// A client for the socket at `path` (nothing is connected before a request).
std::unique_ptr<DaemonClient> ConnectDaemonSocket(const std::string& path,
                                                  CredentialSource credential = MungeCredential);

}  // namespace xdeep::client
