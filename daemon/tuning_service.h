// The xdeep.v1.Tuning gRPC service on the callback API. It authenticates the
// caller, hands the work to the DecisionMaker / Store and converts results;
// nothing else.
#pragma once

#include "daemon/decision_maker.h"
#include "daemon/identity.h"
#include "daemon/store.h"
#include "daemon/work_queue.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace xdeep::daemon {

class TuningService final : public xdeep::v1::Tuning::CallbackService {
 public:
  TuningService(const DecisionMaker* maker, const Authenticator* auth, Store* store,
                WorkQueue* work)
      : maker_(maker), auth_(auth), store_(store), work_(work) {}

  grpc::ServerWriteReactor<xdeep::v1::TuneEvent>* Tune(
      grpc::CallbackServerContext* context, const xdeep::v1::TuneRequest* request) override;
  grpc::ServerUnaryReactor* Bind(grpc::CallbackServerContext* context,
                                 const xdeep::v1::BindRequest* request,
                                 xdeep::v1::BindResponse* response) override;
  grpc::ServerUnaryReactor* Report(grpc::CallbackServerContext* context,
                                   const xdeep::v1::ReportRequest* request,
                                   xdeep::v1::ReportResponse* response) override;

 private:
  const DecisionMaker* maker_;
  const Authenticator* auth_;
  Store* store_;
  WorkQueue* work_;
};

}  // namespace xdeep::daemon
