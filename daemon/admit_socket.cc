// The admission socket (see admit_socket.h).
#include "daemon/admit_socket.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "client/admit_wire.h"

namespace xdeep::daemon {
namespace {

using client::AdmitFrame;

// What a client is told when the daemon fails (not a refusal).
AdmitFrame ErrorFrame(const absl::Status& status) {
  AdmitFrame f;
  f.status = static_cast<uint8_t>(status.code());
  f.payload = std::string(status.message());
  if (f.payload.empty()) f.payload = "the daemon could not answer";
  return f;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AdmitSocket>> AdmitSocket::Start(
    const std::string& path, Handler handler, std::chrono::milliseconds io_timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return absl::InvalidArgumentError(fmt::format(
        "admission socket path \"{}\" is empty or longer than {} bytes ([server] admit_socket)",
        path, sizeof addr.sun_path - 1));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::filesystem::remove(path, ec);  // a crashed daemon's socket

  auto self = std::unique_ptr<AdmitSocket>(new AdmitSocket());
  self->path_ = path;
  self->handler_ = std::move(handler);
  self->io_timeout_ = io_timeout;
  self->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  self->stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (self->listen_fd_ < 0 || self->stop_fd_ < 0 ||
      bind(self->listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(self->listen_fd_, 64) != 0) {
    return absl::UnavailableError(fmt::format("cannot listen on admission socket {}: {} "
                                              "([server] admit_socket)",
                                              path, std::strerror(errno)));
  }
  // Anyone may connect; who may be admitted is decided from the peer's uid.
  chmod(path.c_str(), 0666);
  AdmitSocket* raw = self.get();
  self->thread_ = std::thread([raw] { raw->Serve(); });
  return self;
}

AdmitSocket::~AdmitSocket() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  if (stop_fd_ >= 0) close(stop_fd_);
}

void AdmitSocket::Serve() {
  for (;;) {
    pollfd fds[2] = {{.fd = listen_fd_, .events = POLLIN, .revents = 0},
                     {.fd = stop_fd_, .events = POLLIN, .revents = 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("event=admit_socket.failed reason=\"poll: {}\"", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the client gave up already, or out of descriptors for now
    Answer(fd);
    close(fd);
  }
}

void AdmitSocket::Answer(int fd) {
  const auto deadline = std::chrono::steady_clock::now() + io_timeout_;
  std::string error;
  ucred peer{};
  socklen_t size = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || size != sizeof peer) {
    (void)client::WriteAdmitFrame(
        fd, ErrorFrame(absl::UnauthenticatedError("the kernel did not name the caller")),
        deadline, &error);
    return;
  }
  const Caller caller{.uid = peer.uid, .gid = peer.gid, .user = UserName(peer.uid)};
  if (absl::Status may = handler_.may_ask(caller); !may.ok()) {
    spdlog::warn("event=admit_socket.refused uid={} reason=\"{}\"", caller.uid,
                 std::string(may.message()));
    (void)client::WriteAdmitFrame(fd, ErrorFrame(may), deadline, &error);
    return;
  }
  AdmitFrame in;
  if (!client::ReadAdmitFrame(fd, deadline, &in, &error)) {
    spdlog::warn("event=admit_socket.bad_request uid={} reason=\"{}\"", caller.uid, error);
    (void)client::WriteAdmitFrame(
        fd, ErrorFrame(absl::InvalidArgumentError("unreadable request: " + error)), deadline,
        &error);
    return;
  }
  xdeep::v1::AdmitRequest request;
  if (in.status != 0 || !request.ParseFromString(in.payload)) {
    (void)client::WriteAdmitFrame(
        fd, ErrorFrame(absl::InvalidArgumentError("the request is not an AdmitRequest")),
        deadline, &error);
    return;
  }
  xdeep::v1::AdmitResponse response;
  const absl::Status status = handler_.admit(caller, request, &response);
  AdmitFrame out;
  if (status.ok()) {
    response.SerializeToString(&out.payload);
  } else {
    out = ErrorFrame(status);
  }
  if (!client::WriteAdmitFrame(fd, out, deadline, &error)) {
    // The job is admitted only if the lua hears it; a hold bound by an answer
    // nobody read has no job in Slurm, and the ledger's sweep releases it
    // (Daemon::SettleFinishedJobs).
    spdlog::warn("event=admit_socket.answer_lost uid={} reason=\"{}\"", caller.uid, error);
  }
}

}  // namespace xdeep::daemon
