// DecisionMaker (see decision_maker.h).
#include "daemon/decision_maker.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <random>

#include "absl/status/status.h"
#include "tuner/fingerprint.h"
#include "tuner/probe_shapes.h"
#include "tuner/workload.h"

namespace xdeep::daemon {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string NewDecisionId() {
  // Unique, not secret (the admission token is). It starts with the clock's
  // milliseconds modulo 2^16, so the holds and records a group commit
  // inserts land together on one page of each index keyed by the id (a
  // random id dirties, and writes to the WAL, one page per row); the place
  // sweeps the key space every 65 s, so the 12 characters users see stay as
  // varied as random ones. Then 112 bits from one generator per worker
  // thread, seeded once (a random_device per decision cost a file open).
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seed{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seed);
  }();
  std::uniform_int_distribution<uint64_t> dist;
  return fmt::format("{:04x}{:012x}{:016x}", static_cast<uint64_t>(NowMs()) & 0xffff,
                     dist(gen) & 0xffffffffffffULL, dist(gen));
}

namespace {

namespace v1 = xdeep::v1;

// The clock's milliseconds (12 hex digits), then 256 bits from the kernel's
// CSPRNG: a user who sees their own token learns nothing about anyone else's
// but when it was made. Time-ordered, a group commit's tokens extend the last
// page of their index (see NewDecisionId). job_submit.lua takes any hex.
std::string NewAdmissionToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  std::string token = fmt::format("{:012x}", static_cast<uint64_t>(NowMs()) & 0xffffffffffffULL);
  token.reserve(token.size() + 2 * sizeof bytes);
  for (unsigned char b : bytes) fmt::format_to(std::back_inserter(token), "{:02x}", b);
  return token;
}

v1::Progress Step(std::string stage, std::string message) {
  v1::Progress p;
  p.set_stage(std::move(stage));
  p.set_message(std::move(message));
  return p;
}

tuner::Objective ToObjective(v1::Objective o) {
  switch (o) {
    case v1::OBJECTIVE_TIME:
      return tuner::Objective::kTime;
    case v1::OBJECTIVE_COST_UNDER_DEADLINE:
      return tuner::Objective::kCostUnderDeadline;
    case v1::OBJECTIVE_TIME_UNDER_BUDGET:
      return tuner::Objective::kTimeUnderBudget;
    default:
      return tuner::Objective::kCost;
  }
}

int ShardingStage(tuner::Sharding s) {
  switch (s) {
    case tuner::Sharding::kZero1:
      return 1;
    case tuner::Sharding::kZero2:
      return 2;
    case tuner::Sharding::kZero3:
      return 3;
    default:
      return 0;
  }
}

void Fill(const tuner::Configuration& c, v1::Configuration* out) {
  out->set_nodes(c.nodes);
  out->set_gpus_per_node(c.gpus_per_node);
  out->set_tasks(c.nodes * c.gpus_per_node);
  out->set_data_parallel(c.dp);
  out->set_tensor_parallel(c.tp);
  out->set_pipeline_parallel(c.pp);
  out->set_sharding_stage(ShardingStage(c.sharding));
  out->set_micro_batch(c.micro_batch);
  out->set_grad_accumulation(c.grad_accum);
  out->set_recompute(c.recompute);
  out->set_selective_recompute(c.selective_recompute);
  out->set_global_batch(c.global_batch);
  out->set_strategy(tuner::StrategyName(c));
  if (c.pp > 1) out->set_pipeline_schedule(std::string(tuner::ScheduleName(c.schedule)));
  out->set_virtual_stages(c.pp > 1 ? std::max(1, c.virtual_stages) : 1);
  out->set_context_parallel(c.cp);
  out->set_sequence_parallel(c.sequence_parallel);
}

void Fill(const tuner::Prediction& p, v1::Prediction* out) {
  out->set_step_time_s(p.step_time_s);
  out->set_samples_per_s(p.samples_per_s);
  out->set_time_to_solution_s(p.time_to_solution_s);
  out->set_cost(p.cost);
  out->set_memory_per_gpu_bytes(p.memory_per_gpu_bytes);
}

