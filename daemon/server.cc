// Daemon assembly (see server.h).
#include "daemon/server.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "absl/status/status.h"
#include "client/socket_daemon_client.h"
#include "daemon/job_records.h"
#include "daemon/probe_scheduler.h"
#include "daemon/slurm_jobs.h"
#include "daemon/subprocess.h"
#include "profiler/atomic_file.h"
#include "tuner/probe_shapes.h"

namespace xdeep::daemon {
namespace {

constexpr std::string_view kUnixPrefix = "unix://";

// A stale socket from a crashed daemon would make bind fail; a live daemon
// on it is an error the admin must see.
absl::Status PrepareUnixSocket(const std::string& listen) {
  if (!listen.starts_with(kUnixPrefix)) return absl::OkStatus();
  std::filesystem::path path(listen.substr(kUnixPrefix.size()));
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::FailedPreconditionError(
        fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  }
  std::filesystem::remove(path, ec);
  return absl::OkStatus();
}

// Decisions named by the AdminComment (set by job_submit.lua) of a job in
// slurmctld's memory: running, pending, or ended within MinJobAge.
absl::StatusOr<std::set<std::string>> DecisionsSlurmHolds() {
  auto run = RunCommand({"squeue", "--json"}, std::chrono::seconds(10));
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    return absl::UnavailableError(fmt::format("squeue --json failed: {}", run->err));
  }
  auto jobs = ParseSqueueJson(run->out);
  if (!jobs.ok()) return absl::UnavailableError(jobs.status().message());
  constexpr std::string_view kPrefix = "xdeep:";
  std::set<std::string> held;
  for (const SlurmJob& job : *jobs) {
    if (job.admin_comment.starts_with(kPrefix) && job.admin_comment.size() > kPrefix.size()) {
      held.insert(job.admin_comment.substr(kPrefix.size()));
    }
  }
  return held;
}

absl::StatusOr<bool> SlurmHoldsJob(const std::string& decision_id) {
  auto held = DecisionsSlurmHolds();
  if (!held.ok()) return held.status();
  return held->contains(decision_id);
}

// The files a probe job of `req` reads (its shapes files) and, given its
// report, the heuristic's answers the job merged into it: none is needed once
// the job is over (a shapes file is ~0.3 MB for 3,324 GEMMs).
void RemoveProbeInputs(const ProbeRequest& req, const std::string& report_path) {
  std::vector<std::string> paths = {req.shapes_file, req.heuristic_shapes_file};
  if (!report_path.empty()) paths.push_back(report_path + ".heuristic.json");
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!path.empty() && !std::filesystem::remove(path, ec) && ec) {
      spdlog::warn("event=probe.cleanup_failed path=\"{}\" reason=\"{}\"", path, ec.message());
    }
  }
}

}  // namespace

std::string AdmitSocketPath(const ServerConfig& server) {
  if (!server.admit_socket.empty()) return server.admit_socket;
  if (!server.listen.starts_with(kUnixPrefix)) return "";
  return server.listen.substr(kUnixPrefix.size()) + ".admit";
}

