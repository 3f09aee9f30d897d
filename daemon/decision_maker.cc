// DecisionMaker (see decision_maker.h).
#include "daemon/decision_maker.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "absl/status/status.h"
#include "tuner/workload.h"

namespace xdeep::daemon {
namespace {

namespace v1 = xdeep::v1;

std::string NewDecisionId() {
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> dist;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  return fmt::format("{:016x}{:016x}", dist(gen), dist(gen));
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
  out->set_global_batch(c.global_batch);
  out->set_strategy(tuner::StrategyName(c));
}

void Fill(const tuner::Prediction& p, v1::Prediction* out) {
  out->set_step_time_s(p.step_time_s);
  out->set_samples_per_s(p.samples_per_s);
  out->set_time_to_solution_s(p.time_to_solution_s);
  out->set_cost(p.cost);
  out->set_memory_per_gpu_bytes(p.memory_per_gpu_bytes);
}

absl::StatusOr<tuner::Workload> LoadWorkload(const v1::Workload& w) {
  switch (w.source_case()) {
    case v1::Workload::kToml:
      return tuner::ParseWorkloadToml(w.toml(),
                                      w.source_name().empty() ? "workload" : w.source_name());
    case v1::Workload::kPreset:
      return tuner::PresetWorkload(w.preset());
    default:
      return absl::InvalidArgumentError(
          "no workload given; pass --xdeep-workload=FILE (TOML) or a preset name, or put an "
          "xdeep.toml in the working directory");
  }
}

int MinPositive(std::initializer_list<int> values) {
  int best = 0;
  for (int v : values)
    if (v > 0) best = best == 0 ? v : std::min(best, v);
  return best;
}

}  // namespace

tuner::SearchLimits BuildLimits(const PolicyConfig& policy, const PartitionShape& shape,
                                const v1::TuneRequest& request) {
  const v1::UserBounds& b = request.bounds();
  const bool in_allocation = request.has_allocation() && request.allocation().job_id() != 0;
  tuner::SearchLimits limits;
  limits.max_nodes = MinPositive(
      {policy.max_nodes, shape.nodes, b.nodes(), in_allocation ? request.allocation().nodes() : 0});
  limits.max_gpus_per_node =
      MinPositive({shape.gpus_per_node, b.gpus_per_node(),
                   in_allocation ? request.allocation().gpus_per_node() : 0});
  // One task per GPU: a task count caps the GPUs just as --gpus does. Slurm
  // refuses more nodes than tasks, so the node count follows the same cap.
  limits.max_total_gpus = MinPositive({b.gpus(), b.tasks()});
  if (limits.max_total_gpus > 0)
    limits.max_nodes = std::min(limits.max_nodes, limits.max_total_gpus);
  limits.price_per_gpu_hour = policy.price_per_gpu_hour;
  limits.objective = ToObjective(request.objective());
  limits.budget = request.budget();
  limits.deadline_s = request.deadline_s();
  return limits;
}

absl::StatusOr<v1::Decision> DecisionMaker::Decide(const v1::TuneRequest& request, uint32_t uid,
                                                   const ProgressFn& progress) const {
  auto workload = LoadWorkload(request.workload());
  if (!workload.ok()) return workload.status();
  progress(Step("workload", fmt::format("workload {}", workload->name)));

  std::string partition =
      request.partition().empty() ? policy_.default_partition : request.partition();
  auto shape = shape_(partition);
  if (!shape.ok()) return shape.status();
  if (shape->gpus_per_node <= 0) {
    return absl::FailedPreconditionError(fmt::format(
        "partition '{}' has no GPUs (gres/gpu); choose a GPU partition with -p", shape->partition));
  }
  progress(Step("profile", fmt::format("partition {}: {} nodes x {} GPUs; {}", shape->partition,
                                       shape->nodes, shape->gpus_per_node, hardware_.Label())));

  tuner::SearchLimits limits = BuildLimits(policy_, *shape, request);
  if (limits.max_gpus_per_node <= 0 || limits.max_nodes <= 0) {
    return absl::FailedPreconditionError(
        "the launch's limits leave no GPU to run on; raise -N/-n/--gpus-per-node");
  }
  auto result = tuner::Search(*workload, hardware_, limits);
  if (!result.ok()) return result.status();
  progress(Step("search", fmt::format("{} configurations evaluated", result->evaluated)));

  v1::Decision decision;
  decision.set_decision_id(NewDecisionId());
  Fill(result->best.config, decision.mutable_config());
  Fill(result->best.prediction, decision.mutable_prediction());
  for (const auto* list : {&result->alternatives, &result->rejected_examples}) {
    for (const tuner::Candidate& c : *list) {
      v1::Alternative* alt = decision.add_alternatives();
      Fill(c.config, alt->mutable_config());
      Fill(c.prediction, alt->mutable_prediction());
      alt->set_why(c.why);
    }
  }
  decision.set_explanation(result->best.why);
  decision.set_hardware_label(result->hardware_label);
  decision.set_workload_name(workload->name);
  decision.set_currency(policy_.currency);
  decision.set_candidates_evaluated(result->evaluated);
  decision.set_rewrite(request.mode() == v1::TUNE_MODE_AUTO);

  if (store_ != nullptr) {
    DecisionRecord record;
    record.id = decision.decision_id();
    record.uid = uid;
    record.workload = workload->name;
    record.strategy = decision.config().strategy();
    record.nodes = decision.config().nodes();
    record.gpus_per_node = decision.config().gpus_per_node();
    record.predicted_step_time_s = decision.prediction().step_time_s();
    record.predicted_cost = decision.prediction().cost();
    record.decision_blob = decision.SerializeAsString();
    if (absl::Status s = store_->SaveDecision(record); !s.ok()) return s;
  }
  return decision;
}

}  // namespace xdeep::daemon