// Why BuildLimits left nothing to search, naming the option to change.
std::string NoRoomReason(const PartitionShape& shape, const v1::UserBounds& b) {
  if (b.cpus_per_task() > 0 && b.cpus_per_task() > shape.cpus_per_node) {
    return fmt::format(
        "-c/--cpus-per-gpu {} asks for more CPUs per task than a node of partition {} has ({}); "
        "lower it",
        b.cpus_per_task(), shape.partition, shape.cpus_per_node);
  }
  if (b.excluded_nodes() > 0 && b.excluded_nodes() >= shape.nodes) {
    return fmt::format("-x excludes {} nodes, and partition {} has {}; exclude fewer",
                       b.excluded_nodes(), shape.partition, shape.nodes);
  }
  return "the launch's limits leave no GPU to run on; raise -N/-n/--gpus-per-node";
}

}  // namespace

absl::StatusOr<tuner::Workload> LoadWorkload(const v1::Workload& w,
                                             const tuner::BuildPoll& poll) {
  switch (w.source_case()) {
    case v1::Workload::kToml:
      return tuner::ParseWorkloadToml(
          w.toml(), w.source_name().empty() ? "workload" : w.source_name(), poll);
    case v1::Workload::kPreset:
      return tuner::PresetWorkload(w.preset());
    default:
      return absl::InvalidArgumentError(
          "no workload given; pass --xdeep-workload=FILE (TOML) or a preset name, or put an "
          "xdeep.toml in the working directory");
  }
}