absl::StatusOr<tuner::HardwareProfile> LoadHardwareProfile(const HardwareConfig& config) {
  if (!config.probe_reports.empty()) {
    const std::string& path = config.probe_reports.front();
    std::ifstream in(path);
    if (!in) {
      return absl::NotFoundError(
          fmt::format("{}: cannot read probe report ([hardware] probe_reports)", path));
    }
    std::stringstream text;
    text << in.rdbuf();
    return tuner::HardwareProfileFromProbeReport(text.str(), path);
  }
  auto profile = tuner::BuiltinHardwareProfile(config.profile);
  if (!profile.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("[hardware] profile = \"{}\" is not a built-in profile; use one of: {}",
                    config.profile, fmt::join(tuner::BuiltinHardwareProfileNames(), ", ")));
  }
  return profile;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const DaemonConfig& config) {
  auto daemon = std::unique_ptr<Daemon>(new Daemon());
  daemon->config_ = config;

  // Before anything is opened or bound: a second daemon on this configuration
  // must not touch the first one's database, spool or socket.
  auto spool = SpoolClaim::Take(config.store.jobcomp_spool);
  if (!spool.ok()) return spool.status();
  daemon->spool_claim_ = std::move(*spool);
  auto ledger_claim = LedgerClaim::Take(config.store);
  if (!ledger_claim.ok()) return ledger_claim.status();
  daemon->ledger_claim_ = std::move(*ledger_claim);

  auto store = Store::Open(config.store.path);
  if (!store.ok()) return store.status();
  daemon->store_ = std::move(*store);
  auto ledger = Ledger::Open(config.store.path);
  if (!ledger.ok()) return ledger.status();
  daemon->ledger_ = std::move(*ledger);
  daemon->ledger_claim_->NoteOpened();

  auto hardware = LoadHardwareProfile(config.hardware);
  if (!hardware.ok()) return hardware.status();
  ApplySiteFabric(config.hardware, &*hardware);
  spdlog::info("event=hardware profile=\"{}\"", hardware->Label());

  daemon->auth_ = config.identity.mode == "munge"
                      ? MakeMungeAuthenticator(config.identity.munge_socket)
                      : MakeTrustingAuthenticator();
  daemon->inventory_ = std::make_unique<SlurmInventory>();
  SlurmInventory* inventory = daemon->inventory_.get();
  daemon->maker_ = std::make_unique<DecisionMaker>(
      std::make_shared<const PolicyConfig>(config.policy), std::move(*hardware),
      [inventory](const std::string& partition) { return inventory->Shape(partition); },
      daemon->store_.get(), daemon->ledger_.get());
  daemon->maker_->SetFreshShape(
      [inventory](const std::string& partition) { return inventory->FreshShape(partition); });
  daemon->work_ = std::make_unique<WorkQueue>(config.server.worker_threads);
  daemon->heavy_ = std::make_unique<WorkQueue>(1, /*nice=*/19);
  Daemon* self = daemon.get();
  daemon->maker_->SetLaunchProbe([self](const std::string& partition, int gpus, int wait_s,
                                        const tuner::ProbeShapeFiles& shapes,
                                        const std::function<void(const std::string&)>& on_wait) {
    auto probed = self->Probe(partition, false, 1, gpus, wait_s, shapes, on_wait);
    if (!probed.ok()) return probed.status();
    return probed->ingested() ? absl::OkStatus()
                              : absl::FailedPreconditionError("the probes found no GPU figures");
  });
  daemon->heuristic_queue_ = std::make_unique<HeuristicProbeQueue>(
      [self](const HeuristicProbeJob& job, const std::function<bool()>& stopping) {
        return self->ProbeHeuristic(job, stopping);
      });
  daemon->maker_->SetHeuristicGap(
      [self](const std::string& partition, int gpus,
             const std::shared_ptr<const tuner::HardwareProfile>& hardware,
             const tuner::Workload& workload, const std::string& fingerprint) {
        return self->NoteHeuristicGap(partition, gpus, hardware, workload, fingerprint);
      });
  daemon->service_ = std::make_unique<TuningService>(ServiceParts{
      .maker = daemon->maker_.get(),
      .auth = daemon->auth_.get(),
      .store = daemon->store_.get(),
      .ledger = daemon->ledger_.get(),
      .work = daemon->work_.get(),
      .heavy = daemon->heavy_.get(),
      .heavy_after = std::chrono::milliseconds(config.server.heavy_after_ms),
      .pacer = &daemon->heavy_pacer_,
      .reload_policy = [self] { return self->ReloadPolicy(); },
      .run_probes = [self](const xdeep::v1::RunProbesRequest& r) { return self->RunProbes(r); },
      .slurm_holds_job = SlurmHoldsJob,
      .controller_users = config.identity.controller_users,
      .listen = config.server.listen,
      .started_unix = static_cast<int64_t>(std::time(nullptr)),
  });

  if (absl::Status s = PrepareUnixSocket(config.server.listen); !s.ok()) return s;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.server.listen, grpc::InsecureServerCredentials(),
                           &daemon->bound_port_);
  builder.RegisterService(daemon->service_.get());
  daemon->server_ = builder.BuildAndStart();
  if (daemon->server_ == nullptr) {
    return absl::UnavailableError(fmt::format(
        "cannot listen on {}; is another xdeepd running? ([server] listen)", config.server.listen));
  }
  if (config.server.listen.starts_with(kUnixPrefix)) {
    daemon->bound_port_ = 0;  // gRPC reports 1 for a unix socket
    // Every user's srun connects; identity comes from MUNGE, not from the socket.
    chmod(config.server.listen.substr(kUnixPrefix.size()).c_str(), 0666);
  }
  const std::string admit_path = AdmitSocketPath(config.server);
  if (!admit_path.empty()) {
    TuningService* service = daemon->service_.get();
    auto admit = AdmitSocket::Start(
        admit_path,
        {.may_ask = [service](const Caller& c) { return service->MayAdmit(c); },
         .admit = [service](
                      const Caller& c, const xdeep::v1::AdmitRequest& req,
                      xdeep::v1::AdmitResponse* resp) { return service->AdmitAs(c, req, resp); }});
    if (!admit.ok()) return admit.status();
    daemon->admit_socket_ = std::move(*admit);
  }
  // srun's plugin and xdeep-step-report ask Tune and Report here without gRPC
  // (client/socket_daemon_client.h); TCP sites use gRPC alone.
  const std::string client_path = client::ClientSocketPath(config.server.listen);
  if (!client_path.empty()) {
    TuningService* service = daemon->service_.get();
    auto local = ClientSocket::Start(
        client_path,
        {.tune = [service](
                     const xdeep::v1::TuneRequest& req,
                     std::chrono::system_clock::time_point deadline,
                     std::shared_ptr<TuneStream> stream,
                     const std::string& peer) { service->TuneTo(req, deadline, stream, peer); },
         .report = [service](
                       const xdeep::v1::ReportRequest& req,
                       xdeep::v1::ReportResponse* resp) { return service->ReportFrom(req, resp); }},
        ClientSocket::Limits{});
    if (!local.ok()) return local.status();
    daemon->client_socket_ = std::move(*local);
  }
  daemon->expiry_ = std::thread([self] {
    std::unique_lock lock(self->expiry_mu_);
    const auto interval = std::chrono::seconds(self->config_.server.ledger_interval_s);
    while (!self->expiry_cv_.wait_for(lock, interval, [self] { return self->stopping_; })) {
      self->SettleFinishedJobs();
      auto expired = self->ledger_->ExpireStale(self->maker_->Now());
      if (expired.ok() && *expired > 0) spdlog::info("event=ledger.expired rows={}", *expired);
    }
  });
  spdlog::info("event=listening address={} port={} admit_socket={} pid={}", config.server.listen,
               daemon->bound_port_, admit_path.empty() ? "-" : admit_path, getpid());
  return daemon;
}

