// TuningService (see tuning_service.h).
#include "daemon/tuning_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "daemon/grpc_status.h"

namespace xdeep::daemon {
namespace {

namespace v1 = xdeep::v1;

// Streams events produced on a worker thread. The worker talks to a shared
// Channel, never to the reactor directly: the reactor is deleted in OnDone
// (e.g. when srun gives up), while the worker may still be computing.
class TuneReactor final : public grpc::ServerWriteReactor<v1::TuneEvent> {
 public:
  class Channel {
   public:
    explicit Channel(TuneReactor* reactor) : reactor_(reactor) {}
    void Push(v1::TuneEvent event) {
      std::lock_guard lock(mu_);
      if (reactor_ == nullptr) return;
      reactor_->pending_.push_back(std::move(event));
      reactor_->MaybeWriteLocked();
    }
    void Finish(grpc::Status status) {
      std::lock_guard lock(mu_);
      if (reactor_ == nullptr) return;
      reactor_->finish_ = std::move(status);
      reactor_->MaybeWriteLocked();
    }
    bool cancelled() {
      std::lock_guard lock(mu_);
      return reactor_ == nullptr;
    }

   private:
    friend class TuneReactor;
    std::mutex mu_;
    TuneReactor* reactor_;
  };

  TuneReactor() : channel_(std::make_shared<Channel>(this)) {}
  std::shared_ptr<Channel> channel() { return channel_; }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(channel_->mu_);
    writing_ = false;
    if (!ok) {
      // The client went away; stop writing and let OnDone clean up.
      pending_.clear();
      if (!finished_) {
        finished_ = true;
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
      }
      return;
    }
    MaybeWriteLocked();
  }

  void OnDone() override {
    {
      std::lock_guard lock(channel_->mu_);
      channel_->reactor_ = nullptr;
    }
    delete this;
  }

 private:
  // Called with channel_->mu_ held.
  void MaybeWriteLocked() {
    if (writing_ || finished_) return;
    if (!pending_.empty()) {
      current_ = std::move(pending_.front());
      pending_.pop_front();
      writing_ = true;
      StartWrite(&current_);
    } else if (finish_) {
      finished_ = true;
      Finish(*finish_);
    }
  }

  std::shared_ptr<Channel> channel_;
  std::deque<v1::TuneEvent> pending_;
  v1::TuneEvent current_;
  std::optional<grpc::Status> finish_;
  bool writing_ = false;
  bool finished_ = false;
};

}  // namespace

grpc::ServerWriteReactor<v1::TuneEvent>* TuningService::Tune(grpc::CallbackServerContext* context,
                                                             const v1::TuneRequest* request) {
  auto* reactor = new TuneReactor();
  std::shared_ptr<TuneReactor::Channel> channel = reactor->channel();
  auto caller = auth_->Verify(request->credential());
  if (!caller.ok()) {
    spdlog::warn("event=tune.refused peer={} reason=\"{}\"", context->peer(),
                 std::string(caller.status().message()));
    channel->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  // The request outlives this call only through the copy the worker owns.
  work_->Post([maker = maker_, channel, request = *request, uid = caller->uid] {
    if (channel->cancelled()) return;
    auto decision = maker->Decide(request, uid, [&](const v1::Progress& p) {
      v1::TuneEvent event;
      *event.mutable_progress() = p;
      channel->Push(std::move(event));
    });
    if (!decision.ok()) {
      spdlog::info("event=tune.failed uid={} code={} reason=\"{}\"", uid,
                   absl::StatusCodeToString(decision.status().code()),
                   std::string(decision.status().message()));
      channel->Finish(ToGrpcStatus(decision.status()));
      return;
    }
    spdlog::info(
        "event=tune.decided uid={} decision={} workload={} strategy={} nodes={} gpus_per_node={} "
        "step_time_s={:.4f} cost={:.2f}",
        uid, decision->decision_id(), decision->workload_name(), decision->config().strategy(),
        decision->config().nodes(), decision->config().gpus_per_node(),
        decision->prediction().step_time_s(), decision->prediction().cost());
    v1::TuneEvent event;
    *event.mutable_decision() = std::move(*decision);
    channel->Push(std::move(event));
    channel->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* TuningService::Bind(grpc::CallbackServerContext* context,
                                              const v1::BindRequest* request,
                                              v1::BindResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto caller = auth_->Verify(request->credential());
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  auto record = store_->GetDecision(request->decision_id());
  absl::Status status = record.status();
  if (status.ok() && record->uid != caller->uid) {
    status = absl::PermissionDeniedError("decision belongs to another user");
  }
  if (status.ok()) status = store_->BindJob(request->decision_id(), request->job_id());
  spdlog::info("event=bind uid={} decision={} job={} ok={}", caller->uid, request->decision_id(),
               request->job_id(), status.ok());
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* TuningService::Report(grpc::CallbackServerContext* context,
                                                const v1::ReportRequest* request,
                                                v1::ReportResponse* /*response*/) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto caller = auth_->Verify(request->credential());
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  auto record = store_->GetDecision(request->decision_id());
  absl::Status status = record.status();
  if (status.ok() && record->uid != caller->uid) {
    status = absl::PermissionDeniedError("decision belongs to another user");
  }
  if (status.ok()) {
    OutcomeRecord outcome;
    outcome.decision_id = request->decision_id();
    outcome.job_id = request->job_id();
    outcome.exit_code = request->exit_code();
    outcome.elapsed_s = request->elapsed_s();
    outcome.step_times_s.assign(request->step_times_s().begin(), request->step_times_s().end());
    status = store_->RecordOutcome(outcome);
  }
  spdlog::info("event=report uid={} decision={} job={} exit={} elapsed_s={:.2f} steps={} ok={}",
               caller->uid, request->decision_id(), request->job_id(), request->exit_code(),
               request->elapsed_s(), request->step_times_s_size(), status.ok());
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace xdeep::daemon
