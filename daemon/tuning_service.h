// The xdeep.v1.Tuning gRPC service on the callback API. It authenticates the
// caller, checks who may see or change what, hands the work to the
// DecisionMaker / Store / Ledger and converts results; nothing else.
#pragma once

#include <chrono>
#include <functional>

#include "daemon/decision_maker.h"
#include "daemon/identity.h"
#include "daemon/ledger.h"
#include "daemon/store.h"
#include "daemon/tune_stream.h"
#include "daemon/work_queue.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace xdeep::daemon {

struct ServiceParts {
  const DecisionMaker* maker = nullptr;
  const Authenticator* auth = nullptr;
  Store* store = nullptr;
  Ledger* ledger = nullptr;
  WorkQueue* work = nullptr;
  // Where a Tune request goes once its search has used `heavy_after` of CPU
  // in `work` (null: it stays where it is).
  WorkQueue* heavy = nullptr;
  std::chrono::milliseconds heavy_after{50};
  // Re-reads the policy from the configuration file (SIGHUP does the same).
  std::function<absl::Status()> reload_policy;
  // Runs a probe job and ingests its report (admins only; may take minutes).
  std::function<absl::StatusOr<xdeep::v1::RunProbesResponse>(const xdeep::v1::RunProbesRequest&)>
      run_probes;
  // Whether Slurm holds a job whose AdminComment names the decision (a
  // reservation is released on a failed-launch report only when it does not).
  std::function<absl::StatusOr<bool>(const std::string& decision_id)> slurm_holds_job;
  // Who may call Admit (slurmctld's user): names or numeric uids.
  std::vector<std::string> controller_users;
  // What Health answers: where the daemon listens and since when.
  std::string listen;
  int64_t started_unix = 0;
};

class TuningService final : public xdeep::v1::Tuning::CallbackService {
 public:
  explicit TuningService(ServiceParts parts) : p_(std::move(parts)) {}

  grpc::ServerWriteReactor<xdeep::v1::TuneEvent>* Tune(
      grpc::CallbackServerContext* context, const xdeep::v1::TuneRequest* request) override;
  grpc::ServerUnaryReactor* Bind(grpc::CallbackServerContext* context,
                                 const xdeep::v1::BindRequest* request,
                                 xdeep::v1::BindResponse* response) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const xdeep::v1::ReportRequest* request,
                                   xdeep::v1::ReportResponse* response) override;
  grpc::ServerUnaryReactor* GetBudget(grpc::CallbackServerContext* context,
                                      const xdeep::v1::BudgetRequest* request,
                                      xdeep::v1::BudgetResponse* response) override;
  grpc::ServerUnaryReactor* ListDecisions(grpc::CallbackServerContext* context,
                                          const xdeep::v1::ListDecisionsRequest* request,
                                          xdeep::v1::ListDecisionsResponse* response) override;
  grpc::ServerUnaryReactor* Admit(grpc::CallbackServerContext* context,
                                  const xdeep::v1::AdmitRequest* request,
                                  xdeep::v1::AdmitResponse* response) override;
  grpc::ServerUnaryReactor* RunProbes(grpc::CallbackServerContext* context,
                                      const xdeep::v1::RunProbesRequest* request,
                                      xdeep::v1::RunProbesResponse* response) override;
  grpc::ServerUnaryReactor* ReloadPolicy(grpc::CallbackServerContext* context,
                                         const xdeep::v1::ReloadPolicyRequest* request,
                                         xdeep::v1::ReloadPolicyResponse* response) override;
  grpc::ServerUnaryReactor* ForgetRuns(grpc::CallbackServerContext* context,
                                       const xdeep::v1::ForgetRunsRequest* request,
                                       xdeep::v1::ForgetRunsResponse* response) override;
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* context,
                                   const xdeep::v1::HealthRequest* request,
                                   xdeep::v1::HealthResponse* response) override;

  // A Tune request from any transport (the RPC, the client socket of
  // client_socket.h): its MUNGE credential is verified here; the events go
  // to `stream`, the work stops once `deadline` passes or the stream is
  // cancelled. `peer` names the client in the log.
  void TuneTo(const xdeep::v1::TuneRequest& request,
              std::chrono::system_clock::time_point deadline, std::shared_ptr<TuneStream> stream,
              const std::string& peer);
  // A Report from any transport, its MUNGE credential verified here.
  absl::Status ReportFrom(const xdeep::v1::ReportRequest& request,
                          xdeep::v1::ReportResponse* response);

  // Whether `caller` may ask Admit: a controller user (slurmctld's).
  absl::Status MayAdmit(const Caller& caller) const;
  // Admit as `caller`, whom MUNGE (the Admit RPC) or the kernel (SO_PEERCRED
  // on the admission socket, daemon/admit_socket.h) vouches for.
  absl::Status AdmitAs(const Caller& caller, const xdeep::v1::AdmitRequest& request,
                       xdeep::v1::AdmitResponse* response);

 private:
  // The user whose data a request may read: the caller, or anyone for admins.
  absl::StatusOr<std::string> ReadableUser(const Caller& caller, const std::string& asked) const;
  // Admit for one component of a heterogeneous job on a strict partition;
  // `answer(admitted, reason)` fills the response.
  absl::Status AdmitComponent(const xdeep::v1::AdmitRequest& request, const PolicyConfig& policy,
                              xdeep::v1::AdmitResponse* response,
                              const std::function<absl::Status(bool, std::string)>& answer);

  ServiceParts p_;
};

}  // namespace xdeep::daemon