absl::StatusOr<xdeep::v1::RunProbesResponse> Daemon::RunProbes(
    const xdeep::v1::RunProbesRequest& r) {
  const ProbeConfig& pc = maker_->policy()->probes;
  std::optional<tuner::Workload> workload;
  if (r.has_workload()) {
    auto loaded = LoadWorkload(r.workload());
    if (!loaded.ok()) return loaded.status();
    workload = *std::move(loaded);
  }
  // GPU compute only: the named workload's GEMMs timed, and the heuristic's
  // kernel of every GEMM the search may consider (the presets' too).
  tuner::ProbeShapeFiles shapes;
  if (!r.collectives() && r.gpus_per_node() > 0) {
    shapes = tuner::ProbeShapesFor(workload ? &*workload : nullptr, r.gpus_per_node());
  }
  return Probe(r.partition().empty() ? pc.partition : r.partition(), r.collectives(), r.nodes(),
               r.gpus_per_node(), pc.time_limit_s + 60, shapes);
}

absl::StatusOr<xdeep::v1::RunProbesResponse> Daemon::Probe(
    const std::string& partition, bool collectives, int nodes, int gpus_per_node, int wait_s,
    const tuner::ProbeShapeFiles& shapes, const std::function<void(const std::string&)>& on_wait,
    bool heuristic_only, const std::function<bool()>& cancelled) {
  namespace v1 = xdeep::v1;
  auto policy = maker_->policy();
  const ProbeConfig& pc = policy->probes;
  // Probe jobs spend from their own budget ([probes] budget per period): the
  // longest they may run, on the GPUs they hold, at the partition's price.
  const int64_t now = maker_->Now();
  Charge charge;
  charge.decision_id = fmt::format("probe-{}-{}", now, ++probe_counter_);
  charge.user = "xdeepd";
  charge.account = "xdeep-probes";
  charge.partition = partition;
  charge.nodes = std::max(1, nodes);
  charge.gpus = std::max(1, charge.nodes * gpus_per_node);
  charge.price_per_gpu_hour = policy->PricePerGpuHour(partition);
  charge.amount = charge.gpus * pc.time_limit_s / 3600.0 * charge.price_per_gpu_hour;
  if (absl::Status s =
          ledger_->Reserve(charge, {{"account", "xdeep-probes", pc.budget}},
                           PeriodStart(policy->budget_period, now), now, pc.time_limit_s + 3600);
      !s.ok()) {
    return absl::ResourceExhaustedError(
        fmt::format("probe budget exhausted ([probes] budget): {}", std::string(s.message())));
  }
  std::error_code ec;
  std::filesystem::create_directories(pc.reports_dir, ec);
  ProbeScheduler scheduler({.probe_path = pc.probe_path,
                            .reports_dir = pc.reports_dir,
                            .framework_probe = pc.framework_probe});
  ProbeRequest req;
  req.partition = partition;
  req.time_limit = absl::Seconds(pc.time_limit_s);
  req.set = collectives ? ProbeSet::kCollectives : ProbeSet::kCompute;
  req.nodes = std::max(1, nodes);
  req.gpus_per_node = gpus_per_node;
  req.heuristic_only = heuristic_only;
  req.cancelled = cancelled;
  if (on_wait) {
    // A line when the state changes and every 5 s: enough for a redrawn
    // progress line, few events on the stream.
    req.on_wait = [&req, &on_wait, last_state = std::string("-"),
                   last_sent = absl::InfinitePast()](const ProbeWait& w) mutable {
      const absl::Time now = absl::Now();
      if (w.state == last_state && now - last_sent < absl::Seconds(5)) return;
      last_state = w.state;
      last_sent = now;
      on_wait(DescribeWait(req, w));
    };
  }
  if (!collectives && gpus_per_node > 0) {
    // Next to the reports: the compute node reads them from the shared directory.
    for (const auto& [text, suffix, file] :
         {std::tuple(&shapes.timed, "-shapes.json", &req.shapes_file),
          std::tuple(&shapes.heuristic, "-heuristic-shapes.json", &req.heuristic_shapes_file)}) {
      if (text->empty()) continue;
      const std::string path =
          (std::filesystem::path(pc.reports_dir) / (charge.decision_id + suffix)).string();
      if (absl::Status s = profiler::WriteFileAtomically(path, *text); !s.ok()) {
        // No job reads them: nothing half-written stays behind.
        RemoveProbeInputs(req, "");
        (void)ledger_->Release(charge.decision_id, 0, maker_->Now());
        return s;
      }
      *file = path;
    }
  }
  const auto started = std::chrono::steady_clock::now();
  auto outcome = scheduler.Run(req, absl::Seconds(wait_s));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  (void)ledger_->Settle(charge.decision_id, 0, elapsed, maker_->Now());
  // A failed job keeps its inputs beside its log for a look.
  if (!outcome.ok()) return outcome.status();
  // The merged report is the record: the shapes it was asked about and the
  // heuristic's own answers, already merged into it, are not.
  RemoveProbeInputs(req, outcome->report_path);
  v1::RunProbesResponse resp;
  resp.set_job_id(outcome->job_id);
  resp.set_report_path(outcome->report_path);
  resp.set_summary(fmt::format(
      "{} GEMM, {} bandwidth, {} collective measurements, {} GEMM kernels from cuBLASLt's "
      "heuristic, from job {}",
      outcome->report.gemm.size(), outcome->report.bandwidth.size(),
      outcome->report.collectives.size(), outcome->report.gemm_algos.size(), outcome->job_id));
  std::ifstream in(outcome->report_path);
  std::stringstream text;
  text << in.rdbuf();
  // The heuristic's answers, whatever the job: they join those stored for
  // the report's GPU and library versions.
  auto answered = tuner::HeuristicAnswersFromProbeReport(text.str(), outcome->report_path);
  if (heuristic_only) {
    // Answers alone: for the GPU and versions of the profile in use, they
    // join its kernel table too.
    if (answered.ok()) {
      std::vector<tuner::GemmPoint> all = StoredHeuristicAnswers(answered->key, answered->answers);
      std::shared_ptr<const tuner::HardwareProfile> current = maker_->hardware();
      bool same_key;
      {
        std::lock_guard lock(answers_mu_);
        same_key = profile_heuristic_key_ == answered->key;
      }
      if (!current->builtin && same_key) {
        tuner::HardwareProfile updated = *current;
        tuner::SetHeuristicAnswers(&updated, std::move(all));
        maker_->SetHardware(std::move(updated));
      }
      resp.set_ingested(true);
      spdlog::info("event=probe.heuristic_answers key=\"{}\" answers={} installed={}",
                   answered->key, answered->answers.size(), !current->builtin && same_key);
    }
  } else if (auto measured =
                 tuner::HardwareProfileFromProbeReport(text.str(), outcome->report_path);
             measured.ok()) {
    // GPU reports parameterise the hardware profile from now on; a CPU-only
    // report has no GPU figures and is only stored. Earlier probes' heuristic
    // answers for the same GPU and library versions stay valid: they join.
    const std::string key = answered.ok() ? answered->key : std::string();
    std::vector<tuner::GemmPoint> all = StoredHeuristicAnswers(key, measured->gemm_heuristic);
    if (all.size() != measured->gemm_heuristic.size()) {
      tuner::SetHeuristicAnswers(&*measured, std::move(all));
    }
    ApplySiteFabric(config_.hardware, &*measured);
    {
      std::lock_guard lock(answers_mu_);
      profile_heuristic_key_ = key;
    }
    maker_->SetHardware(*measured);
    resp.set_ingested(true);
    spdlog::info("event=hardware profile=\"{}\"", measured->Label());
  }
  if (absl::Status s = store_->SaveProbeReport(outcome->job_id, req.partition, outcome->report_path,
                                               resp.ingested());
      !s.ok()) {
    return s;
  }
  return resp;
}

