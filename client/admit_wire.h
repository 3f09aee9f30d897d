// The admission socket's framing. slurmctld's job_submit.lua runs
// xdeep-admit, which asks xdeepd over a local Unix socket beside the daemon's
// gRPC socket; the kernel (SO_PEERCRED) says who asks, so neither gRPC's
// runtime nor a MUNGE round trip is on the path of every strict submission
// (issue #27: the check must cost <= 3 ms). One request per connection, each
// way one frame:
//   u8 status (absl::StatusCode; 0 in a request), u32 length (big-endian),
//   then `length` bytes: AdmitRequest / AdmitResponse (protobuf) when the
//   status is 0, else the refusal's text.
// The daemon's client socket (socket_daemon_client.h) uses the same frames.
// Plain POSIX: the daemon, xdeep-admit and the plugin's socket client share it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace xdeep::client {

// Larger frames are refused: an AdmitRequest is a few hundred bytes.
inline constexpr uint32_t kAdmitFrameMaxBytes = 64 * 1024;

struct AdmitFrame {
  uint8_t status = 0;
  std::string payload;
};

// Connects to the local socket at `path` (close-on-exec): the descriptor,
// or -1 and `error`. A stopped daemon may still complete the connection (the
// kernel's backlog): the caller's deadline, not connect, notices it.
int ConnectLocalSocket(const std::string& path, std::string* error);

// Writes one frame; false and `error` when the peer is gone, the frame is
// over `max_bytes` or the write cannot finish before `deadline`.
bool WriteAdmitFrame(int fd, const AdmitFrame& frame,
                     std::chrono::steady_clock::time_point deadline, std::string* error,
                     uint32_t max_bytes = kAdmitFrameMaxBytes);

// ReadAdmitFrame's error when the peer closed the connection between frames.
inline constexpr char kFrameStreamEnded[] = "the connection closed";

// Reads one frame; false and `error` (end of stream, a frame over
// `max_bytes`, `deadline` passed).
bool ReadAdmitFrame(int fd, std::chrono::steady_clock::time_point deadline, AdmitFrame* frame,
                    std::string* error, uint32_t max_bytes = kAdmitFrameMaxBytes);

}  // namespace xdeep::client
