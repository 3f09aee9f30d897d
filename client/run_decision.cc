// Decision variables and file (see run_decision.h).
#include "client/run_decision.h"

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace xdeep::client {
namespace {

using nlohmann::json;

constexpr const char* kSchema = "xdeep.decision/1";

std::string Fixed(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

template <typename T>
bool ParseNumber(const std::string& text, T* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool Consistent(const RunDecision& d, std::string* error) {
  if (d.nodes < 1 || d.gpus_per_node < 1 || d.tasks < 1 || d.dp < 1 || d.tp < 1 || d.pp < 1 ||
      d.cp < 1 || d.micro_batch < 1 || d.grad_accumulation < 1 || d.global_batch < 1 ||
      d.virtual_stages < 1 || d.segments < 1 || d.sharding_stage < 0 || d.sharding_stage > 3) {
    *error = "the decision holds a count below 1 (or a sharding stage outside 0-3)";
    return false;
  }
  if (d.nodes * d.gpus_per_node != d.tasks) {
    *error = "the decision's nodes x GPUs per node (" + std::to_string(d.nodes) + " x " +
             std::to_string(d.gpus_per_node) + ") is not its " + std::to_string(d.tasks) + " ranks";
    return false;
  }
  if (d.dp * d.tp * d.pp * d.cp != d.tasks) {
    *error = "the decision's dp x tp x pp x cp (" + std::to_string(d.dp) + " x " +
             std::to_string(d.tp) + " x " + std::to_string(d.pp) + " x " + std::to_string(d.cp) +
             ") is not its " + std::to_string(d.tasks) + " ranks";
    return false;
  }
  if (static_cast<int64_t>(d.micro_batch) * d.grad_accumulation * d.dp != d.global_batch) {
    *error = "the decision's micro-batch x accumulation x dp is not its global batch " +
             std::to_string(d.global_batch);
    return false;
  }
  if (d.recompute && d.selective_recompute) {
    *error = "the decision asks for full and selective recomputation at once; it has one mode";
    return false;
  }
  return true;
}

}  // namespace

std::string_view AppLauncherName(AppLauncher launcher) {
  switch (launcher) {
    case AppLauncher::kSrun:
      return "srun";
    case AppLauncher::kTorchrun:
      return "torchrun";
    case AppLauncher::kAccelerate:
      return "accelerate";
    case AppLauncher::kDeepspeed:
      return "deepspeed";
  }
  return "srun";
}

bool ParseAppLauncher(std::string_view name, AppLauncher* launcher) {
  for (AppLauncher l : {AppLauncher::kSrun, AppLauncher::kTorchrun, AppLauncher::kAccelerate,
                        AppLauncher::kDeepspeed}) {
    if (name == AppLauncherName(l)) {
      *launcher = l;
      return true;
    }
  }
  return false;
}

std::string LauncherOfProgram(std::string_view program) {
  const size_t slash = program.rfind('/');
  const std::string_view name =
      slash == std::string_view::npos ? program : program.substr(slash + 1);
  for (AppLauncher l :
       {AppLauncher::kTorchrun, AppLauncher::kAccelerate, AppLauncher::kDeepspeed}) {
    if (name == AppLauncherName(l)) return std::string(name);
  }
  return "";
}

RunDecision RunDecisionOf(const TuneAnswer& a, AppLauncher launcher) {
  const LayoutRow& b = a.best;
  RunDecision d;
  d.decision_id = a.decision_id;
  d.workload = a.workload_name;
  d.strategy = b.strategy;
  d.launcher = launcher;
  d.nodes = b.nodes;
  d.gpus_per_node = b.gpus_per_node;
  d.tasks = b.tasks;
  d.dp = b.dp;
  d.tp = b.tp;
  d.pp = b.pp;
  d.cp = std::max(1, b.cp);
  d.sequence_parallel = b.sequence_parallel;
  d.sharding_stage = b.sharding_stage;
  d.pipeline_schedule = b.pp > 1 ? b.pipeline_schedule : "";
  d.virtual_stages = b.pp > 1 ? std::max(1, b.virtual_stages) : 1;
  d.micro_batch = b.micro_batch;
  d.grad_accumulation = b.grad_accumulation;
  d.global_batch = b.global_batch;
  d.recompute = b.recompute;
  d.selective_recompute = b.selective_recompute;
  d.predicted_step_time_s = b.step_time_s;
  d.predicted_cost = b.cost;
  d.predicted_time_to_solution_s = b.time_to_solution_s;
  d.predicted_memory_per_gpu_bytes = b.memory_per_gpu_bytes;
  d.time_limit_s = a.time_limit_s;
  d.segments = std::max(1, a.segments);
  return d;
}

Variables DecisionVariables(const RunDecision& d) {
  return {
      {"XDEEP_DECISION_ID", d.decision_id},
      {"XDEEP_WORKLOAD_NAME", d.workload},
      {"XDEEP_LAUNCHER", std::string(AppLauncherName(d.launcher))},
      {"XDEEP_NODES", std::to_string(d.nodes)},
      {"XDEEP_GPUS_PER_NODE", std::to_string(d.gpus_per_node)},
      {"XDEEP_TASKS", std::to_string(d.tasks)},
      {"XDEEP_STRATEGY", d.strategy},
      {"XDEEP_DP", std::to_string(d.dp)},
      {"XDEEP_TP", std::to_string(d.tp)},
      {"XDEEP_PP", std::to_string(d.pp)},
      {"XDEEP_CP", std::to_string(d.cp)},
      {"XDEEP_SEQUENCE_PARALLEL", d.sequence_parallel ? "1" : "0"},
      {"XDEEP_SHARDING_STAGE", std::to_string(d.sharding_stage)},
      {"XDEEP_PIPELINE_SCHEDULE", d.pipeline_schedule.empty() ? "none" : d.pipeline_schedule},
      {"XDEEP_VIRTUAL_STAGES", std::to_string(d.virtual_stages)},
      {"XDEEP_RANK_ORDER", kRankOrder},
      {"XDEEP_MICRO_BATCH", std::to_string(d.micro_batch)},
      {"XDEEP_GRAD_ACCUM", std::to_string(d.grad_accumulation)},
      {"XDEEP_GLOBAL_BATCH", std::to_string(d.global_batch)},
      {"XDEEP_RECOMPUTE", d.recompute ? "1" : "0"},
      {"XDEEP_SELECTIVE_RECOMPUTE", d.selective_recompute ? "1" : "0"},
      {"XDEEP_PREDICTED_STEP_TIME_S", Fixed(d.predicted_step_time_s, 6)},
      {"XDEEP_PREDICTED_COST", Fixed(d.predicted_cost, 4)},
      {"XDEEP_PREDICTED_TIME_TO_SOLUTION_S", Fixed(d.predicted_time_to_solution_s, 1)},
      {"XDEEP_PREDICTED_MEMORY_PER_GPU_BYTES", std::to_string(d.predicted_memory_per_gpu_bytes)},
      {"XDEEP_TIME_LIMIT_S", Fixed(d.time_limit_s, 0)},
      {"XDEEP_SEGMENTS", std::to_string(d.segments)},
  };
}

bool ReadDecisionVariables(const std::function<std::string(const char*)>& get, RunDecision* out,
                           std::string* error) {
  RunDecision d;
  d.decision_id = get("XDEEP_DECISION_ID");
  if (d.decision_id.empty()) {
    *error = "XDEEP_DECISION_ID is not set: this is not a tuned launch";
    return false;
  }
  d.workload = get("XDEEP_WORKLOAD_NAME");
  d.strategy = get("XDEEP_STRATEGY");
  const std::string launcher = get("XDEEP_LAUNCHER");
  if (!launcher.empty() && !ParseAppLauncher(launcher, &d.launcher)) {
    *error = "XDEEP_LAUNCHER=" + launcher + " is not srun, torchrun, accelerate or deepspeed";
    return false;
  }
  const std::string schedule = get("XDEEP_PIPELINE_SCHEDULE");
  d.pipeline_schedule = schedule == "none" ? "" : schedule;
  d.recompute = get("XDEEP_RECOMPUTE") == "1";
  d.selective_recompute = get("XDEEP_SELECTIVE_RECOMPUTE") == "1";
  d.sequence_parallel = get("XDEEP_SEQUENCE_PARALLEL") == "1";
  struct Int {
    const char* name;
    int* value;
    bool required;
  };
  for (const Int& i :
       {Int{"XDEEP_NODES", &d.nodes, true}, Int{"XDEEP_GPUS_PER_NODE", &d.gpus_per_node, true},
        Int{"XDEEP_TASKS", &d.tasks, true}, Int{"XDEEP_DP", &d.dp, true},
        Int{"XDEEP_TP", &d.tp, true}, Int{"XDEEP_PP", &d.pp, true}, Int{"XDEEP_CP", &d.cp, false},
        Int{"XDEEP_SHARDING_STAGE", &d.sharding_stage, true},
        Int{"XDEEP_VIRTUAL_STAGES", &d.virtual_stages, false},
        Int{"XDEEP_MICRO_BATCH", &d.micro_batch, true},
        Int{"XDEEP_GRAD_ACCUM", &d.grad_accumulation, true},
        Int{"XDEEP_SEGMENTS", &d.segments, false}}) {
    const std::string text = get(i.name);
    if (text.empty() && !i.required) continue;
    if (!ParseNumber(text, i.value)) {
      *error = std::string(i.name) + "='" + text + "' is not a whole number";
      return false;
    }
  }
  if (!ParseNumber(get("XDEEP_GLOBAL_BATCH"), &d.global_batch)) {
    *error = "XDEEP_GLOBAL_BATCH='" + get("XDEEP_GLOBAL_BATCH") + "' is not a whole number";
    return false;
  }
  // Predictions are informative: a missing or odd one is left at 0.
  auto real = [&](const char* name) {
    const std::string text = get(name);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    return end != text.c_str() && *end == '\0' ? v : 0.0;
  };
  d.predicted_step_time_s = real("XDEEP_PREDICTED_STEP_TIME_S");
  d.predicted_cost = real("XDEEP_PREDICTED_COST");
  d.predicted_time_to_solution_s = real("XDEEP_PREDICTED_TIME_TO_SOLUTION_S");
  ParseNumber(get("XDEEP_PREDICTED_MEMORY_PER_GPU_BYTES"), &d.predicted_memory_per_gpu_bytes);
  d.time_limit_s = real("XDEEP_TIME_LIMIT_S");
  if (!Consistent(d, error)) return false;
  *out = std::move(d);
  return true;
}

std::string DecisionFileJson(const RunDecision& d) {
  json doc = {
      {"schema", kSchema},
      {"decision_id", d.decision_id},
      {"workload", d.workload},
      {"launcher", AppLauncherName(d.launcher)},
      {"layout",
       {{"nodes", d.nodes},
        {"gpus_per_node", d.gpus_per_node},
        {"ranks", d.tasks},
        {"tasks_per_node", PerNode(d.launcher) ? 1 : d.gpus_per_node}}},
      {"parallel",
       {{"strategy", d.strategy},
        {"dp", d.dp},
        {"tp", d.tp},
        {"pp", d.pp},
        {"cp", d.cp},
        {"sequence_parallel", d.sequence_parallel},
        {"sharding_stage", d.sharding_stage},
        {"pipeline_schedule",
         d.pipeline_schedule.empty() ? json(nullptr) : json(d.pipeline_schedule)},
        {"virtual_stages", d.virtual_stages},
        {"rank_order", kRankOrder}}},
      {"batch",
       {{"micro_batch", d.micro_batch},
        {"grad_accumulation", d.grad_accumulation},
        {"global_batch", d.global_batch}}},
      {"recompute", d.recompute},
      {"selective_recompute", d.selective_recompute},
      {"predicted",
       {{"step_time_s", d.predicted_step_time_s},
        {"cost", d.predicted_cost},
        {"time_to_solution_s", d.predicted_time_to_solution_s},
        {"memory_per_gpu_bytes", d.predicted_memory_per_gpu_bytes}}},
      {"time", {{"limit_s", d.time_limit_s}, {"segments", d.segments}}},
  };
  return doc.dump(2) + "\n";
}

bool ParseDecisionFile(const std::string& text, RunDecision* out, std::string* error) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    *error = "not a JSON object";
    return false;
  }
  if (doc.value("schema", "") != kSchema) {
    *error = "schema is '" + (doc.contains("schema") ? doc["schema"].dump() : std::string()) +
             "', this xdeep reads " + kSchema;
    return false;
  }
  try {
    RunDecision d;
    d.decision_id = doc.at("decision_id").get<std::string>();
    d.workload = doc.value("workload", "");
    if (!ParseAppLauncher(doc.value("launcher", "srun"), &d.launcher)) {
      *error = "unknown launcher " + doc["launcher"].dump();
      return false;
    }
    const json& l = doc.at("layout");
    d.nodes = l.at("nodes").get<int>();
    d.gpus_per_node = l.at("gpus_per_node").get<int>();
    d.tasks = l.at("ranks").get<int>();
    const json& p = doc.at("parallel");
    d.strategy = p.value("strategy", "");
    d.dp = p.at("dp").get<int>();
    d.tp = p.at("tp").get<int>();
    d.pp = p.at("pp").get<int>();
    d.cp = p.value("cp", 1);
    d.sequence_parallel = p.value("sequence_parallel", false);
    d.sharding_stage = p.at("sharding_stage").get<int>();
    if (p.contains("pipeline_schedule") && p["pipeline_schedule"].is_string())
      d.pipeline_schedule = p["pipeline_schedule"].get<std::string>();
    d.virtual_stages = p.value("virtual_stages", 1);
    const json& b = doc.at("batch");
    d.micro_batch = b.at("micro_batch").get<int>();
    d.grad_accumulation = b.at("grad_accumulation").get<int>();
    d.global_batch = b.at("global_batch").get<int64_t>();
    d.recompute = doc.value("recompute", false);
    d.selective_recompute = doc.value("selective_recompute", false);
    if (doc.contains("predicted") && doc["predicted"].is_object()) {
      const json& q = doc["predicted"];
      d.predicted_step_time_s = q.value("step_time_s", 0.0);
      d.predicted_cost = q.value("cost", 0.0);
      d.predicted_time_to_solution_s = q.value("time_to_solution_s", 0.0);
      d.predicted_memory_per_gpu_bytes = q.value("memory_per_gpu_bytes", int64_t{0});
    }
    if (doc.contains("time") && doc["time"].is_object()) {
      d.time_limit_s = doc["time"].value("limit_s", 0.0);
      d.segments = doc["time"].value("segments", 1);
    }
    if (!Consistent(d, error)) return false;
    *out = std::move(d);
  } catch (const json::exception& e) {
    *error = std::string("a field is missing or has the wrong type (") + e.what() + ")";
    return false;
  }
  return true;
}

}  // namespace xdeep::client