std::vector<tuner::GemmPoint> Daemon::StoredHeuristicAnswers(
    const std::string& key, const std::vector<tuner::GemmPoint>& answers) {
  const ProbeConfig& pc = maker_->policy()->probes;
  const std::string path =
      (std::filesystem::path(pc.reports_dir) / "gemm-heuristic-answers.json").string();
  std::lock_guard lock(answers_mu_);
  if (answers_ == nullptr || answers_path_ != path) {
    auto loaded = tuner::GemmAnswerBook::Load(path, pc.heuristic_answers_max);
    if (!loaded.ok()) {
      spdlog::warn("event=probe.answers_unreadable reason=\"{}\"",
                   std::string(loaded.status().message()));
    }
    answers_ = std::make_unique<tuner::GemmAnswerBook>(
        loaded.ok() ? *std::move(loaded) : tuner::GemmAnswerBook(pc.heuristic_answers_max));
    answers_path_ = path;
  }
  answers_->Merge(key, answers);
  if (absl::Status s = answers_->Save(path); !s.ok()) {
    spdlog::warn("event=probe.answers_unsaved reason=\"{}\"", std::string(s.message()));
  }
  return answers_->Answers(key);
}

absl::Status Daemon::ProbeHeuristic(const HeuristicProbeJob& job,
                                    const std::function<bool()>& stopping) {
  const ProbeConfig& pc = maker_->policy()->probes;
  tuner::ProbeShapeFiles shapes;
  shapes.heuristic = tuner::HeuristicGemmsJson(job.gap->missing);
  spdlog::info("event=probe.heuristic_submit partition={} shapes={}", job.partition,
               job.gap->missing.size());
  // One GPU: the heuristic runs on one device of the partition's GPU model.
  auto probed = Probe(job.partition, false, 1, 1, pc.time_limit_s + 60, shapes, {},
                      /*heuristic_only=*/true, stopping);
  if (!probed.ok()) return probed.status();
  return probed->ingested() ? absl::OkStatus()
                            : absl::DataLossError("the job's report holds no heuristic answers");
}

