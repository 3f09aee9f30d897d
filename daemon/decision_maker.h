// Turns a TuneRequest into a Decision: parses the workload, bounds the search
// by policy, partition, the user's own limits and any enclosing allocation,
// runs the tuner's search, checks the budgets and reserves the predicted cost
// in the ledger. Protocol-level logic only; all modelling lives in tuner/.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/decision_cache.h"
#include "daemon/request_weight.h"
#include "daemon/identity.h"
#include "daemon/learning.h"
#include "daemon/ledger.h"
#include "daemon/slurm_inventory.h"
#include "daemon/store.h"
#include "tuner/hardware_profile.h"
#include "tuner/probe_shapes.h"
#include "tuner/search.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

using ProgressFn = std::function<void(const xdeep::v1::Progress&)>;

// Where the cluster's shape comes from; sinfo in production, fixed in tests.
using ShapeFn = std::function<absl::StatusOr<PartitionShape>(const std::string& partition)>;
// Seconds since the epoch; replaced in tests.
using ClockFn = std::function<int64_t()>;

// Runs the compute probes on a partition for at most `wait_s` and, when they
// succeed, installs the measured profile (DecisionMaker::SetHardware).
// `shapes` are the launching workload's GEMMs to time and to ask cuBLASLt's
// heuristic about (tuner::ProbeShapesFor); `on_wait` gets one line on the
// wait (what runs, elapsed, at most) as it goes.
using LaunchProbeFn = std::function<absl::Status(
    const std::string& partition, int gpus_per_node, int wait_s,
    const tuner::ProbeShapeFiles& shapes, const std::function<void(const std::string&)>& on_wait)>;

// Called on a decision made from a measured profile with kernels: notes
// whether the workload's GEMMs have heuristic answers there and, where they
// have not, queues a job that asks (HeuristicProbeQueue) without waiting for
// it. Returns a line for the decision's progress (empty: nothing to say).
using HeuristicGapFn = std::function<std::string(
    const std::string& partition, int gpus_per_node,
    const std::shared_ptr<const tuner::HardwareProfile>& hardware,
    const tuner::Workload& workload, const std::string& fingerprint)>;

// Asked while the search runs; a non-OK status stops it and becomes the
// request's answer (the client's deadline passed, it went away).
using InterruptFn = std::function<absl::Status()>;

// The status a request ends with when it is too heavy for the lane it runs in
// (Aborted with this message): the caller runs it again in its heavy lane.
inline constexpr char kMovedToHeavyLane[] = "moved to the heavy lane";

// The status a `cached_only` Decide ends with when the request needs work
// that may take long (Aborted with this message): the caller runs it again
// on a worker thread.
inline constexpr char kNeedsWorker[] = "needs a worker";

// A decision, or the reason the launch is left as the user wrote it.
struct DecideResult {
  std::optional<xdeep::v1::Decision> decision;
  std::string skip_reason;
  // With Decide's `defer_record`, a decision that holds no reservation comes
  // back with its record unwritten: the caller has it committed
  // (DecisionMaker::SaveRecordThen) before it answers.
  std::optional<DecisionRecord> record;
};

class DecisionMaker {
 public:
  DecisionMaker(std::shared_ptr<const PolicyConfig> policy, tuner::HardwareProfile hardware,
                ShapeFn shape, Store* store, Ledger* ledger, ClockFn clock = nullptr);

  // Without `allow_heavy`, a workload of more than kHeavyLayers layers ends
  // the request with kMovedToHeavyLane before any work that grows with it.
  // With `defer_record`, a decision that reserves nothing is returned with
  // its record in DecideResult::record instead of written here.
  // With `cached_only` (and `defer_record`), the request is decided only if
  // what it needs is cached (parsed workload, partition shape, correction,
  // search result) and it reserves nothing and probes nothing: no parse, no
  // search, no Slurm command, no read or write of the store. Otherwise it
  // ends with kNeedsWorker before any such work (a caller on gRPC's thread
  // hands it to a worker).
  absl::StatusOr<DecideResult> Decide(const xdeep::v1::TuneRequest& request, const Caller& caller,
                                      const ProgressFn& progress,
                                      const InterruptFn& interrupt = nullptr,
                                      bool allow_heavy = true, bool defer_record = false,
                                      bool cached_only = false) const;
  // Writes a deferred record (DecideResult::record) in the store's next group
  // commit; `done` gets the outcome once that commit is done, on the thread
  // that ran it (Store::SaveDecisionThen). Without a store: at once, OK.
  void SaveRecordThen(DecisionRecord record, std::function<void(absl::Status)> done) const;