tuner::SearchLimits BuildLimits(const PolicyConfig& policy, const PartitionShape& shape,
                                const v1::TuneRequest& request, LimitSources* sources) {
  const v1::UserBounds& b = request.bounds();
  const bool in_allocation = request.has_allocation() && request.allocation().job_id() != 0;
  const v1::EnclosingAllocation& alloc = request.allocation();
  const std::string allocation =
      in_allocation ? fmt::format("the allocation (job {}{})", alloc.job_id(),
                                  alloc.gpu_request().empty() ? "" : ", " + alloc.gpu_request())
                    : "";
  // The smallest positive bound wins; its source names it in the explanation.
  struct Bound {
    int value = 0;
    std::string source;
    void Take(int v, std::string why) {
      if (v > 0 && (value == 0 || v < value)) {
        value = v;
        source = std::move(why);
      }
    }
  };
  Bound nodes, per_node, total;
  nodes.Take(shape.nodes, fmt::format("partition {} has {} usable nodes", shape.partition,
                                      shape.nodes));
  nodes.Take(policy.MaxNodes(shape.partition), "the site's max_nodes");
  nodes.Take(b.nodes(), "-N / -w");
  if (in_allocation) nodes.Take(alloc.nodes(), allocation);
  per_node.Take(shape.gpus_per_node, fmt::format("a node of partition {} has {} GPUs",
                                                 shape.partition, shape.gpus_per_node));
  per_node.Take(b.gpus_per_node(), "--gpus-per-node / --gres=gpu");
  if (in_allocation) per_node.Take(alloc.gpus_per_node(), allocation);
  // One task per GPU: a task count caps the GPUs just as --gpus does. Slurm
  // refuses more nodes than tasks, so the node count follows the same cap.
  total.Take(b.gpus(), "--gpus");
  total.Take(b.tasks(), "-n (one task per GPU)");
  total.Take(policy.max_gpus, "the site's max_gpus");
  if (total.value > 0) nodes.Take(total.value, total.source);
  // One task per GPU: --ntasks-per-node caps GPUs per node, and so do the
  // node's CPUs shared by tasks of -c CPUs each (0 when a task does not fit).
  per_node.Take(b.tasks_per_node(), "--ntasks-per-node (one task per GPU)");
  if (b.cpus_per_task() > 0 && shape.cpus_per_node > 0) {
    const int fit = shape.cpus_per_node / b.cpus_per_task();
    if (fit == 0) per_node.value = 0;
    per_node.Take(fit, fmt::format("-c / --cpus-per-gpu {} of a node's {} CPUs",
                                   b.cpus_per_task(), shape.cpus_per_node));
  }
  if (b.excluded_nodes() > 0) {
    const int left = shape.nodes - b.excluded_nodes();
    if (left <= 0) nodes.value = 0;
    nodes.Take(left, "-x");
  }
  tuner::SearchLimits limits;
  limits.max_nodes = nodes.value;
  limits.max_gpus_per_node = per_node.value;
  limits.max_total_gpus = total.value;
  // Each job runs within the launch's --time, the partition's MaxTime and
  // what is left of an enclosing allocation.
  double time_limit = 0;
  std::string time_source;
  auto take_time = [&](double s, std::string why) {
    if (s > 0 && (time_limit == 0 || s < time_limit)) {
      time_limit = s;
      time_source = std::move(why);
    }
  };
  take_time(request.time_limit_s(), "--time");
  take_time(shape.max_time_s, fmt::format("partition {}'s MaxTime", shape.partition));
  if (in_allocation) take_time(alloc.time_left_s(), allocation + "'s time left");
  limits.time_limit_s = time_limit;
  limits.segment_restart_s = policy.segment_restart_s;
  if (sources != nullptr) {
    sources->nodes = nodes.source;
    sources->gpus_per_node = per_node.source;
    sources->total_gpus = total.source;
    sources->time = time_source;
  }
  if (policy.billing == "slurm" && shape.gpu_billing_weight > 0) {
    // TRES billing: a GPU-hour costs its weight plus its share of the node's CPUs.
    const double cpus_per_gpu =
        shape.gpus_per_node > 0 ? double(shape.cpus_per_node) / shape.gpus_per_node : 0;
    limits.price_per_gpu_hour =
        (shape.gpu_billing_weight + shape.cpu_billing_weight * cpus_per_gpu) *
        policy.price_per_billing_unit_hour;
  } else {
    limits.price_per_gpu_hour = policy.PricePerGpuHour(shape.partition);
    limits.price_per_node_hour = policy.PricePerNodeHour(shape.partition);
  }
  limits.objective = ToObjective(request.objective());
  limits.cost_tolerance = (request.has_cost_tolerance_pct() ? request.cost_tolerance_pct()
                                                            : policy.cost_tolerance_pct) /
                          100;
  limits.time_value_per_hour = policy.time_value_per_hour;
  limits.budget = request.budget();  // --xdeep-budget caps this one job
  limits.deadline_s = request.deadline_s();
  limits.min_parallel_efficiency = policy.min_parallel_efficiency;
  limits.allowed_strategies = policy.allowed_strategies;
  limits.user_strategies.assign(request.strategies().begin(), request.strategies().end());
  return limits;
}

std::string LimitedBy(const tuner::SearchLimits& limits, const LimitSources& sources,
                      const tuner::Configuration& c, const tuner::Prediction& p) {
  std::vector<std::string> reached;
  if (c.nodes == limits.max_nodes && !sources.nodes.empty()) {
    reached.push_back(fmt::format("{} node{}: {}", c.nodes, c.nodes == 1 ? "" : "s",
                                  sources.nodes));
  }
  if (c.gpus_per_node == limits.max_gpus_per_node && !sources.gpus_per_node.empty()) {
    reached.push_back(fmt::format("{} GPU{} per node: {}", c.gpus_per_node,
                                  c.gpus_per_node == 1 ? "" : "s", sources.gpus_per_node));
  }
  if (limits.max_total_gpus > 0 && c.TotalGpus() == limits.max_total_gpus &&
      !sources.total_gpus.empty()) {
    reached.push_back(fmt::format("{} GPUs in all: {}", c.TotalGpus(), sources.total_gpus));
  }
  if (p.segments > 1) {
    reached.push_back(fmt::format("{:.2f} h per job: {}", limits.time_limit_s / 3600,
                                  sources.time));
  }
  std::string out;
  for (const std::string& r : reached) out += (out.empty() ? "" : "; ") + r;
  return out;
}

