// DaemonClient over the daemon's client socket (see socket_daemon_client.h).
#include "client/socket_daemon_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "client/admit_wire.h"
#include "client/tune_proto.h"

namespace xdeep::client {
namespace {

namespace v1 = xdeep::v1;
using Clock = std::chrono::steady_clock;

// Closes the connection however the request ends.
class Connection {
 public:
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }
  bool Open(const std::string& path, ClientError* error) {
    std::string why;
    fd_ = ConnectLocalSocket(path, &why);
    if (fd_ < 0) {
      *error = {ClientError::kUnavailable, why};
      return false;
    }
    return true;
  }
  // Sends `method` with the time left until `deadline` and the message.
  bool Send(uint8_t method, const google::protobuf::MessageLite& message,
            Clock::time_point deadline, ClientError* error) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const auto ms = static_cast<uint32_t>(std::clamp<int64_t>(left.count(), 1, 1 << 30));
    AdmitFrame frame{.status = method, .payload = {}};
    for (int shift = 24; shift >= 0; shift -= 8)
      frame.payload.push_back(static_cast<char>(ms >> shift));
    if (!message.AppendToString(&frame.payload)) {
      *error = {ClientError::kUnavailable, "cannot encode the request"};
      return false;
    }
    std::string why;
    if (WriteAdmitFrame(fd_, frame, deadline, &why, kClientFrameMaxBytes)) return true;
    // The daemon may have turned the connection away before reading it (too
    // many of this user's connections open): its frame says why.
    AdmitFrame refusal;
    std::string unread;
    if (ReadAdmitFrame(fd_, deadline, &refusal, &unread, kClientFrameMaxBytes) &&
        refusal.status != 0) {
      *error = ErrorOfStatus(refusal.status, refusal.payload);
    } else {
      *error = {ClientError::kUnavailable, why};
    }
    return false;
  }
  // The next frame; `ended` when the daemon closed the connection between frames.
  bool Read(Clock::time_point deadline, AdmitFrame* frame, bool* ended, ClientError* error) {
    std::string why;
    *ended = false;
    if (ReadAdmitFrame(fd_, deadline, frame, &why, kClientFrameMaxBytes)) return true;
    *ended = why == kFrameStreamEnded;
    *error = {ClientError::kUnavailable, why};
    return false;
  }

 private:
  int fd_ = -1;
};

class SocketDaemonClient final : public DaemonClient {
 public:
  SocketDaemonClient(std::string path, CredentialSource credential)
      : path_(std::move(path)), credential_(std::move(credential)) {}

  bool Tune(const TuneQuery& q, Clock::time_point deadline, const ProgressCallback& progress,
            TuneAnswer* answer, ClientError* error) override {
    Connection c;
    if (!c.Open(path_, error) ||
        !c.Send(kTuneMethod, ToTuneRequest(q, credential_()), deadline, error)) {
      return false;
    }
    bool decided = false;
    for (;;) {
      AdmitFrame frame;
      bool ended = false;
      if (!c.Read(deadline, &frame, &ended, error)) {
        if (!ended) return false;
        return UsableAnswer(*answer, decided, error);
      }
      if (frame.status != 0) {
        *error = ErrorOfStatus(frame.status, frame.payload);
        return false;
      }
      v1::TuneEvent event;
      if (!event.ParseFromString(frame.payload)) {
        *error = {ClientError::kUnavailable, "the daemon sent an unreadable event"};
        return false;
      }
      ReadTuneEvent(event, progress, answer, &decided);
    }
  }

  bool Report(const ReportQuery& q, Clock::time_point deadline, ClientError* error) override {
    Connection c;
    if (!c.Open(path_, error) ||
        !c.Send(kReportMethod, ToReportRequest(q, credential_()), deadline, error)) {
      return false;
    }
    AdmitFrame frame;
    bool ended = false;
    if (!c.Read(deadline, &frame, &ended, error)) return false;
    if (frame.status != 0) {
      *error = ErrorOfStatus(frame.status, frame.payload);
      return false;
    }
    v1::ReportResponse response;
    if (!response.ParseFromString(frame.payload)) {
      *error = {ClientError::kUnavailable, "the daemon sent an unreadable answer"};
      return false;
    }
    return true;
  }

 private:
  std::string path_;
  CredentialSource credential_;
};

}  // namespace

std::unique_ptr<DaemonClient> ConnectDaemonSocket(const std::string& path,
                                                  CredentialSource credential) {
  return std::make_unique<SocketDaemonClient>(path, std::move(credential));
}

}  // namespace xdeep::client
