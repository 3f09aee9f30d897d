// The client socket (see client_socket.h).
#include "daemon/client_socket.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>

#include "client/admit_wire.h"
#include "client/socket_daemon_client.h"

namespace xdeep::daemon {
namespace {

namespace v1 = xdeep::v1;
using client::AdmitFrame;
using Clock = std::chrono::steady_clock;

AdmitFrame ErrorFrame(const absl::Status& status) {
  AdmitFrame f;
  f.status = static_cast<uint8_t>(status.code());
  f.payload = std::string(status.message());
  if (f.payload.empty()) f.payload = "the daemon could not answer";
  return f;
}

bool Send(int fd, const AdmitFrame& frame, std::chrono::milliseconds timeout) {
  std::string error;
  return client::WriteAdmitFrame(fd, frame, Clock::now() + timeout, &error,
                                 client::kClientFrameMaxBytes);
}

int64_t NowNs() { return Clock::now().time_since_epoch() / std::chrono::nanoseconds(1); }

// The worker's events, waiting for the connection's thread to write them.
class SocketTuneStream final : public TuneStream {
 public:
  void Push(v1::TuneEvent event) override {
    std::lock_guard lock(mu_);
    if (finish_) return;
    events_.push_back(std::move(event));
    ready_.notify_one();
  }
  void Finish(const absl::Status& status) override {
    std::lock_guard lock(mu_);
    if (finish_) return;
    finish_ = status;
    ready_.notify_one();
  }
  bool cancelled() override { return cancelled_at_ns_.load(std::memory_order_relaxed) != 0; }
  int64_t cancelled_at_ns() const override {
    return cancelled_at_ns_.load(std::memory_order_relaxed);
  }
  void Cancel() {
    int64_t none = 0;
    cancelled_at_ns_.compare_exchange_strong(none, NowNs(), std::memory_order_relaxed);
  }
  // Waits up to `wait` for events; takes them, and the end when it came.
  void Take(std::chrono::milliseconds wait, std::deque<v1::TuneEvent>* events,
            std::optional<absl::Status>* finish) {
    std::unique_lock lock(mu_);
    ready_.wait_for(lock, wait, [&] { return !events_.empty() || finish_.has_value(); });
    events->swap(events_);
    if (events_.empty() && finish_) *finish = finish_;
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<v1::TuneEvent> events_;
  std::optional<absl::Status> finish_;
  std::atomic<int64_t> cancelled_at_ns_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<ClientSocket>> ClientSocket::Start(const std::string& path,
                                                                  Handler handler, Limits limits) {
  // Every user's srun asks here; MUNGE says who each one is.
  auto listener = UnixListener::Open(path, 128, "client socket", "[server] client_socket");
  if (!listener.ok()) return listener.status();
  auto self = std::unique_ptr<ClientSocket>(new ClientSocket());
  self->listener_ = *std::move(listener);
  self->handler_ = std::move(handler);
  self->limits_ = limits;
  ClientSocket* raw = self.get();
  self->accept_thread_ = std::thread([raw] { raw->Accept(); });
  return self;
}

ClientSocket::~ClientSocket() {
  if (accept_thread_.joinable()) {
    listener_->Stop();
    accept_thread_.join();
    // Connections see the stop signal too: wait until the last has ended.
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return open_total_ == 0; });
  }
}

void ClientSocket::Accept() {
  for (int fd; (fd = listener_->Accept()) >= 0;) {
    ucred peer{};
    socklen_t size = sizeof peer;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || size != sizeof peer) {
      close(fd);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      int& mine = open_[peer.uid];
      if (mine >= limits_.per_user || open_total_ >= limits_.total) {
        spdlog::warn("event=client_socket.busy uid={} open={} total={}", peer.uid, mine,
                     open_total_);
        (void)Send(fd,
                   ErrorFrame(absl::UnavailableError(fmt::format(
                       "uid {} holds {} connections to the daemon already; try again", peer.uid,
                       mine))),
                   std::chrono::milliseconds(100));
        close(fd);
        continue;
      }
      ++mine;
      ++open_total_;
    }
    std::thread([this, fd, uid = peer.uid] {
      Serve(fd, uid);
      close(fd);
      std::lock_guard lock(mu_);
      if (--open_[uid] == 0) open_.erase(uid);
      if (--open_total_ == 0) idle_.notify_all();
    }).detach();
  }
}

void ClientSocket::Serve(int fd, uint32_t uid) {
  std::string error;
  AdmitFrame in;
  if (!client::ReadAdmitFrame(fd, Clock::now() + limits_.io_timeout, &in, &error,
                              client::kClientFrameMaxBytes)) {
    spdlog::warn("event=client_socket.bad_request uid={} reason=\"{}\"", uid, error);
    (void)Send(fd, ErrorFrame(absl::InvalidArgumentError("unreadable request: " + error)),
               limits_.io_timeout);
    return;
  }
  if (in.payload.size() < 4) {
    (void)Send(fd, ErrorFrame(absl::InvalidArgumentError("a request without its timeout")),
               limits_.io_timeout);
    return;
  }
  uint32_t timeout_ms = 0;
  for (int i = 0; i < 4; ++i) timeout_ms = (timeout_ms << 8) | static_cast<uint8_t>(in.payload[i]);
  const std::string message = in.payload.substr(4);
  if (in.status == client::kTuneMethod) {
    ServeTune(fd, uid, message, timeout_ms);
  } else if (in.status == client::kReportMethod) {
    ServeReport(fd, message);
  } else {
    (void)Send(fd,
               ErrorFrame(absl::InvalidArgumentError(
                   fmt::format("unknown request kind {}", static_cast<int>(in.status)))),
               limits_.io_timeout);
  }
}

void ClientSocket::ServeReport(int fd, const std::string& payload) {
  v1::ReportRequest request;
  if (!request.ParseFromString(payload)) {
    (void)Send(fd, ErrorFrame(absl::InvalidArgumentError("the request is not a ReportRequest")),
               limits_.io_timeout);
    return;
  }
  v1::ReportResponse response;
  const absl::Status status = handler_.report(request, &response);
  AdmitFrame out;
  if (status.ok()) {
    response.SerializeToString(&out.payload);
  } else {
    out = ErrorFrame(status);
  }
  (void)Send(fd, out, limits_.io_timeout);
}

void ClientSocket::ServeTune(int fd, uint32_t uid, const std::string& payload,
                             uint32_t timeout_ms) {
  v1::TuneRequest request;
  if (!request.ParseFromString(payload)) {
    (void)Send(fd, ErrorFrame(absl::InvalidArgumentError("the request is not a TuneRequest")),
               limits_.io_timeout);
    return;
  }
  auto stream = std::make_shared<SocketTuneStream>();
  const auto waited = std::chrono::milliseconds(std::max<uint32_t>(timeout_ms, 1));
  handler_.tune(request, std::chrono::system_clock::now() + waited, stream,
                fmt::format("client_socket:uid={}", uid));
  // The worker stops at the client's deadline; past it and a grace, so does this thread.
  const auto give_up = Clock::now() + waited + std::chrono::seconds(1);
  for (;;) {
    std::deque<v1::TuneEvent> events;
    std::optional<absl::Status> finish;
    stream->Take(std::chrono::milliseconds(10), &events, &finish);
    for (const v1::TuneEvent& event : events) {
      AdmitFrame out;
      event.SerializeToString(&out.payload);
      if (!Send(fd, out, limits_.io_timeout)) {
        stream->Cancel();
        return;
      }
    }
    if (finish) {
      if (!finish->ok()) (void)Send(fd, ErrorFrame(*finish), limits_.io_timeout);
      return;
    }
    // The client hung up (Ctrl-C, its own deadline: a closed connection, not
    // one that only closed its sending side), the daemon stops, or the
    // deadline is long past: the worker's search stops too.
    pollfd fds[2] = {{.fd = fd, .events = 0, .revents = 0},
                     {.fd = listener_->stop_fd(), .events = POLLIN, .revents = 0}};
    const bool gone = poll(fds, 2, 0) > 0 &&
                      ((fds[0].revents & (POLLHUP | POLLERR)) != 0 || fds[1].revents != 0);
    if (gone || Clock::now() > give_up) {
      stream->Cancel();
      return;
    }
  }
}

}  // namespace xdeep::daemon