absl::StatusOr<std::vector<BudgetScope>> BudgetScopes(const PolicyConfig& policy,
                                                      const std::string& user,
                                                      const std::string& account) {
  std::vector<BudgetScope> scopes;
  auto user_budget = policy.user_budgets.find(user);
  if (user_budget == policy.user_budgets.end()) user_budget = policy.user_budgets.find("*");
  scopes.push_back(
      {"user", user, user_budget != policy.user_budgets.end() ? user_budget->second.limit : 0});
  if (!account.empty()) {
    auto it = policy.account_budgets.find(account);
    if (it != policy.account_budgets.end()) {
      const auto& members = it->second.members;
      if (!members.empty() && std::find(members.begin(), members.end(), user) == members.end()) {
        return absl::PermissionDeniedError(fmt::format(
            "user {} may not charge account {}; use one of your accounts with -A", user, account));
      }
      scopes.push_back({"account", account, it->second.limit});
    } else {
      scopes.push_back({"account", account, 0});
    }
  }
  return scopes;
}

DecisionMaker::DecisionMaker(std::shared_ptr<const PolicyConfig> policy,
                             tuner::HardwareProfile hardware, ShapeFn shape, Store* store,
                             Ledger* ledger, ClockFn clock)
    : policy_(std::move(policy)),
      hardware_(std::make_shared<const tuner::HardwareProfile>(std::move(hardware))),
      shape_(std::move(shape)),
      store_(store),
      ledger_(ledger),
      clock_(clock ? std::move(clock) : [] {
        return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
      }) {}

void DecisionMaker::SetPolicy(std::shared_ptr<const PolicyConfig> policy) {
  std::lock_guard lock(mu_);
  policy_ = std::move(policy);
}

void DecisionMaker::SetHardware(tuner::HardwareProfile hardware) {
  std::lock_guard lock(mu_);
  hardware_ = std::make_shared<const tuner::HardwareProfile>(std::move(hardware));
  ++hardware_generation_;
}

std::shared_ptr<const tuner::HardwareProfile> DecisionMaker::hardware() const {
  std::lock_guard lock(mu_);
  return hardware_;
}

std::shared_ptr<const PolicyConfig> DecisionMaker::policy() const {
  std::lock_guard lock(mu_);
  return policy_;
}

