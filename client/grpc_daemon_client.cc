// The gRPC + MUNGE implementation of DaemonClient, linked into the CLI and
// the tools, and into the module the plugin loads only on demand.
#include <grpcpp/grpcpp.h>

#include "client/daemon_client.h"
#include "client/munge_credential.h"
#include "client/tune_proto.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace xdeep::client {
namespace {

namespace v1 = xdeep::v1;

ClientError FromStatus(const grpc::Status& status) {
  return ErrorOfStatus(static_cast<int>(status.error_code()), status.error_message());
}

// gRPC deadlines are wall-clock; the plugin counts on the monotonic clock.
std::chrono::system_clock::time_point WallDeadline(std::chrono::steady_clock::time_point d) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             d - std::chrono::steady_clock::now());
}

class GrpcDaemonClient final : public DaemonClient {
 public:
  explicit GrpcDaemonClient(const std::string& address)
      : tuning_(
            v1::Tuning::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {
  }

  bool Tune(const TuneQuery& q, std::chrono::steady_clock::time_point deadline,
            const ProgressCallback& progress, TuneAnswer* answer, ClientError* error) override {
    const v1::TuneRequest req = ToTuneRequest(q, MungeCredential());
    grpc::ClientContext ctx;
    ctx.set_deadline(WallDeadline(deadline));
    auto reader = tuning_->Tune(&ctx, req);
    v1::TuneEvent event;
    bool decided = false;
    while (reader->Read(&event)) ReadTuneEvent(event, progress, answer, &decided);
    grpc::Status status = reader->Finish();
    if (!status.ok()) {
      *error = FromStatus(status);
      return false;
    }
    return UsableAnswer(*answer, decided, error);
  }

  bool Report(const ReportQuery& q, std::chrono::steady_clock::time_point deadline,
              ClientError* error) override {
    const v1::ReportRequest req = ToReportRequest(q, MungeCredential());
    v1::ReportResponse resp;
    return Unary(&v1::Tuning::Stub::Report, req, &resp, deadline, error);
  }

 private:
  // One unary call under the launch's deadline; a failure fills `error`.
  template <typename Request, typename Response>
  bool Unary(grpc::Status (v1::Tuning::Stub::*rpc)(grpc::ClientContext*, const Request&, Response*),
             const Request& req, Response* resp, std::chrono::steady_clock::time_point deadline,
             ClientError* error) {
    grpc::ClientContext ctx;
    ctx.set_deadline(WallDeadline(deadline));
    const grpc::Status status = (tuning_.get()->*rpc)(&ctx, req, resp);
    if (!status.ok()) *error = FromStatus(status);
    return status.ok();
  }

  std::unique_ptr<v1::Tuning::Stub> tuning_;
};

}  // namespace

std::unique_ptr<DaemonClient> ConnectDaemon(const std::string& address) {
  return std::make_unique<GrpcDaemonClient>(address);
}

}  // namespace xdeep::client
