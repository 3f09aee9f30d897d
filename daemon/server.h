// Assembles the daemon from its configuration: store, identity, hardware
// profile, decision maker, gRPC server with health checking, admission socket.
#pragma once

#include <grpcpp/server.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/statusor.h"
#include "daemon/admit_socket.h"
#include "daemon/client_socket.h"
#include "daemon/config.h"
#include "daemon/decision_maker.h"
#include "daemon/heavy_pacer.h"
#include "daemon/heuristic_coverage.h"
#include "daemon/heuristic_probe_queue.h"
#include "daemon/identity.h"
#include "daemon/instance_lock.h"
#include "daemon/ledger.h"
#include "daemon/slurm_inventory.h"
#include "daemon/store.h"
#include "daemon/tuning_service.h"
#include "daemon/work_queue.h"
#include "tuner/gemm_answer_book.h"

namespace xdeep::daemon {

// Where the admission socket listens: [server] admit_socket, else the unix
// `listen` path + ".admit"; empty (none) for a TCP `listen` without it.
std::string AdmitSocketPath(const ServerConfig& server);

class Daemon {
 public:
  // Claims the spool and the database (refused beside another daemon on
  // either), opens the store, loads the hardware profile and binds the listen address.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const DaemonConfig& config);
  ~Daemon();

  // Re-reads the policy from the configuration file; on error the old one
  // stays and the error (file:line) is returned. In-flight calls are not dropped.
  absl::Status ReloadPolicy();

  // Runs a probe job through Slurm, stores its report and, for GPU reports,
  // makes it the hardware profile of later decisions.
  absl::StatusOr<xdeep::v1::RunProbesResponse> RunProbes(const xdeep::v1::RunProbesRequest& r);
  // The shared path: probe budget, Slurm job, report, ingestion. `wait_s` bounds
  // the whole wait (queue included); the job is cancelled past it.
  // `shapes`: xdeep.gemm_shapes/1 documents for the GPU compute set, the GEMMs
  // to time (empty: xdeep-probe's default shapes) and those whose kernel
  // cuBLASLt's heuristic names (empty: none). `on_wait` gets a line on the
  // wait (what runs, elapsed, at most) when the job's state changes and every 5 s.
  // `heuristic_only`: the job asks cuBLASLt's heuristic about `shapes.heuristic`
  // alone (no timed set; HeuristicProbeQueue's jobs); `cancelled` turning true
  // cancels the job. Every probe's heuristic answers join those stored for its
  // GPU and library versions (StoredHeuristicAnswers).
  absl::StatusOr<xdeep::v1::RunProbesResponse> Probe(
      const std::string& partition, bool collectives, int nodes, int gpus_per_node, int wait_s,
      const tuner::ProbeShapeFiles& shapes = {},
      const std::function<void(const std::string&)>& on_wait = {}, bool heuristic_only = false,
      const std::function<bool()>& cancelled = {});

  // Charges the job-completion records slurmctld spooled (job_records.h).
  void SettleFinishedJobs();
  // Notes when running jobs on strict partitions started (for requeued runs).
  void NoteRunningStrictJobs(const PolicyConfig& policy);

  // Stops accepting calls, gives in-flight ones the configured grace period.
  void Shutdown();
  void Wait();
  // The TCP port actually bound (for "host:0"), 0 on a unix socket.
  int bound_port() const { return bound_port_; }

 private:
  Daemon() = default;

  // Merges `answers` into those stored under `key` (<reports_dir>/
  // gemm-heuristic-answers.json, [probes] heuristic_answers_max per key) and
  // returns all the key's answers.
  std::vector<tuner::GemmPoint> StoredHeuristicAnswers(const std::string& key,
                                                       const std::vector<tuner::GemmPoint>& answers);
  // Runs one heuristic-only job of the queue and installs its answers.
  absl::Status ProbeHeuristic(const HeuristicProbeJob& job, const std::function<bool()>& stopping);
  // The decision path's HeuristicGapFn.
  std::string NoteHeuristicGap(const std::string& partition, int gpus_per_node,
                               const std::shared_ptr<const tuner::HardwareProfile>& hardware,
                               const tuner::Workload& workload, const std::string& fingerprint);

  DaemonConfig config_;
  // Taken first and dropped last: no other daemon reads this spool or opens
  // this database while this one runs (instance_lock.h).
  std::unique_ptr<LedgerClaim> ledger_claim_;
  std::unique_ptr<SpoolClaim> spool_claim_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<SlurmInventory> inventory_;
  std::unique_ptr<DecisionMaker> maker_;
  std::unique_ptr<WorkQueue> work_;
  std::unique_ptr<WorkQueue> heavy_;  // Tune searches past heavy_after_ms of CPU
  HeavyPacer heavy_pacer_;
  std::unique_ptr<TuningService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AdmitSocket> admit_socket_;  // slurmctld's xdeep-admit asks here
  std::unique_ptr<ClientSocket> client_socket_;  // srun's plugin, xdeep-step-report
  int bound_port_ = 0;
  std::atomic<int> probe_counter_{0};
  std::mutex answers_mu_;
  std::string answers_path_;                       // the book's file; guarded by answers_mu_
  std::string profile_heuristic_key_;  // the probed profile's answers' key; guarded by answers_mu_
  std::unique_ptr<tuner::GemmAnswerBook> answers_;  // guarded by answers_mu_
  HeuristicCoverage heuristic_coverage_;
  std::unique_ptr<HeuristicProbeQueue> heuristic_queue_;
  // Expires stale reservations once a minute.
  std::thread expiry_;
  std::mutex expiry_mu_;
  std::condition_variable expiry_cv_;
  bool stopping_ = false;
};

// Reads the configured hardware profile: the first probe report, else the built-in.
absl::StatusOr<tuner::HardwareProfile> LoadHardwareProfile(const HardwareConfig& config);

}  // namespace xdeep::daemon