absl::Status DecisionMaker::CheckBudget(const PolicyConfig& policy,
                                        const tuner::HardwareProfile& hardware,
                                        const v1::TuneRequest& request, const Caller& caller,
                                        const tuner::Workload& workload,
                                        const tuner::SearchLimits& limits,
                                        const PartitionShape& shape, v1::Decision& decision,
                                        const ProgressFn& progress,
                                        const Ledger::AlongFn& along) const {
  auto scopes = BudgetScopes(policy, caller.user, request.account());
  if (!scopes.ok()) return scopes.status();
  const int64_t now = clock_();
  const int64_t period_start = PeriodStart(policy.budget_period, now);
  Charge charge;
  charge.decision_id = decision.decision_id();
  charge.uid = caller.uid;
  charge.user = caller.user;
  charge.account = request.account();
  charge.partition = shape.partition;
  // A run in checkpointed segments holds one segment's cost at a time; the
  // ledger holds the next when Slurm requeues the job (Ledger::ChargeJob).
  charge.amount = decision.segment_cost();
  charge.segments = std::max(1, decision.segments());
  charge.nodes = decision.config().nodes();
  charge.gpus = decision.config().nodes() * decision.config().gpus_per_node();
  charge.price_per_gpu_hour = limits.price_per_gpu_hour;
  charge.price_per_node_hour = limits.price_per_node_hour;
  charge.admission_token = NewAdmissionToken();

  const bool strict = policy.Strict(shape.partition);
  std::vector<BudgetScope> enforced = *scopes;
  if (!strict) {
    for (BudgetScope& s : enforced) s.limit = 0;  // advisory: track, never refuse
  }
  // The decision carries its token into the record written along with the hold.
  decision.set_admission_token(charge.admission_token);
  std::vector<BudgetUse> held;  // advisory: read with the hold, for the warning
  absl::Status reserved = ledger_->Reserve(charge, enforced, period_start, now,
                                           policy.admission_window_s, along,
                                           strict ? nullptr : &held);
  if (!reserved.ok()) decision.clear_admission_token();
  if (reserved.ok()) {
    for (size_t i = 0; i < held.size() && i < scopes->size(); ++i) {
      const BudgetUse& u = held[i];
      const BudgetScope& scope = (*scopes)[i];  // its limit: `enforced` zeroed it
      if (scope.limit > 0 && u.spent + u.reserved > scope.limit) {
        progress(Step("budget", fmt::format("warning: {} {} is over its budget ({:.2f} of "
                                            "{:.2f} {}); this site does not enforce it",
                                            scope.kind, scope.name, u.spent + u.reserved,
                                            scope.limit, policy.currency)));
      }
    }
    return absl::OkStatus();
  }
  if (reserved.code() != absl::StatusCode::kResourceExhausted) return reserved;

  // Over budget: say what it would cost, what is left, and what would fit.
  std::string fits = "no configuration fits the remaining budget";
  auto use = ledger_->Use(*scopes, period_start);
  double remaining = 1e300;
  if (use.ok()) {
    for (const BudgetUse& u : *use) {
      if (u.scope.limit > 0) remaining = std::min(remaining, std::max(0.0, u.remaining()));
    }
  }
  tuner::SearchLimits cheapest = limits;
  cheapest.objective = tuner::Objective::kCost;
  cheapest.cost_tolerance = 0;
  cheapest.time_value_per_hour = 0;
  cheapest.budget = limits.budget > 0 ? std::min(limits.budget, remaining) : remaining;
  cheapest.deadline_s = 0;
  if (remaining > 0) {
    auto alt = tuner::Search(workload, hardware, cheapest);
    if (alt.ok()) {
      const tuner::Configuration& c = alt->best.config;
      fits = fmt::format(
          "cheapest configuration that fits: {} on {} node{} x {} GPU{} at {:.2f} {} "
          "(--xdeep-objective=cost)",
          tuner::StrategyName(c), c.nodes, c.nodes == 1 ? "" : "s", c.gpus_per_node,
          c.gpus_per_node == 1 ? "" : "s", alt->best.prediction.cost, policy.currency);
    }
  }
  return absl::ResourceExhaustedError(fmt::format(
      "over budget: predicted cost {:.2f} {}{} for {} on {} node(s) x {} GPU(s); {}; {}",
      charge.amount, policy.currency,
      charge.segments > 1 ? fmt::format(" for the first of {} checkpointed jobs ({:.2f} in all)",
                                        charge.segments, decision.prediction().cost())
                          : std::string(),
      decision.config().strategy(), decision.config().nodes(), decision.config().gpus_per_node(),
      std::string(reserved.message()), fits));
}

