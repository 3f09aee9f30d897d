// libFuzzer target: each RPC of xdeep.v1.Tuning as the daemon receives it. The
// first byte picks the method; the rest is the request's protobuf encoding.
// The real TuningService (with its DecisionMaker, Store and Ledger on SQLite
// in memory) serves it over gRPC's in-process transport, so every request goes
// through gRPC's decoding, authentication (trusting: the caller is this
// process's user, an admin and a controller user, which opens every path) and
// the service's own validation. Only the partition shape is fixed: it comes
// from sinfo in production.
//
// Method 9 writes the rest, raw, to the admission socket (daemon/admit_socket.h)
// that the same service answers, as xdeep-admit's peer would: framing, size
// limits and the AdmitRequest decoding behind SO_PEERCRED. Method 10 does the
// same on the client socket (daemon/client_socket.h) that srun's plugin and
// xdeep-step-report ask: framing, the request kind and timeout, Tune and
// Report decoding, the events streamed back.
//
// Properties checked: the daemon never crashes or leaks, and every refusal
// carries a message (bad input gets one clear message); the admission socket
// answers every connection with one frame; the client socket answers every
// connection with at least one frame, and a refusal (a frame with a status)
// carries its reason and is the last.
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "client/admit_wire.h"
#include "client/socket_daemon_client.h"
#include "daemon/admit_socket.h"
#include "daemon/client_socket.h"
#include "daemon/decision_maker.h"
#include "daemon/identity.h"
#include "daemon/ledger.h"
#include "daemon/store.h"
#include "daemon/tuning_service.h"
#include "daemon/work_queue.h"
#include "tuner/hardware_profile.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace {

namespace daemon = xdeep::daemon;
namespace v1 = xdeep::v1;

// One daemon for the whole run: starting one per input would measure SQLite
// and thread start-up instead of the requests.
class InProcessDaemon {
 public:
  InProcessDaemon() {
    store_ = std::move(*daemon::Store::Open(":memory:"));
    ledger_ = std::move(*daemon::Ledger::Open(":memory:"));
    auth_ = daemon::MakeTrustingAuthenticator();
    const std::string me = daemon::UserName(getuid());
    auto policy = std::make_shared<daemon::PolicyConfig>();
    policy->admins = {me};
    maker_ = std::make_unique<daemon::DecisionMaker>(
        policy, *xdeep::tuner::BuiltinHardwareProfile("h100-sxm"),
        [](const std::string& partition) -> absl::StatusOr<daemon::PartitionShape> {
          if (!partition.empty() && partition != "gpu") {
            return absl::NotFoundError("no partition " + partition);
          }
          return daemon::PartitionShape{"gpu", 4, 8, 64};
        },
        store_.get(), ledger_.get());
    work_ = std::make_unique<daemon::WorkQueue>(2);
    service_ = std::make_unique<daemon::TuningService>(daemon::ServiceParts{
        .maker = maker_.get(),
        .auth = auth_.get(),
        .store = store_.get(),
        .ledger = ledger_.get(),
        .work = work_.get(),
        .reload_policy = [] { return absl::OkStatus(); },
        .run_probes = nullptr,
        .slurm_holds_job = [](const std::string&) -> absl::StatusOr<bool> { return false; },
        .controller_users = {me},
    });
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::Tuning::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));

    char dir[] = "/tmp/xdeep-fuzz-admit-XXXXXX";
    if (mkdtemp(dir) == nullptr) __builtin_trap();
    admit_path_ = std::string(dir) + "/xdeepd.sock.admit";
    daemon::TuningService* service = service_.get();
    admit_ = std::move(*daemon::AdmitSocket::Start(
        admit_path_,
        {.may_ask = [service](const daemon::Caller& c) { return service->MayAdmit(c); },
         .admit = [service](const daemon::Caller& c, const v1::AdmitRequest& request,
                            v1::AdmitResponse* response) {
           return service->AdmitAs(c, request, response);
         }},
        std::chrono::seconds(5)));
    client_path_ = std::string(dir) + "/xdeepd.sock.client";
    client_ = std::move(*daemon::ClientSocket::Start(
        client_path_,
        {.tune = [service](const v1::TuneRequest& request,
                           std::chrono::system_clock::time_point deadline,
                           std::shared_ptr<daemon::TuneStream> stream,
                           const std::string& peer) {
           service->TuneTo(request, deadline, std::move(stream), peer);
         },
         .report = [service](const v1::ReportRequest& request, v1::ReportResponse* response) {
           return service->ReportFrom(request, response);
         }},
        daemon::ClientSocket::Limits{}));
  }

  v1::Tuning::Stub& stub() { return *stub_; }
  const std::string& admit_path() const { return admit_path_; }
  const std::string& client_path() const { return client_path_; }

 private:
  std::unique_ptr<daemon::Store> store_;
  std::unique_ptr<daemon::Ledger> ledger_;
  std::unique_ptr<daemon::Authenticator> auth_;
  std::unique_ptr<daemon::DecisionMaker> maker_;
  std::unique_ptr<daemon::WorkQueue> work_;
  std::unique_ptr<daemon::TuningService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Tuning::Stub> stub_;
  std::string admit_path_;
  std::unique_ptr<daemon::AdmitSocket> admit_;
  std::string client_path_;
  std::unique_ptr<daemon::ClientSocket> client_;
};

