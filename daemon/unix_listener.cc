// A listening local Unix socket (see unix_listener.h).
#include "daemon/unix_listener.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

namespace xdeep::daemon {

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Open(const std::string& path,
                                                                  int backlog,
                                                                  std::string_view what,
                                                                  std::string_view setting) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return absl::InvalidArgumentError(fmt::format(
        "{} path \"{}\" is empty or longer than {} bytes ({})", what, path,
        sizeof addr.sun_path - 1, setting));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::filesystem::remove(path, ec);  // a crashed daemon's socket

  auto self = std::unique_ptr<UnixListener>(new UnixListener());
  self->path_ = path;
  self->what_ = std::string(what);
  self->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  self->stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (self->listen_fd_ < 0 || self->stop_fd_ < 0 ||
      bind(self->listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(self->listen_fd_, backlog) != 0) {
    return absl::UnavailableError(
        fmt::format("cannot listen on {} {}: {} ({})", what, path, std::strerror(errno), setting));
  }
  chmod(path.c_str(), 0666);
  return self;
}

UnixListener::~UnixListener() {
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  if (stop_fd_ >= 0) close(stop_fd_);
}

int UnixListener::Accept() {
  for (;;) {
    pollfd fds[2] = {{.fd = listen_fd_, .events = POLLIN, .revents = 0},
                     {.fd = stop_fd_, .events = POLLIN, .revents = 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("event=socket.failed socket=\"{}\" reason=\"poll: {}\"", what_,
                    std::strerror(errno));
      return -1;
    }
    if (fds[1].revents != 0) return -1;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return fd;
    // The client gave up already, or out of descriptors for now.
  }
}

void UnixListener::Stop() {
  const uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof one);
}

}  // namespace xdeep::daemon
