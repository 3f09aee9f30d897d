// TuningService (see tuning_service.h).
#include "daemon/tuning_service.h"

#include <fmt/format.h>
#include <pwd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "daemon/grpc_status.h"
#include "daemon/job_records.h"
#include "daemon/learning.h"
#include "daemon/thread_sched_times.h"

namespace xdeep::daemon {
namespace {

namespace v1 = xdeep::v1;

// Streams events produced on a worker thread. The worker talks to a shared
// Channel, never to the reactor directly: the reactor is deleted in OnDone
// (e.g. when srun gives up), while the worker may still be computing.
class TuneReactor final : public grpc::ServerWriteReactor<v1::TuneEvent> {
 public:
  class Channel final : public TuneStream {
   public:
    explicit Channel(TuneReactor* reactor) : reactor_(reactor) {}
    void Push(v1::TuneEvent event) override {
      std::lock_guard lock(mu_);
      if (reactor_ == nullptr) return;
      reactor_->pending_.push_back(std::move(event));
      reactor_->MaybeWriteLocked();
    }
    void Finish(const absl::Status& status) override {
      std::lock_guard lock(mu_);
      if (reactor_ == nullptr) return;
      reactor_->finish_ = ToGrpcStatus(status);
      reactor_->MaybeWriteLocked();
    }
    void FinishWith(v1::TuneEvent last, const absl::Status& status) override {
      std::lock_guard lock(mu_);
      if (reactor_ == nullptr) return;
      reactor_->pending_.push_back(std::move(last));
      reactor_->finish_ = ToGrpcStatus(status);
      reactor_->MaybeWriteLocked();
    }
    int64_t cancelled_at_ns() const override {
      return cancelled_at_ns_.load(std::memory_order_relaxed);
    }
    bool cancelled() override {
      if (cancelled_.load(std::memory_order_relaxed)) return true;
      std::lock_guard lock(mu_);
      return reactor_ == nullptr;
    }

   private:
    friend class TuneReactor;
    std::mutex mu_;
    TuneReactor* reactor_;
    std::atomic<bool> cancelled_{false};
    std::atomic<int64_t> cancelled_at_ns_{0};
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