void Expect(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckStatus(const grpc::Status& status) {
  Expect(status.ok() || !status.error_message().empty());
}

void Deadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
}

// Decodes `bytes` as Request and makes the unary call `method`.
template <typename Request, typename Response, typename Method>
void CallUnary(v1::Tuning::Stub& stub, Method method, const std::string& bytes) {
  Request request;
  if (!request.ParseFromString(bytes)) return;  // gRPC refuses it before the service
  Response response;
  grpc::ClientContext context;
  Deadline(context);
  CheckStatus((stub.*method)(&context, request, &response));
}

// A fresh connection to the socket at `path` that has sent `bytes` and
// closed its sending side.
int SendRaw(const std::string& path, const std::string& bytes) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Expect(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  Expect(connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  // The daemon reads one frame and answers; bytes past it may meet a closed
  // socket, which is the daemon's right.
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  return fd;
}

// The admission socket's one answer: an AdmitResponse, or a refusal with its reason.
void AskAdmitSocket(const std::string& path, const std::string& bytes) {
  const int fd = SendRaw(path, bytes);
  xdeep::client::AdmitFrame answer;
  std::string error;
  Expect(xdeep::client::ReadAdmitFrame(
      fd, std::chrono::steady_clock::now() + std::chrono::seconds(30), &answer, &error));
  if (answer.status == 0) {
    v1::AdmitResponse response;
    Expect(response.ParseFromString(answer.payload));
  } else {
    Expect(!answer.payload.empty());
  }
  close(fd);
}

// The client socket's answer: frames until the daemon closes; at least one,
// and a refusal carries its reason and ends the answer.
void AskClientSocket(const std::string& path, const std::string& bytes) {
  const int fd = SendRaw(path, bytes);
  int frames = 0;
  bool refused = false;
  for (;;) {
    xdeep::client::AdmitFrame frame;
    std::string error;
    if (!xdeep::client::ReadAdmitFrame(
            fd, std::chrono::steady_clock::now() + std::chrono::seconds(90), &frame, &error,
            xdeep::client::kClientFrameMaxBytes)) {
      // The daemon reads one request frame; closing on bytes sent after it
      // makes the kernel reset the connection once the answer is read.
      if (error != xdeep::client::kFrameStreamEnded &&
          error != std::string("recv: ") + std::strerror(ECONNRESET)) {
        std::fprintf(stderr, "client socket: %s\n", error.c_str());
        __builtin_trap();
      }
      break;
    }
    Expect(!refused);
    ++frames;
    if (frame.status != 0) {
      Expect(!frame.payload.empty());
      refused = true;
    }
  }
  Expect(frames > 0);
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static InProcessDaemon* const daemon = new InProcessDaemon();
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  v1::Tuning::Stub& stub = daemon->stub();
  using S = v1::Tuning::Stub;
  switch (data[0] % 11) {
    case 0: {
      v1::TuneRequest request;
      if (!request.ParseFromString(bytes)) return 0;
      grpc::ClientContext context;
      Deadline(context);
      auto reader = stub.Tune(&context, request);
      v1::TuneEvent event;
      while (reader->Read(&event)) {
      }
      CheckStatus(reader->Finish());
      break;
    }
    case 1:
      CallUnary<v1::BindRequest, v1::BindResponse>(stub, &S::Bind, bytes);
      break;
    case 2:
      CallUnary<v1::ReportRequest, v1::ReportResponse>(stub, &S::Report, bytes);
      break;
    case 3:
      CallUnary<v1::BudgetRequest, v1::BudgetResponse>(stub, &S::GetBudget, bytes);
      break;
    case 4:
      CallUnary<v1::ListDecisionsRequest, v1::ListDecisionsResponse>(stub, &S::ListDecisions,
                                                                     bytes);
      break;
    case 5:
      CallUnary<v1::AdmitRequest, v1::AdmitResponse>(stub, &S::Admit, bytes);
      break;
    case 6:
      CallUnary<v1::RunProbesRequest, v1::RunProbesResponse>(stub, &S::RunProbes, bytes);
      break;
    case 7:
      CallUnary<v1::ReloadPolicyRequest, v1::ReloadPolicyResponse>(stub, &S::ReloadPolicy, bytes);
      break;
    case 8:
      CallUnary<v1::ForgetRunsRequest, v1::ForgetRunsResponse>(stub, &S::ForgetRuns, bytes);
      break;
    case 9:
      AskAdmitSocket(daemon->admit_path(), bytes);
      break;
    default:
      AskClientSocket(daemon->client_path(), bytes);
      break;
  }
  return 0;
}
