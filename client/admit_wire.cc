// Admission socket framing (see admit_wire.h).
#include "client/admit_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace xdeep::client {

int ConnectLocalSocket(const std::string& path, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    *error = "socket path \"" + path + "\" is empty or longer than " +
             std::to_string(sizeof addr.sun_path - 1) + " bytes";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    *error = "cannot connect to " + path + ": " + std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}
namespace {

// Waits until `fd` is ready for `events` or the deadline passes.
bool WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline,
             std::string* error) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      *error = "no answer in time";
      return false;
    }
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) {
      *error = std::string("poll: ") + std::strerror(errno);
      return false;
    }
  }
}

bool WriteAll(int fd, const char* data, size_t size,
              std::chrono::steady_clock::time_point deadline, std::string* error) {
  while (size > 0) {
    // MSG_NOSIGNAL: a peer that went away is an error here, not SIGPIPE.
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFor(fd, POLLOUT, deadline, error)) return false;
      continue;
    }
    *error = std::string("send: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size, std::chrono::steady_clock::time_point deadline,
             std::string* error) {
  const size_t wanted = size;
  while (size > 0) {
    const ssize_t n = recv(fd, data, size, MSG_DONTWAIT);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      *error = size == wanted ? kFrameStreamEnded : "the connection closed before a whole frame";
      return false;
    }
    if (errno == EAGAIN || errno == EINTR) {
      if (!WaitFor(fd, POLLIN, deadline, error)) return false;
      continue;
    }
    *error = std::string("recv: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool WriteAdmitFrame(int fd, const AdmitFrame& frame,
                     std::chrono::steady_clock::time_point deadline, std::string* error,
                     uint32_t max_bytes) {
  if (frame.payload.size() > max_bytes) {
    *error = "frame too large";
    return false;
  }
  const auto n = static_cast<uint32_t>(frame.payload.size());
  std::string bytes;
  bytes.reserve(5 + n);
  bytes.push_back(static_cast<char>(frame.status));
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(n >> shift));
  bytes += frame.payload;
  return WriteAll(fd, bytes.data(), bytes.size(), deadline, error);
}

bool ReadAdmitFrame(int fd, std::chrono::steady_clock::time_point deadline, AdmitFrame* frame,
                    std::string* error, uint32_t max_bytes) {
  unsigned char head[5];
  if (!ReadAll(fd, reinterpret_cast<char*>(head), sizeof head, deadline, error)) return false;
  const uint32_t n = (uint32_t{head[1]} << 24) | (uint32_t{head[2]} << 16) |
                     (uint32_t{head[3]} << 8) | uint32_t{head[4]};
  if (n > max_bytes) {
    *error = "frame of " + std::to_string(n) + " bytes, more than the " +
             std::to_string(max_bytes) + " allowed";
    return false;
  }
  frame->status = head[0];
  frame->payload.resize(n);
  if (ReadAll(fd, frame->payload.data(), n, deadline, error)) return true;
  if (*error == kFrameStreamEnded) *error = "the connection closed before a whole frame";
  return false;
}

}  // namespace xdeep::client
