// Requests and answers as xdeep.v1 messages (see tune_proto.h).
#include "client/tune_proto.h"

#include <algorithm>

namespace xdeep::client {
namespace {

namespace v1 = xdeep::v1;

v1::Objective ToObjective(const std::string& o) {
  if (o == "cost") return v1::OBJECTIVE_COST;
  if (o == "time") return v1::OBJECTIVE_TIME;
  if (o == "deadline") return v1::OBJECTIVE_COST_UNDER_DEADLINE;
  if (o == "budget") return v1::OBJECTIVE_TIME_UNDER_BUDGET;
  return v1::OBJECTIVE_UNSPECIFIED;
}

LayoutRow ToRow(const v1::Configuration& c, const v1::Prediction& p, const std::string& why) {
  LayoutRow r;
  r.strategy = c.strategy();
  r.nodes = c.nodes();
  r.gpus_per_node = c.gpus_per_node();
  r.tasks = c.tasks();
  r.dp = c.data_parallel();
  r.tp = c.tensor_parallel();
  r.pp = c.pipeline_parallel();
  r.cp = std::max(1, c.context_parallel());
  r.sequence_parallel = c.sequence_parallel();
  r.sharding_stage = c.sharding_stage();
  r.micro_batch = c.micro_batch();
  r.grad_accumulation = c.grad_accumulation();
  r.recompute = c.recompute();
  r.selective_recompute = c.selective_recompute();
  r.global_batch = c.global_batch();
  r.pipeline_schedule = c.pipeline_schedule();
  r.virtual_stages = std::max(1, c.virtual_stages());
  r.step_time_s = p.step_time_s();
  r.time_to_solution_s = p.time_to_solution_s();
  r.cost = p.cost();
  r.memory_per_gpu_bytes = p.memory_per_gpu_bytes();
  r.why = why;
  return r;
}

}  // namespace

v1::TuneRequest ToTuneRequest(const TuneQuery& q, std::string credential) {
  v1::TuneRequest req;
  req.set_credential(std::move(credential));
  req.set_mode(q.mode == "explain"  ? v1::TUNE_MODE_EXPLAIN
               : q.mode == "advise" ? v1::TUNE_MODE_ADVISE
                                    : v1::TUNE_MODE_AUTO);
  req.set_launcher(q.launcher == "sbatch"   ? v1::LAUNCHER_SBATCH
                   : q.launcher == "salloc" ? v1::LAUNCHER_SALLOC
                                            : v1::LAUNCHER_SRUN);
  if (!q.workload_preset.empty()) {
    req.mutable_workload()->set_preset(q.workload_preset);
  } else {
    req.mutable_workload()->set_toml(q.workload_toml);
  }
  req.mutable_workload()->set_source_name(q.workload_source);
  req.mutable_bounds()->set_nodes(q.max_nodes);
  req.mutable_bounds()->set_tasks(q.max_tasks);
  req.mutable_bounds()->set_gpus_per_node(q.max_gpus_per_node);
  req.mutable_bounds()->set_gpus(q.max_gpus);
  req.mutable_bounds()->set_tasks_per_node(q.max_tasks_per_node);
  req.mutable_bounds()->set_cpus_per_task(q.cpus_per_task);
  req.mutable_bounds()->set_excluded_nodes(q.excluded_nodes);
  if (q.allocation_job_id != 0) {
    req.mutable_allocation()->set_job_id(q.allocation_job_id);
    req.mutable_allocation()->set_nodes(q.allocation_nodes);
    req.mutable_allocation()->set_gpus_per_node(q.allocation_gpus_per_node);
    req.mutable_allocation()->set_nodelist(q.allocation_nodelist);
    req.mutable_allocation()->set_gpu_request(q.allocation_gpu_request);
    req.mutable_allocation()->set_time_left_s(q.allocation_time_left_s);
    req.mutable_allocation()->set_cpus_per_node(q.allocation_cpus_per_node);
  }
  req.set_time_limit_s(q.time_limit_s);
  req.set_partition(q.partition);
  req.set_account(q.account);
  req.set_objective(ToObjective(q.objective));
  req.set_budget(q.budget);
  req.set_deadline_s(q.deadline_s);
  if (q.cost_tolerance_pct >= 0) req.set_cost_tolerance_pct(q.cost_tolerance_pct);
  for (const auto& s : q.strategies) req.add_strategies(s);
  for (const auto& a : q.argv) req.add_argv(a);
  req.set_cwd(q.cwd);
  req.set_submit_host(q.host);
  req.set_client_version(XDEEP_VERSION);
  req.set_uid(q.uid);
  req.set_implicit(q.implicit);
  return req;
}

v1::ReportRequest ToReportRequest(const ReportQuery& q, std::string credential) {
  v1::ReportRequest req;
  req.set_credential(std::move(credential));
  req.set_decision_id(q.decision_id);
  req.set_job_id(q.job_id);
  req.set_exit_code(q.exit_code);
  req.set_elapsed_s(q.elapsed_s);
  for (double t : q.step_times_s) req.add_step_times_s(t);
  req.set_launch_failed(q.launch_failed);
  req.set_final(q.final);
  return req;
}

void ReadTuneEvent(const v1::TuneEvent& event, const ProgressCallback& progress, TuneAnswer* answer,
                   bool* decided) {
  if (event.has_progress()) {
    if (progress) progress(event.progress().stage(), event.progress().message());
  } else if (event.has_skip()) {
    answer->skipped = true;
    answer->skip_reason = event.skip().reason();
  } else if (event.has_decision() && !*decided) {
    const v1::Decision& d = event.decision();
    answer->decision_id = d.decision_id();
    answer->best = ToRow(d.config(), d.prediction(), d.explanation());
    for (const auto& alt : d.alternatives()) {
      answer->alternatives.push_back(ToRow(alt.config(), alt.prediction(), alt.why()));
    }
    answer->explanation = d.explanation();
    answer->hardware_label = d.hardware_label();
    answer->workload_name = d.workload_name();
    answer->currency = d.currency();
    answer->candidates_evaluated = d.candidates_evaluated();
    answer->admission_token = d.admission_token();
    answer->app_launcher = d.app_launcher();
    answer->time_limit_s = d.time_limit_s();
    answer->segments = std::max(1, d.segments());
    answer->segment_cost = d.segment_cost();
    answer->limited_by = d.limited_by();
    answer->server_version = d.server_version();
    *decided = true;
  }
}

ClientError ErrorOfStatus(int code, const std::string& message) {
  // absl::StatusCode numbers (the same as grpc::StatusCode).
  enum : int {
    kDeadlineExceeded = 4,
    kInvalidArgument = 3,
    kNotFound = 5,
    kPermissionDenied = 7,
    kResourceExhausted = 8,
    kFailedPrecondition = 9,
    kOutOfRange = 11,
    kUnauthenticated = 16,
  };
  switch (code) {
    case kInvalidArgument:
    case kFailedPrecondition:
    case kPermissionDenied:
    case kResourceExhausted:
    case kNotFound:
    case kOutOfRange:
    case kUnauthenticated:
      return {ClientError::kRefused, message};
    case kDeadlineExceeded:
      return {ClientError::kUnavailable, "no answer in time"};
    default:
      return {ClientError::kUnavailable, message.empty() ? "no usable answer" : message};
  }
}

bool UsableAnswer(const TuneAnswer& answer, bool decided, ClientError* error) {
  if (answer.skipped) return true;
  if (!decided || answer.decision_id.empty() || answer.best.nodes <= 0 ||
      answer.best.gpus_per_node <= 0) {
    *error = {ClientError::kUnavailable, "the daemon's answer held no usable decision"};
    return false;
  }
  return true;
}

}  // namespace xdeep::client