  // The worker polls this through Channel::cancelled and stops its search.
  void OnCancel() override {
    channel_->cancelled_at_ns_.store(
        std::chrono::steady_clock::now().time_since_epoch() / std::chrono::nanoseconds(1),
        std::memory_order_relaxed);
    channel_->cancelled_.store(true, std::memory_order_relaxed);
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
      if (pending_.empty() && finish_) {
        // gRPC calls no OnWriteDone for it, only OnDone.
        finished_ = true;
        StartWriteAndFinish(&current_, grpc::WriteOptions(), *finish_);
        return;
      }
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

// Authenticates, runs `body` and finishes the call with its status.
template <typename Body>
grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context, const Authenticator* auth,
                                const std::string& credential, Body&& body) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto caller = auth->Verify(credential);
  absl::Status status = caller.ok() ? body(*caller) : caller.status();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// A client of another version than this daemon: one log line per version
// seen (the plugin and `xdeep` print their own line to the user).
void NoteClientVersion(const std::string& client_version, const std::string& who) {
  if (client_version.empty() || client_version == XDEEP_VERSION) return;
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard lock(mu);
  if (!seen.insert(client_version).second) return;
  spdlog::warn(
      "event=version_skew client={} client_version={} daemon_version={} reason=\"install "
      "the same xdeep version on the daemon's host, submit hosts and compute nodes\"",
      who, client_version, XDEEP_VERSION);
}

// One Tune request's work. It runs first in the ordinary lane; a search that
// has used `heavy_after` of CPU there starts again in the heavy lane (one
// low-priority thread), so a few worst-case requests never hold the workers
// that everyone else's decisions need.
struct TuneWork {
  const DecisionMaker* maker;
  std::shared_ptr<TuneStream> channel;
  v1::TuneRequest request;
  Caller caller;
  std::chrono::system_clock::time_point deadline;  // the client's
  std::chrono::milliseconds heavy_after;
  HeavyPacer* pacer;           // null: the heavy lane runs unpaced
  std::set<std::string> sent;  // progress already streamed: a rerun repeats it
};

// On the heavy lane, at each of its checkpoints: it waits there while it is
// past its share and ordinary requests arrive (heavy_pacer.h).
void PaceHeavyLane(const TuneWork& work) {
  if (work.pacer == nullptr) return;
  // The client's deadline on the steady clock (a call without one: an hour on).
  const auto now = std::chrono::system_clock::now();
  std::chrono::system_clock::duration left = std::chrono::hours(1);
  if (work.deadline < now + left) left = work.deadline - now;
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(left);
  work.pacer->Checkpoint(until, [&work] { return work.channel->cancelled(); });
}

// With `cached_only` (on the transport's thread), returns false, having
// answered nothing, when the request needs a worker (kNeedsWorker).
bool RunTune(const std::shared_ptr<TuneWork>& work, WorkQueue* heavy, bool cached_only = false) {
  const std::shared_ptr<TuneStream>& channel = work->channel;
  if (channel->cancelled()) {
    // gRPC ends a call (OnDone) only once the reactor finished it, cancelled
    // or not: one left unfinished stays for good and holds up shutdown.
    channel->Finish(absl::CancelledError("the client went away"));
    return true;
  }
  const Caller& caller = work->caller;
  auto client_gone = [&]() -> absl::Status {
    if (channel->cancelled()) return absl::CancelledError("the client went away");
    if (std::chrono::system_clock::now() >= work->deadline) {
      return absl::DeadlineExceededError("the client's deadline passed before a decision");
    }
    return absl::OkStatus();
  };
  if (absl::Status gone = client_gone(); !gone.ok()) {
    channel->Finish(gone);
    return true;
  }
  bool demoted = false;
  const auto started = std::chrono::steady_clock::now();
  const double cpu_at_start = ThreadCpuSeconds();
  // On the heavy lane (the requests that get stopped at their deadline): the
  // thread's CPU and run-queue wait at the last poll that let the work go on.
  // At a stop, the wait since then is what other processes' claim on the
  // cores added to its lateness (it may begin before the deadline, by at most
  // one poll's interval: the rest of the lateness is the daemon's at least).
  std::optional<ThreadSchedTimes> at_poll;
  if (heavy == nullptr) at_poll = ThreadSchedTimesNow();
  auto interrupt = [&]() -> absl::Status {
    if (heavy == nullptr) PaceHeavyLane(*work);
    if (absl::Status gone = client_gone(); !gone.ok()) return gone;
    if (at_poll) at_poll = ThreadSchedTimesNow();
    // CPU, not wall time: a busy machine does not make a request heavy.
    // The wall clock (cheap) is asked first: CPU time never exceeds it.
    const double budget_s = std::chrono::duration<double>(work->heavy_after).count();
    if (heavy != nullptr &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >
            budget_s &&
        ThreadCpuSeconds() - cpu_at_start > budget_s) {
      demoted = true;
      return absl::AbortedError(kMovedToHeavyLane);
    }
    return absl::OkStatus();
  };
  auto result = work->maker->Decide(
      work->request, caller,
      [&](const v1::Progress& p) {
        // Each event is a stream write. Clients show the steps of a decision
        // in explain mode only; probe waits and budget warnings always.
        if (work->request.mode() != v1::TUNE_MODE_EXPLAIN && p.stage() != "probe" &&
            p.stage() != "budget") {
          return;
        }
        if (!work->sent.insert(p.stage() + "\n" + p.message()).second) return;
        v1::TuneEvent event;
        *event.mutable_progress() = p;
        channel->Push(std::move(event));
      },
      interrupt, /*allow_heavy=*/heavy == nullptr, /*defer_record=*/true, cached_only);
  if (cached_only && result.status().code() == absl::StatusCode::kAborted &&
      result.status().message() == kNeedsWorker) {
    return false;
  }
  demoted |= heavy != nullptr && result.status().code() == absl::StatusCode::kAborted &&
             result.status().message() == kMovedToHeavyLane;
  if (demoted) {
    spdlog::info("event=tune.heavy user={} after_ms={}", caller.user, work->heavy_after.count());
    heavy->Post([work] { RunTune(work, nullptr); });
    return true;
  }
  const absl::StatusCode code = result.status().code();
  if (code == absl::StatusCode::kCancelled || code == absl::StatusCode::kDeadlineExceeded) {
    // How long the work went on after the client stopped waiting (#27: 50 ms),
    // from the first of its deadline and its cancellation.
    double late_ms = 0;
    const auto wall_now = std::chrono::system_clock::now();
    if (wall_now >= work->deadline) {
      late_ms = std::chrono::duration<double, std::milli>(wall_now - work->deadline).count();
    }
    if (const int64_t at = channel->cancelled_at_ns(); at != 0) {
      const int64_t now =
          std::chrono::steady_clock::now().time_since_epoch() / std::chrono::nanoseconds(1);
      late_ms = std::max(late_ms, (now - at) / 1e6);
    }
    std::string queued;
    if (const auto now_times = ThreadSchedTimesNow(); at_poll && now_times) {
      queued = fmt::format(" queued_ms={:.1f} cpu_ms={:.1f}",
                           (now_times->queued_s - at_poll->queued_s) * 1e3,
                           (now_times->on_cpu_s - at_poll->on_cpu_s) * 1e3);
    }
    spdlog::info("event=tune.stopped user={} code={} late_ms={:.1f}{}", caller.user,
                 absl::StatusCodeToString(code), late_ms, queued);
    channel->Finish(result.status());
    return true;
  }
  if (!result.ok()) {
    spdlog::info("event=tune.failed user={} code={} reason=\"{}\"", caller.user,
                 absl::StatusCodeToString(result.status().code()),
                 std::string(result.status().message()));
    channel->Finish(result.status());
    return true;
  }
  v1::TuneEvent event;
  if (!result->decision) {
    spdlog::info("event=tune.skipped user={} reason=\"{}\"", caller.user, result->skip_reason);
    event.mutable_skip()->set_reason(result->skip_reason);
    channel->FinishWith(std::move(event), absl::OkStatus());
    return true;
  }
  const v1::Decision& d = *result->decision;
  std::string decided = fmt::format(
      "event=tune.decided user={} uid={} decision={} workload={} strategy={} nodes={} "
      "gpus_per_node={} step_time_s={:.4f} cost={:.2f}",
      caller.user, caller.uid, d.decision_id(), d.workload_name(), d.config().strategy(),
      d.config().nodes(), d.config().gpus_per_node(), d.prediction().step_time_s(),
      d.prediction().cost());
  *event.mutable_decision() = std::move(*result->decision);
  event.mutable_decision()->set_server_version(XDEEP_VERSION);
  if (!result->record) {
    spdlog::info("{}", decided);
    channel->FinishWith(std::move(event), absl::OkStatus());
    return true;
  }
  // The answer leaves once its record is committed, sent by the thread that
  // ran the commit: this worker goes on to the next request instead of
  // sleeping until then (one wake-up fewer per decision; bench/README.md).
  work->maker->SaveRecordThen(
      *std::move(result->record),
      [channel, event = std::move(event), decided = std::move(decided),
       user = caller.user](absl::Status saved) mutable {
        if (!saved.ok()) {
          spdlog::info("event=tune.failed user={} code={} reason=\"{}\"", user,
                       absl::StatusCodeToString(saved.code()), std::string(saved.message()));
          channel->Finish(saved);
          return;
        }
        spdlog::info("{}", decided);
        channel->FinishWith(std::move(event), absl::OkStatus());
      });
  return true;
}

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<std::string> TuningService::ReadableUser(const Caller& caller,
                                                        const std::string& asked) const {
  if (asked.empty() || asked == caller.user) return caller.user;
  if (p_.maker->policy()->IsAdmin(caller.uid, caller.user)) return asked;
  return absl::PermissionDeniedError(fmt::format(
      "{} may not read {}'s records; only admins named in the policy can", caller.user, asked));
}

grpc::ServerWriteReactor<v1::TuneEvent>* TuningService::Tune(grpc::CallbackServerContext* context,
                                                             const v1::TuneRequest* request) {
  auto* reactor = new TuneReactor();
  TuneTo(*request, context->deadline(), reactor->channel(), context->peer());
  return reactor;
}

void TuningService::TuneTo(const v1::TuneRequest& request,
                           std::chrono::system_clock::time_point deadline,
                           std::shared_ptr<TuneStream> stream, const std::string& peer) {
  // The request outlives this call only through the copy the worker owns.
  auto work = std::make_shared<TuneWork>(TuneWork{.maker = p_.maker,
                                                  .channel = std::move(stream),
                                                  .request = request,
                                                  .caller = {},
                                                  .deadline = deadline,
                                                  .heavy_after = p_.heavy_after,
                                                  .pacer = p_.heavy ? p_.pacer : nullptr,
                                                  .sent = {}});
  auto authenticate = [work, auth = p_.auth, peer] {
    auto caller = auth->Verify(work->request.credential());
    if (!caller.ok()) {
      spdlog::warn("event=tune.refused peer={} reason=\"{}\"", peer,
                   std::string(caller.status().message()));
      work->channel->Finish(caller.status());
      return false;
    }
    work->caller = *std::move(caller);
    NoteClientVersion(work->request.client_version(), "plugin");
    return true;
  };
  // The lane is chosen before anything else: a worst-case request waits for
  // MUNGE, too, on its own low-priority lane, never ahead of anyone else's.
  if (p_.heavy != nullptr && HeavyWorkload(request.workload())) {
    p_.heavy->Post([work, authenticate] {
      PaceHeavyLane(*work);
      if (work->channel->cancelled()) {
        work->channel->Finish(absl::CancelledError("the client went away"));
        return;
      }
      if (!authenticate()) return;
      spdlog::info("event=tune.heavy user={} reason=\"more than {} layers\"", work->caller.user,
                   kHeavyLayers);
      RunTune(work, nullptr);
    });
    return;
  }
  // An ordinary request is authenticated here, on the transport's thread
  // (gRPC's callback thread): decoding on the worker instead cost ~0.04 ms
  // more CPU per decision (bench/daemon, 2-core VM).
  if (p_.pacer != nullptr) p_.pacer->NoteOrdinary();
  if (!authenticate()) return;
  // A decision its caches answer (no parse, search, Slurm command or hold:
  // tens of microseconds) is made right here, and its record committed by the
  // group commit's thread, which answers: no hand-off to a worker and back
  // (bench/README.md). Anything more goes to the workers.
  if (RunTune(work, p_.heavy, /*cached_only=*/true)) return;
  p_.work->Post([work, heavy = p_.heavy] { RunTune(work, heavy); });
}

grpc::ServerUnaryReactor* TuningService::Bind(grpc::CallbackServerContext* context,
                                              const v1::BindRequest* request,
                                              v1::BindResponse* /*response*/) {
  return Unary(context, p_.auth, request->credential(), [&](const Caller& caller) {
    auto record = p_.store->GetDecision(request->decision_id());
    absl::Status status = record.status();
    if (status.ok() && record->uid != caller.uid) {
      status = absl::PermissionDeniedError("decision belongs to another user");
    }
    // History only: the ledger learns a job's decision from the controller.
    if (status.ok()) status = p_.store->BindJob(request->decision_id(), request->job_id());
    spdlog::info("event=bind user={} decision={} job={} ok={}", caller.user, request->decision_id(),
                 request->job_id(), status.ok());
    return status;
  });
}

grpc::ServerUnaryReactor* TuningService::Report(grpc::CallbackServerContext* context,
                                                const v1::ReportRequest* request,
                                                v1::ReportResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(ReportFrom(*request, response)));
  return reactor;
}

absl::Status TuningService::ReportFrom(const v1::ReportRequest& request,
                                       v1::ReportResponse* response) {
  auto verified = p_.auth->Verify(request.credential());
  if (!verified.ok()) return verified.status();
  const Caller& caller = *verified;
  auto record = p_.store->GetDecision(request.decision_id());
  absl::Status status = record.status();
  if (status.ok() && record->uid != caller.uid) {
    status = absl::PermissionDeniedError("decision belongs to another user");
  }
  // The client's word never settles a charge; it may only free the hold of
  // a launch Slurm never received (no job names the decision).
  if (status.ok() && request.final() && request.launch_failed() && p_.ledger != nullptr) {
    auto held = p_.ledger->Get(request.decision_id());
    bool released = false;
    if (held.ok() && held->state == "reserved") {
      status = p_.ledger->Release(request.decision_id(), caller.uid, NowUnix());
      released = status.ok();
    } else if (held.ok() && held->state == "bound" && p_.slurm_holds_job) {
      auto holds = p_.slurm_holds_job(request.decision_id());
      if (holds.ok() && !*holds) {
        status = p_.ledger->Release(request.decision_id(), caller.uid, NowUnix(), true);
        released = status.ok();
      } else if (!holds.ok()) {
        // The ledger pass releases it once Slurm answers; say why it waits.
        spdlog::warn("event=report.hold_kept decision={} reason=\"cannot ask Slurm: {}\"",
                     request.decision_id(), std::string(holds.status().message()));
      }
    }
    if (released) {
      spdlog::info("event=report.released decision={} reason=\"launch failed\"",
                   request.decision_id());
    }
  }
  // The launch's job, for history: srun no longer calls Bind (it would load
  // the gRPC client a second time per launch), the report names the job.
  if (status.ok() && !request.launch_failed() && request.job_id() != 0) {
    if (absl::Status bound = p_.store->BindJob(request.decision_id(), request.job_id());
        !bound.ok()) {
      spdlog::warn("event=bind user={} decision={} job={} reason=\"{}\"", caller.user,
                   request.decision_id(), request.job_id(), std::string(bound.message()));
    }
  }
  if (status.ok() && !request.launch_failed()) {
    OutcomeRecord outcome;
    outcome.decision_id = request.decision_id();
    outcome.job_id = request.job_id();
    outcome.exit_code = request.exit_code();
    outcome.elapsed_s = request.elapsed_s();
    outcome.step_times_s.assign(request.step_times_s().begin(), request.step_times_s().end());
    v1::Decision decided;
    if (decided.ParseFromString(record->decision_blob)) {
      const double predicted = decided.analytical_step_time_s() > 0
                                   ? decided.analytical_step_time_s()
                                   : decided.prediction().step_time_s();
      outcome.flag =
          OutcomeFlag(predicted, outcome.step_times_s, p_.maker->policy()->learning_max_ratio);
    }
    if (!outcome.flag.empty()) {
      spdlog::warn("event=learning.ignored user={} decision={} job={} reason=\"{}\"", caller.user,
                   outcome.decision_id, outcome.job_id, outcome.flag);
    }
    status = p_.store->RecordOutcome(outcome);
  }
  response->set_settled_cost(0);
  spdlog::info(
      "event=report user={} decision={} job={} exit={} elapsed_s={:.2f} steps={} "
      "launch_failed={} ok={}",
      caller.user, request.decision_id(), request.job_id(), request.exit_code(),
      request.elapsed_s(), request.step_times_s_size(), request.launch_failed(), status.ok());
  return status;
}

grpc::ServerUnaryReactor* TuningService::GetBudget(grpc::CallbackServerContext* context,
                                                   const v1::BudgetRequest* request,
                                                   v1::BudgetResponse* response) {
  return Unary(context, p_.auth, request->credential(), [&](const Caller& caller) {
    auto user = ReadableUser(caller, request->user());
    if (!user.ok()) return user.status();
    auto policy = p_.maker->policy();
    std::vector<BudgetScope> scopes;
    auto own = BudgetScopes(*policy, *user, "");
    if (own.ok()) scopes = *own;
    for (const auto& [name, budget] : policy->account_budgets) {
      const auto& m = budget.members;
      if (std::find(m.begin(), m.end(), *user) != m.end()) {
        scopes.push_back({"account", name, budget.limit});
      }
    }
    const int64_t start = PeriodStart(policy->budget_period, NowUnix());
    if (p_.ledger == nullptr) return absl::FailedPreconditionError("this daemon keeps no ledger");
    auto use = p_.ledger->Use(scopes, start);
    if (!use.ok()) return use.status();
    response->set_user(*user);
    response->set_currency(policy->currency);
    for (const BudgetUse& u : *use) {
      v1::BudgetLine* line = response->add_lines();
      line->set_scope(u.scope.kind);
      line->set_name(u.scope.name);
      line->set_period(policy->budget_period);
      line->set_period_start_unix(start);
      line->set_limit(u.scope.limit);
      line->set_spent(u.spent);
      line->set_reserved(u.reserved);
      line->set_remaining(u.scope.limit > 0 ? std::max(0.0, u.remaining()) : 0);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* TuningService::ListDecisions(grpc::CallbackServerContext* context,
                                                       const v1::ListDecisionsRequest* request,
                                                       v1::ListDecisionsResponse* response) {
  return Unary(context, p_.auth, request->credential(), [&](const Caller& caller) {
    auto user = ReadableUser(caller, request->user());
    if (!user.ok()) return user.status();
    std::optional<uint32_t> uid = caller.uid;
    if (*user != caller.user) {
      struct passwd pw {};
      struct passwd* found = nullptr;
      char buffer[4096];
      if (request->user() == "*") {
        uid.reset();
      } else if (getpwnam_r(user->c_str(), &pw, buffer, sizeof buffer, &found) == 0 && found) {
        uid = found->pw_uid;
      } else {
        return absl::NotFoundError(fmt::format("no user {} on the daemon's host", *user));
      }
    }
    auto recent = p_.store->Recent(uid, request->limit() > 0 ? request->limit() : 20);
    if (!recent.ok()) return recent.status();
    for (const DecisionRecord& r : *recent) {
      v1::DecisionSummary* d = response->add_decisions();
      d->set_decision_id(r.id);
      d->set_created_unix(r.created_unix);
      d->set_user(UserName(r.uid));
      d->set_workload(r.workload);
      d->set_strategy(r.strategy);
      d->set_nodes(r.nodes);
      d->set_gpus_per_node(r.gpus_per_node);
      d->set_predicted_step_time_s(r.predicted_step_time_s);
      d->set_predicted_cost(r.predicted_cost);
      d->set_job_id(r.job_id.value_or(0));
      d->set_state("none");
      if (p_.ledger != nullptr) {
        auto res = p_.ledger->Get(r.id);
        if (res.ok()) {
          d->set_state(res->state);
          d->set_settled_cost(res->settled_amount);
        }
      }
      auto outcomes = p_.store->Outcomes(r.id);
      if (outcomes.ok() && !outcomes->empty() && !outcomes->front().step_times_s.empty()) {
        std::vector<double> t = outcomes->front().step_times_s;
        std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
        d->set_measured_step_time_s(t[t.size() / 2]);
      }
      auto learning = p_.store->LearningState(r.id);
      if (learning.ok()) d->set_learning(*learning);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* TuningService::Admit(grpc::CallbackServerContext* context,
                                               const v1::AdmitRequest* request,
                                               v1::AdmitResponse* response) {
  return Unary(context, p_.auth, request->credential(), [&](const Caller& caller) {
    return AdmitAs(caller, *request, response);
  });
}

absl::Status TuningService::MayAdmit(const Caller& caller) const {
  const auto& users = p_.controller_users;
  if (std::find(users.begin(), users.end(), caller.user) == users.end() &&
      std::find(users.begin(), users.end(), std::to_string(caller.uid)) == users.end()) {
    return absl::PermissionDeniedError(
        fmt::format("Admit is for slurmctld ([identity] controller_users), not {}", caller.user));
  }
  return absl::OkStatus();
}

absl::Status TuningService::AdmitAs(const Caller& caller, const v1::AdmitRequest& request,
                                    v1::AdmitResponse* response) {
  if (absl::Status may = MayAdmit(caller); !may.ok()) return may;
  auto policy = p_.maker->policy();
  const bool strict = policy->Strict(request.partition());
  auto answer = [&](bool admitted, std::string reason) {
    response->set_admitted(admitted);
    response->set_reason(std::move(reason));
    spdlog::info(
        "event=admit uid={} partition={} strict={} admitted={} decision={} reason=\"{}\"",
        request.job_uid(), request.partition(), strict, admitted,
        response->decision_id().empty() ? "-" : response->decision_id(), response->reason());
    return absl::OkStatus();
  };
  if (request.heterogeneous()) {
    if (!strict) return answer(true, "partition is not strictly enforced");
    return AdmitComponent(request, *policy, response, answer);
  }
  if (request.token().empty()) {
    if (!strict) return answer(true, "partition is not strictly enforced");
    return answer(false,
                  "no xdeep reservation: launch the job with --xdeep-tune through the xdeep "
                  "plugin (srun, sbatch or salloc with the site's slurm.conf)");
  }
  int tasks = 1;
  if (!request.array().empty()) {
    auto counted = CountArrayTasks(request.array());
    if (!counted) return answer(false, "cannot read the job array's indices");
    tasks = *counted;
  }
  if (p_.ledger == nullptr) return answer(false, "this daemon keeps no ledger");
  const int64_t now = NowUnix();
  auto scopes_for = [&](const std::string& user, const std::string& account) {
    auto scopes = BudgetScopes(*policy, user, account);
    std::vector<BudgetScope> out = scopes.ok() ? *scopes : std::vector<BudgetScope>();
    if (!strict) {
      for (BudgetScope& s : out) s.limit = 0;  // advisory: track, never refuse
    }
    return out;
  };
  AdmitAsk ask;
  ask.partition = request.partition();
  ask.nodes = request.nodes();
  ask.array_tasks = tasks;
  auto per_node = GpusInTres(request.tres_per_node());
  auto per_job = GpusInTres(request.tres_per_job());
  auto per_task = GpusInTres(request.tres_per_task());
  if (!per_node || !per_job || !per_task)
    return answer(false, "cannot read the job's GPU request");
  if (*per_task > 0) {
    return answer(false,
                  "ask for GPUs per node (--gpus-per-node), as the decision does, not "
                  "per task");
  }
  ask.gpus_per_node = *per_node;
  ask.gpus = *per_job;
  auto admitted =
      p_.ledger->Admit(request.token(), request.job_uid(), ask, scopes_for,
                       PeriodStart(policy->budget_period, now), now, policy->reservation_ttl_s);
  if (!admitted.ok()) {
    if (admitted.status().code() != absl::StatusCode::kPermissionDenied) {
      return admitted.status();
    }
    return answer(false, std::string(admitted.status().message()));
  }
  response->set_decision_id(admitted->decision_id);
  return answer(true, fmt::format("reservation {} ({:.2f} {})", admitted->decision_id,
                                  admitted->amount, policy->currency));
}

absl::Status TuningService::AdmitComponent(
    const v1::AdmitRequest& request, const PolicyConfig& policy, v1::AdmitResponse* response,
    const std::function<absl::Status(bool, std::string)>& answer) {
  // No tuned launch is heterogeneous and one token cannot prove every
  // component, so each component of a heterogeneous job on a strict
  // partition holds its own reservation, sized from its time limit (Slurm
  // ends it there), checked against the budgets and charged from its own
  // completion record.
  if (request.time_limit_s() <= 0) {
    return answer(false, fmt::format("a heterogeneous job on strict partition {} needs a time "
                                     "limit (--time) on each component: its hold is sized from it",
                                     request.partition()));
  }
  auto per_node = GpusInTres(request.tres_per_node());
  auto per_job = GpusInTres(request.tres_per_job());
  auto per_task = GpusInTres(request.tres_per_task());
  if (!per_node || !per_job || !per_task) return answer(false, "cannot read the job's GPU request");
  if (*per_task > 0) {
    return answer(false, "ask for GPUs per node (--gpus-per-node) or per job, not per task");
  }
  if (p_.ledger == nullptr) return answer(false, "this daemon keeps no ledger");
  Charge c;
  c.decision_id = NewDecisionId();
  c.uid = request.job_uid();
  c.user = UserName(c.uid);
  c.account = request.account();
  c.partition = request.partition();
  c.nodes = std::max(1, request.nodes());
  c.gpus = *per_job > 0 ? *per_job : *per_node * c.nodes;
  c.price_per_gpu_hour = policy.PricePerGpuHour(c.partition);
  c.price_per_node_hour = policy.PricePerNodeHour(c.partition);
  const double hours = static_cast<double>(request.time_limit_s()) / 3600.0;
  c.amount = (c.price_per_node_hour > 0 ? c.nodes * c.price_per_node_hour
                                        : c.gpus * c.price_per_gpu_hour) *
             hours;
  auto scopes = BudgetScopes(policy, c.user, c.account);
  if (!scopes.ok()) return answer(false, std::string(scopes.status().message()));
  const int64_t now = NowUnix();
  absl::Status held = p_.ledger->ReserveForJob(c, *scopes, PeriodStart(policy.budget_period, now),
                                               now, policy.reservation_ttl_s);
  if (held.code() == absl::StatusCode::kResourceExhausted) {
    return answer(false, fmt::format("over budget: this component of a heterogeneous job may cost "
                                     "{:.2f} {} ({} node(s), {} GPU(s), {:.2f} h); {}",
                                     c.amount, policy.currency, c.nodes, c.gpus, hours,
                                     std::string(held.message())));
  }
  if (!held.ok()) return held;
  response->set_decision_id(c.decision_id);
  return answer(true, fmt::format("reservation {} ({:.2f} {})", c.decision_id, c.amount,
                                  policy.currency));
}

grpc::ServerUnaryReactor* TuningService::RunProbes(grpc::CallbackServerContext* context,
                                                   const v1::RunProbesRequest* request,
                                                   v1::RunProbesResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto caller = p_.auth->Verify(request->credential());
  absl::Status refused = caller.status();
  if (refused.ok() && !p_.maker->policy()->IsAdmin(caller->uid, caller->user)) {
    refused = absl::PermissionDeniedError(
        fmt::format("{} is not an admin in the policy ([policy] admins)", caller->user));
  }
  if (!refused.ok() || !p_.run_probes) {
    reactor->Finish(ToGrpcStatus(refused.ok() ? absl::UnimplementedError("no probes") : refused));
    return reactor;
  }
  // A probe job waits in Slurm's queue: never on a gRPC thread.
  p_.work->Post([this, reactor, request, response] {
    auto result = p_.run_probes(*request);
    if (result.ok()) *response = *result;
    spdlog::info("event=probes ok={} job={} report={} reason=\"{}\"", result.ok(),
                 result.ok() ? result->job_id() : "", result.ok() ? result->report_path() : "",
                 std::string(result.status().message()));
    reactor->Finish(ToGrpcStatus(result.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* TuningService::ReloadPolicy(grpc::CallbackServerContext* context,
                                                      const v1::ReloadPolicyRequest* request,
                                                      v1::ReloadPolicyResponse* /*response*/) {
  return Unary(context, p_.auth, request->credential(), [&](const Caller& caller) {
    if (!p_.maker->policy()->IsAdmin(caller.uid, caller.user)) {
      return absl::PermissionDeniedError(
          fmt::format("{} is not an admin in the policy ([policy] admins)", caller.user));
    }
    return p_.reload_policy ? p_.reload_policy() : absl::UnimplementedError("no reload");
  });
}

grpc::ServerUnaryReactor* TuningService::ForgetRuns(grpc::CallbackServerContext* context,
                                                    const v1::ForgetRunsRequest* request,
                                                    v1::ForgetRunsResponse* response) {
  return Unary(context, p_.auth, request->credential(), [&](const Caller& caller) {
    auto record = p_.store->FindDecision(request->decision_id());
    if (!record.ok()) return record.status();
    if (record->uid != caller.uid && !p_.maker->policy()->IsAdmin(caller.uid, caller.user)) {
      return absl::PermissionDeniedError(
          fmt::format("decision {} belongs to {}; only its owner or an admin may forget its runs",
                      record->id, UserName(record->uid)));
    }
    auto forgotten = p_.store->Forget(record->id);
    if (!forgotten.ok()) return forgotten.status();
    response->set_decision_id(record->id);
    response->set_outcomes(*forgotten);
    spdlog::info("event=learning.forgotten user={} decision={} owner={} outcomes={}", caller.user,
                 record->id, UserName(record->uid), *forgotten);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* TuningService::Health(grpc::CallbackServerContext* context,
                                                const v1::HealthRequest* request,
                                                v1::HealthResponse* response) {
  // No credential: whether the daemon answers, and as which version, is no secret.
  NoteClientVersion(request->client_version(), "xdeep");
  response->set_version(XDEEP_VERSION);
  response->set_started_unix(p_.started_unix);
  response->set_listen(p_.listen);
  absl::StatusOr<int> store_schema = p_.store->SchemaVersion();
  absl::StatusOr<int> ledger_schema = p_.ledger->SchemaVersion();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!store_schema.ok() || !ledger_schema.ok()) {
    reactor->Finish(
        ToGrpcStatus(store_schema.ok() ? ledger_schema.status() : store_schema.status()));
    return reactor;
  }
  response->set_store_schema(*store_schema);
  response->set_ledger_schema(*ledger_schema);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace xdeep::daemon