std::string Daemon::NoteHeuristicGap(const std::string& partition, int gpus_per_node,
                                     const std::shared_ptr<const tuner::HardwareProfile>& hardware,
                                     const tuner::Workload& workload,
                                     const std::string& fingerprint) {
  const int interval_s = maker_->policy()->probes.heuristic_interval_s;
  if (interval_s <= 0) return "";
  std::shared_ptr<const HeuristicGap> gap =
      heuristic_coverage_.Check(hardware, workload, fingerprint, gpus_per_node);
  if (gap == nullptr) return "";
  const std::string what = fmt::format(
      "{} of this workload's {} GEMM shapes have no cuBLASLt kernel on record "
      "(modelled on their best tile)",
      gap->missing.size(), gap->asked);
  switch (heuristic_queue_->Submit({partition, gpus_per_node, gap}, interval_s)) {
    case HeuristicProbeQueue::Offer::kQueued:
      return fmt::format(
          "{}; a probe job on partition {} asks cuBLASLt's heuristic for later "
          "decisions",
          what, partition);
    case HeuristicProbeQueue::Offer::kPending:
      return fmt::format("{}; a probe job asking about them is pending", what);
    case HeuristicProbeQueue::Offer::kRateLimited:
      return fmt::format(
          "{}; a decision after [probes] heuristic_interval_s = {} s since the "
          "last heuristic probe job on partition {} asks",
          what, interval_s, partition);
    case HeuristicProbeQueue::Offer::kOff:
      break;
  }
  return "";
}

