// The admission socket's client (see admit_client.h).
#include "client/admit_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "client/admit_wire.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::client {
namespace {

// Closes the socket on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool Unavailable(const std::string& message, ClientError* error) {
  error->kind = ClientError::kUnavailable;
  error->message = message;
  return false;
}

}  // namespace

bool AskAdmission(const std::string& socket_path, const AdmitQuery& q,
                  std::chrono::steady_clock::time_point deadline, AdmitAnswer* answer,
                  ClientError* error) {
  std::string why;
  Fd sock{ConnectLocalSocket(socket_path, &why)};
  if (sock.fd < 0) return Unavailable("admission socket: " + why, error);
  xdeep::v1::AdmitRequest req;
  req.set_token(q.token);
  req.set_job_uid(q.job_uid);
  req.set_partition(q.partition);
  req.set_nodes(q.nodes);
  req.set_array(q.array);
  req.set_tres_per_node(q.tres_per_node);
  req.set_tres_per_job(q.tres_per_job);
  req.set_tres_per_task(q.tres_per_task);
  req.set_heterogeneous(q.heterogeneous);
  req.set_time_limit_s(q.time_limit_s);
  req.set_account(q.account);
  AdmitFrame out, in;
  req.SerializeToString(&out.payload);
  const bool sent = WriteAdmitFrame(sock.fd, out, deadline, &why);
  // A caller the daemon refuses is answered on accept, before the request is
  // read, and the connection closed: the send may fail, the answer is there.
  std::string unread;
  if (!ReadAdmitFrame(sock.fd, deadline, &in, &unread)) {
    return Unavailable(sent ? unread : why, error);
  }
  if (in.status != 0) {
    switch (static_cast<absl::StatusCode>(in.status)) {
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kPermissionDenied:
      case absl::StatusCode::kUnauthenticated:
        error->kind = ClientError::kRefused;
        break;
      default:
        error->kind = ClientError::kUnavailable;
    }
    error->message = in.payload;
    return false;
  }
  xdeep::v1::AdmitResponse resp;
  if (!resp.ParseFromString(in.payload)) return Unavailable("an unreadable answer", error);
  answer->admitted = resp.admitted();
  answer->reason = resp.reason();
  answer->decision_id = resp.decision_id();
  return true;
}

}  // namespace xdeep::client