absl::StatusOr<DecideResult> DecisionMaker::Decide(const v1::TuneRequest& request,
                                                   const Caller& caller, const ProgressFn& progress,
                                                   const InterruptFn& interrupt,
                                                   bool allow_heavy, bool defer_record,
                                                   bool cached_only) const {
  std::shared_ptr<const PolicyConfig> policy = this->policy();
  std::shared_ptr<const tuner::HardwareProfile> profile;
  uint64_t hardware_generation;
  {
    std::lock_guard lock(mu_);
    profile = hardware_;
    hardware_generation = hardware_generation_;
  }
  std::string partition =
      request.partition().empty() ? policy->default_partition : request.partition();
  if (request.implicit() && !policy->TuningDefault(partition)) {
    return DecideResult{std::nullopt, "tuning is off by default on this partition"};
  }
  if (request.has_cost_tolerance_pct() &&
      !(request.cost_tolerance_pct() >= 0 && request.cost_tolerance_pct() <= 1000)) {
    return absl::InvalidArgumentError(
        fmt::format("cost tolerance {} % is out of range; give a percentage from 0 to 1000 "
                    "(--xdeep-cost-tolerance=5)",
                    request.cost_tolerance_pct()));
  }
  if (absl::Status s = tuner::CheckStrategyNames(
          {request.strategies().begin(), request.strategies().end()}, "--xdeep-strategies");
      !s.ok()) {
    return s;
  }
  // Only a launch that submits a job reserves money (CheckBudget below).
  const bool reserves =
      ledger_ != nullptr && request.mode() == v1::TUNE_MODE_AUTO && !request.has_allocation();
  const absl::Status needs_worker = absl::AbortedError(kNeedsWorker);
  if (cached_only && (reserves || !defer_record || !fresh_shape_)) return needs_worker;
  // Building the layers of a model at the parser's limit takes tens of
  // milliseconds: the heavy lane paces itself in it, and a client that goes
  // away stops it there.
  std::shared_ptr<const DecisionCache::ParsedWorkload> cached;
  if (cached_only) {
    cached = cache_.CachedWorkload(request.workload());
    if (cached == nullptr) return needs_worker;
  } else {
    auto parsed = cache_.Workload(request.workload(), interrupt);
    if (!parsed.ok()) return parsed.status();
    cached = *std::move(parsed);
  }
  const std::shared_ptr<const tuner::Workload> workload(cached, &cached->workload);
  if (!allow_heavy && workload->layers.size() > kHeavyLayers) {
    return absl::AbortedError(kMovedToHeavyLane);
  }
  // Each stage before the search costs time in proportion to the layers
  // (tens of milliseconds at the parser's limit): a client that went away
  // in one stops the request before the next.
  auto interrupted = [&] { return interrupt ? interrupt() : absl::OkStatus(); };
  if (absl::Status s = interrupted(); !s.ok()) return s;
  progress(Step("workload", fmt::format("workload {}", workload->name)));

  auto shape = cached_only ? fresh_shape_(partition) : shape_(partition);
  if (cached_only && !shape.ok()) return needs_worker;
  if (!shape.ok()) return shape.status();
  if (shape->gpus_per_node <= 0) {
    return absl::FailedPreconditionError(fmt::format(
        "partition '{}' has no GPUs (gres/gpu); choose a GPU partition with -p", shape->partition));
  }
  // Site limit on waiting: probes that do not finish in max_wait_s are cancelled
  // and this launch decides from what the daemon already has.
  bool probe_now = false;
  if (launch_probe_ && policy->probes.on_launch && profile->builtin) {
    if (cached_only) return needs_worker;
    std::lock_guard lock(mu_);
    probe_now = probed_partitions_.insert(shape->partition).second;
  }
  if (probe_now) {
    progress(Step("probe", fmt::format("no measurements for partition {}: probing (waiting at most "
                                       "{} s)",
                                       shape->partition, policy->probes.max_wait_s)));
    // The workload's own GEMM shapes up to the largest micro-batch the
    // search tries: the profile then holds exactly what the model looks up,
    // and the search does not go past twice what was measured; the
    // heuristic's kernel for every GEMM the search may consider.
    const tuner::ProbeShapeFiles shapes =
        tuner::ProbeShapesFor(workload.get(), shape->gpus_per_node);
    absl::Status probed =
        launch_probe_(shape->partition, shape->gpus_per_node, policy->probes.max_wait_s, shapes,
                      [&](const std::string& line) { progress(Step("probe", line)); });
    if (probed.ok()) {
      std::lock_guard lock(mu_);
      profile = hardware_;
      hardware_generation = hardware_generation_;
    } else {
      progress(Step("probe", fmt::format("{}; deciding from {}", std::string(probed.message()),
                                         profile->Label())));
    }
  }
  const tuner::HardwareProfile& hardware = *profile;
  progress(Step("profile", fmt::format("partition {}: {} nodes x {} GPUs; {}", shape->partition,
                                       shape->nodes, shape->gpus_per_node, hardware.Label())));

  LimitSources sources;
  tuner::SearchLimits limits = BuildLimits(*policy, *shape, request, &sources);
  if (limits.max_gpus_per_node <= 0 || limits.max_nodes <= 0) {
    return absl::FailedPreconditionError(NoRoomReason(*shape, request.bounds()));
  }
  std::string correction_note;  // the fitted correction model, for the explanation
  // A table too large to cache (the heavy lane's) is fingerprinted here, with
  // polls: tens of milliseconds that a stopped client would otherwise wait out.
  std::string fingerprint = cached->fingerprint;
  if (fingerprint.empty()) {
    auto fresh = tuner::ModelFingerprint(*workload, interrupted);
    if (!fresh.ok()) return fresh.status();
    fingerprint = *std::move(fresh);
  }
  if (heuristic_gap_ && !hardware.builtin && hardware.gemm_kernels != nullptr) {
    // Never waits: this decision uses the answers there are.
    const std::string note =
        heuristic_gap_(shape->partition, shape->gpus_per_node, profile, *workload, fingerprint);
    if (!note.empty()) progress(Step("kernels", note));
  }
  if (absl::Status s = interrupted(); !s.ok()) return s;
  if (store_ != nullptr) {
    const LearningScope scope = ScopeFor(*policy, caller, request.account(), fingerprint,
                                         hardware.Label(), shape->partition);
    // A correction not learned for the store's current runs is learned from
    // them (a read of the store, the runs timed by the model): a worker's job.
    std::shared_ptr<const LearnedCorrection> learned;
    if (cached_only) {
      learned = cache_.CachedCorrection(*store_, scope, hardware_generation);
      if (learned == nullptr) return needs_worker;
    } else {
      auto correction = cache_.Correction(*store_, scope, hardware_generation, *workload, hardware);
      // A correction that cannot be learned corrects nothing, as before.
      if (correction.ok()) learned = *std::move(correction);
    }
    if (learned != nullptr && learned->correction != nullptr) {
      limits.step_time_correction = tuner::StepTimeCorrector(learned->correction);
      correction_note = "; " + learned->note;
      progress(Step("fit", fmt::format("step times corrected from {} real run(s) of model {} "
                                       "on {} ({} scope)",
                                       learned->runs, fingerprint, shape->partition,
                                       policy->learning_scope)));
    }
  }
  // Bounded work per request (the policy's caps), and the caller's interrupt.
  limits.max_candidates = policy->search_max_candidates;
  const auto search_deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(policy->search_max_seconds);
  limits.interrupt = [&]() -> absl::Status {
    if (std::chrono::steady_clock::now() > search_deadline) {
      return absl::ResourceExhaustedError(fmt::format(
          "the search took longer than this site's limit of {} s per request; narrow it: fewer "
          "nodes (-N), a fixed global batch or a smaller [batch] max / max_micro, or fewer "
          "strategies (--xdeep-strategies)",
          policy->search_max_seconds));
    }
    return interrupt ? interrupt() : absl::OkStatus();
  };
  // Identical requests under the same hardware, policy limits and learned
  // correction get the same search result: computed once.
  const std::string search_key = DecisionCache::SearchKey(request.workload(), hardware_generation,
                                                          limits, correction_note);
  std::shared_ptr<const tuner::SearchResult> result = cache_.FindSearch(search_key);
  if (result == nullptr && cached_only) return needs_worker;
  if (result == nullptr) {
    // Requests that differ only in what scores a configuration (objective,
    // budget, deadline, prices, time limit, correction) share the model's
    // figures for every configuration: timed once, scored per request.
    const std::string space_key =
        DecisionCache::SpaceKey(request.workload(), hardware_generation, limits);
    std::shared_ptr<const tuner::ScoredSpace> space = cache_.FindSpace(space_key);
    const bool recorded = space == nullptr;
    auto searched = recorded ? tuner::SearchRecording(*workload, hardware, limits, &space)
                             : tuner::SearchInSpace(*space, *workload, hardware, limits);
    if (!searched.ok()) return searched.status();
    if (recorded && space != nullptr) cache_.PutSpace(space_key, std::move(space));
    // The cost-time front is the search's own; a decision never reads it.
    searched->pareto = {};
    result = std::make_shared<const tuner::SearchResult>(*std::move(searched));
    cache_.PutSearch(search_key, result);
  }
  progress(Step("search", fmt::format("{} configurations evaluated", result->evaluated)));

  v1::Decision decision;
  decision.set_decision_id(NewDecisionId());
  decision.set_app_launcher(workload->parallel.launcher);
  Fill(result->best.config, decision.mutable_config());
  Fill(result->best.prediction, decision.mutable_prediction());
  // Keep the uncorrected figure too: corrections are fitted against it.
  decision.set_analytical_step_time_s(result->best.prediction.analytical_step_time_s);
  for (const auto* list : {&result->alternatives, &result->rejected_examples}) {
    for (const tuner::Candidate& c : *list) {
      v1::Alternative* alt = decision.add_alternatives();
      Fill(c.config, alt->mutable_config());
      Fill(c.prediction, alt->mutable_prediction());
      alt->set_why(c.why);
    }
  }
  decision.set_time_limit_s(limits.time_limit_s);
  decision.set_segments(result->best.prediction.segments);
  decision.set_segment_cost(tuner::SegmentCost(limits, result->best.prediction));
  decision.set_limited_by(
      LimitedBy(limits, sources, result->best.config, result->best.prediction));
  decision.set_explanation(result->best.why + correction_note);
  decision.set_hardware_label(result->hardware_label);
  decision.set_workload_name(workload->name);
  decision.set_currency(policy->currency);
  decision.set_candidates_evaluated(result->evaluated);
  decision.set_rewrite(request.mode() == v1::TUNE_MODE_AUTO);

  // What the store keeps of the decision (its admission token included),
  // without the alternatives and rejected examples: they are the client's to
  // show when it is decided, nothing reads them back (the learning reads the
  // configuration and predictions), and they were four fifths of the record,
  // written through the ledger's WAL with every auto decision.
  auto record_of = [&] {
    google::protobuf::RepeatedPtrField<v1::Alternative> alternatives;
    decision.mutable_alternatives()->Swap(&alternatives);
    std::string blob = decision.SerializeAsString();
    decision.mutable_alternatives()->Swap(&alternatives);
    DecisionRecord record;
    record.id = decision.decision_id();
    record.uid = caller.uid;
    record.workload = workload->name;
    record.strategy = decision.config().strategy();
    record.nodes = decision.config().nodes();
    record.gpus_per_node = decision.config().gpus_per_node();
    record.predicted_step_time_s = decision.prediction().step_time_s();
    record.predicted_cost = decision.prediction().cost();
    record.decision_blob = std::move(blob);
    record.fingerprint = fingerprint;
    record.hardware = hardware.Label();
    record.partition = shape->partition;
    record.account = request.account();
    return record;
  };
  // Only a launch that submits a job reserves money; advise and explain do
  // not, nor a step inside an allocation (its job is charged as a whole). The
  // decision's record goes into the hold's own transaction where the store
  // and the ledger share a file (as the daemon opens them): one commit for
  // both, batched with other launches' (Ledger's group commit).
  bool saved = false;
  if (reserves) {
    const bool along = store_ != nullptr && !store_->path().empty() &&
                       store_->path() == ledger_->path();
    absl::Status s = CheckBudget(
        *policy, hardware, request, caller, *workload, limits, *shape, decision, progress,
        along ? Ledger::AlongFn([&](sqlite3* db) { return Store::InsertDecision(db, record_of()); })
              : nullptr);
    if (!s.ok()) return s;
    saved = along;
  }
  if (store_ != nullptr && !saved && defer_record && !reserves) {
    // Nothing to release if the write fails: the caller answers with its error.
    DecisionRecord record = record_of();  // before `decision` moves
    return DecideResult{std::move(decision), "", std::move(record)};
  }
  if (store_ != nullptr && !saved) {
    if (absl::Status s = store_->SaveDecision(record_of()); !s.ok()) {
      if (ledger_ != nullptr) (void)ledger_->Release(decision.decision_id(), caller.uid, clock_());
      return s;
    }
  }
  return DecideResult{std::move(decision), "", std::nullopt};
}

void DecisionMaker::SaveRecordThen(DecisionRecord record,
                                   std::function<void(absl::Status)> done) const {
  if (store_ == nullptr) {
    done(absl::OkStatus());
    return;
  }
  store_->SaveDecisionThen(std::move(record), std::move(done));
}

}  // namespace xdeep::daemon