void Daemon::NoteRunningStrictJobs(const PolicyConfig& policy) {
  // Only strict partitions are billed without a reservation; with none, nothing to watch.
  if (!policy.Strict("") &&
      std::none_of(policy.partitions.begin(), policy.partitions.end(),
                   [&](const auto& named) { return policy.Strict(named.first); })) {
    return;
  }
  auto run = RunCommand({"squeue", "--json"}, std::chrono::seconds(10));
  if (!run.ok() || run->exit_code != 0) return;
  auto jobs = ParseSqueueJson(run->out);
  if (!jobs.ok()) return;
  std::vector<std::pair<uint32_t, int64_t>> starts;
  for (const SlurmJob& job : *jobs) {
    if (job.state == "RUNNING" && job.start_time > 0 && policy.Strict(job.partition)) {
      starts.emplace_back(job.job_id, job.start_time);
    }
  }
  if (!starts.empty()) (void)ledger_->NoteRunStarts(starts);
}

void Daemon::SettleFinishedJobs() {
  SlurmInventory* inventory = inventory_.get();
  auto gpus_per_node = [inventory](const std::string& partition) {
    auto shape = inventory->Shape(partition);
    return shape.ok() ? shape->gpus_per_node : 0;
  };
  const int64_t now = maker_->Now();
  auto policy = maker_->policy();
  NoteRunningStrictJobs(*policy);
  Store* store = store_.get();
  // Slurm's final state decides whether a tuned run may teach the model.
  auto job_ended = [store](const JobUsage& job) {
    if (job.decision_id.empty()) return;
    if (absl::Status s = store->RecordJobEnd(job.decision_id, job.job_id, job.state); !s.ok()) {
      spdlog::error("event=learning.job_end_failed job={} reason=\"{}\"", job.job_id,
                    std::string(s.message()));
    }
  };
  // This daemon's database was replaced under it, or another daemon took the
  // spool (it was made again under this one): its records are not this
  // ledger's, and releasing holds whose records wait there unread would lose
  // their charges.
  if (!ledger_claim_->StillOpen()) {
    spool_claim_->Release();  // the daemon on the new database reads the spool
    return;
  }
  if (!spool_claim_->Renew()) return;
  DrainJobRecords(config_.store.jobcomp_spool, *policy, *ledger_, gpus_per_node, now, job_ended);
  // Admitted, yet no job in Slurm and no record: the submission failed after
  // job_submit.lua (an invalid node list, a limit). Slurm creates the job
  // right after admitting it, so a short grace suffices.
  constexpr int64_t kJobCreationGraceS = 10;
  auto bound = ledger_->BoundBefore(now - kJobCreationGraceS);
  if (!bound.ok() || bound->empty()) return;
  auto held = DecisionsSlurmHolds();
  if (!held.ok()) return;
  for (const ReservationRecord& r : *bound) {
    if (held->contains(r.decision_id)) continue;
    if (ledger_->Release(r.decision_id, r.uid, now, true).ok()) {
      spdlog::info("event=ledger.released decision={} reason=\"no job in Slurm\"", r.decision_id);
    }
  }
}

absl::Status Daemon::ReloadPolicy() {
  auto fresh = LoadDaemonConfig(config_.source);
  if (!fresh.ok()) {
    spdlog::error("event=policy.reload_failed reason=\"{}\"",
                  std::string(fresh.status().message()));
    return fresh.status();
  }
  maker_->SetPolicy(std::make_shared<const PolicyConfig>(fresh->policy));
  spdlog::info("event=policy.reloaded source={}", config_.source);
  return absl::OkStatus();
}

void Daemon::Shutdown() {
  if (server_ == nullptr) return;
  spdlog::info("event=shutdown grace_ms={}", config_.server.shutdown_grace_ms);
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(config_.server.shutdown_grace_ms));
}

void Daemon::Wait() {
  if (server_ != nullptr) server_->Wait();
}

Daemon::~Daemon() {
  Shutdown();
  admit_socket_.reset();  // before the service they call
  client_socket_.reset();
  {
    std::lock_guard lock(expiry_mu_);
    stopping_ = true;
  }
  expiry_cv_.notify_all();
  if (expiry_.joinable()) expiry_.join();
  // Workers first (one may still hand a search to the heavy lane), both
  // before the maker and store they use go away; the heuristic jobs' thread
  // (it ingests through them) too.
  heuristic_queue_.reset();
  work_.reset();
  heavy_.reset();
}

}  // namespace xdeep::daemon
