// The admission socket (see admit_socket.h).
#include "daemon/admit_socket.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  // Anyone may connect; who may be admitted is decided from the peer's uid.
  auto listener = UnixListener::Open(path, 64, "admission socket", "[server] admit_socket");
  if (!listener.ok()) return listener.status();
  auto self = std::unique_ptr<AdmitSocket>(new AdmitSocket());
  self->listener_ = *std::move(listener);
  self->handler_ = std::move(handler);
  self->io_timeout_ = io_timeout;
  AdmitSocket* raw = self.get();
  self->thread_ = std::thread([raw] { raw->Serve(); });
  return self;
}

AdmitSocket::~AdmitSocket() {
  if (thread_.joinable()) {
    listener_->Stop();
    thread_.join();
  }
}

void AdmitSocket::Serve() {
  for (int fd; (fd = listener_->Accept()) >= 0;) {
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
