// Decision formatting and environment (see decision_output.h).
#include "spank_plugin/decision_output.h"

#include <cstdio>

namespace xdeep::spank {
namespace {

std::string Format(const char* fmt, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}

std::string Duration(double seconds) {
  if (seconds < 120) return Format("%.0f s", seconds);
  if (seconds < 7200) return Format("%.1f min", seconds / 60);
  if (seconds < 3 * 86400) return Format("%.1f h", seconds / 3600);
  return Format("%.1f d", seconds / 86400);
}

std::string Row(const LayoutRow& r, const std::string& currency) {
  return Format("%-28s %5d %5d %5d %6d %8lld %8.1f %9.4f %10s %10.2f %s  %s", r.strategy.c_str(),
                r.nodes, r.gpus_per_node, r.micro_batch, r.grad_accumulation,
                static_cast<long long>(r.global_batch),
                static_cast<double>(r.memory_per_gpu_bytes) / (1ull << 30), r.step_time_s,
                Duration(r.time_to_solution_s).c_str(), r.cost, currency.c_str(), r.why.c_str());
}

}  // namespace

std::string SummaryLine(const TuneAnswer& a) {
  const LayoutRow& b = a.best;
  return Format(
      "%s: %s on %d node%s x %d GPU%s, micro-batch %d x %d accumulation = global batch %lld; "
      "predicted %.4f s/step, %s, %.2f %s (%s; decision %s)",
      a.workload_name.c_str(), b.strategy.c_str(), b.nodes, b.nodes == 1 ? "" : "s",
      b.gpus_per_node, b.gpus_per_node == 1 ? "" : "s", b.micro_batch, b.grad_accumulation,
      static_cast<long long>(b.global_batch), b.step_time_s, Duration(b.time_to_solution_s).c_str(),
      b.cost, a.currency.c_str(), a.hardware_label.c_str(), a.decision_id.substr(0, 12).c_str());
}

std::vector<std::string> ExplainTable(const TuneAnswer& a) {
  std::vector<std::string> lines;
  lines.push_back(Format("workload %s, %s, %llu configurations evaluated", a.workload_name.c_str(),
                         a.hardware_label.c_str(),
                         static_cast<unsigned long long>(a.candidates_evaluated)));
  lines.push_back(Format("%-28s %5s %5s %5s %6s %8s %8s %9s %10s %14s  %s", "strategy", "nodes",
                         "gpu/n", "mbs", "accum", "batch", "mem GiB", "step s", "time", "cost",
                         "why"));
  lines.push_back("* " + Row(a.best, a.currency).substr(0));
  for (const LayoutRow& r : a.alternatives) lines.push_back("  " + Row(r, a.currency));
  return lines;
}

std::vector<std::pair<std::string, std::string>> DecisionEnvironment(
    const TuneAnswer& a, const std::string& report_path) {
  const LayoutRow& b = a.best;
  return {
      {"XDEEP_DECISION_ID", a.decision_id},
      {"XDEEP_NODES", std::to_string(b.nodes)},
      {"XDEEP_GPUS_PER_NODE", std::to_string(b.gpus_per_node)},
      {"XDEEP_TASKS", std::to_string(b.tasks)},
      {"XDEEP_STRATEGY", b.strategy},
      {"XDEEP_DP", std::to_string(b.dp)},
      {"XDEEP_TP", std::to_string(b.tp)},
      {"XDEEP_PP", std::to_string(b.pp)},
      {"XDEEP_SHARDING_STAGE", std::to_string(b.sharding_stage)},
      {"XDEEP_MICRO_BATCH", std::to_string(b.micro_batch)},
      {"XDEEP_GRAD_ACCUM", std::to_string(b.grad_accumulation)},
      {"XDEEP_GLOBAL_BATCH", std::to_string(b.global_batch)},
      {"XDEEP_RECOMPUTE", b.recompute ? "1" : "0"},
      {"XDEEP_PREDICTED_STEP_TIME_S", Format("%.6f", b.step_time_s)},
      {"XDEEP_PREDICTED_COST", Format("%.4f", b.cost)},
      {"XDEEP_REPORT", report_path},
  };
}

}  // namespace xdeep::spank