  // Swapped in on SIGHUP; in-flight decisions finish under the old policy.
  void SetPolicy(std::shared_ptr<const PolicyConfig> policy);
  std::shared_ptr<const PolicyConfig> policy() const;
  std::shared_ptr<const tuner::HardwareProfile> hardware() const;
  // A measured profile (from probes) replaces the one in use for later decisions.
  void SetHardware(tuner::HardwareProfile hardware);
  // How launches probe partitions that have no measurements ([probes] on_launch).
  void SetLaunchProbe(LaunchProbeFn probe) { launch_probe_ = std::move(probe); }
  void SetHeuristicGap(HeuristicGapFn gap) { heuristic_gap_ = std::move(gap); }
  // A partition's shape without asking Slurm (an error when it would have
  // to), for `cached_only` decisions; unset, those go to a worker.
  void SetFreshShape(ShapeFn fresh) { fresh_shape_ = std::move(fresh); }
  int64_t Now() const { return clock_(); }

 private:
  absl::Status CheckBudget(const PolicyConfig& policy, const tuner::HardwareProfile& hardware,
                           const xdeep::v1::TuneRequest& request, const Caller& caller,
                           const tuner::Workload& workload, const tuner::SearchLimits& limits,
                           const PartitionShape& shape, xdeep::v1::Decision& decision,
                           const ProgressFn& progress, const Ledger::AlongFn& along) const;

  mutable std::mutex mu_;
  std::shared_ptr<const PolicyConfig> policy_;
  // Shared, not copied per decision; swapped whole when probes measure anew.
  std::shared_ptr<const tuner::HardwareProfile> hardware_;
  uint64_t hardware_generation_ = 0;  // counts SetHardware calls (a cache key)
  ShapeFn shape_;
  ShapeFn fresh_shape_;
  Store* store_;
  Ledger* ledger_;
  ClockFn clock_;
  LaunchProbeFn launch_probe_;
  HeuristicGapFn heuristic_gap_;
  mutable std::set<std::string> probed_partitions_;  // guarded by mu_
  mutable DecisionCache cache_;
};

// The workload a request names (TOML text or preset); errors say how to fix it.
absl::StatusOr<tuner::Workload> LoadWorkload(const v1::Workload& w,
                                             const tuner::BuildPoll& poll = nullptr);

// What set each of BuildLimits' bounds, in words ("-n (one task per GPU)",
// "the allocation (job 12, --gres=gpu:2)"); empty where nothing bounds it.
struct LimitSources {
  std::string nodes, gpus_per_node, total_gpus, time;
};

// Search limits from policy, partition, user bounds and allocation (exposed for tests).
tuner::SearchLimits BuildLimits(const PolicyConfig& policy, const PartitionShape& shape,
                                const xdeep::v1::TuneRequest& request,
                                LimitSources* sources = nullptr);

// The bounds the chosen configuration reached, for the explanation: "2 GPUs
// per node: the allocation (job 12, --gres=gpu:2)"; empty when it reached none
// (the objective alone chose it).
std::string LimitedBy(const tuner::SearchLimits& limits, const LimitSources& sources,
                      const tuner::Configuration& chosen, const tuner::Prediction& predicted);

// A fresh decision (and reservation) id: 128 random bits in hex.
std::string NewDecisionId();

// The budgets a charge by `caller` on `account` counts against; an error when
// the caller may not charge the account.
absl::StatusOr<std::vector<BudgetScope>> BudgetScopes(const PolicyConfig& policy,
                                                      const std::string& user,
                                                      const std::string& account);

}  // namespace xdeep::daemon
