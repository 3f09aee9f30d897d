// xdeep_validate: the tuner's predictions against real PyTorch training (issue 7).
//
//   xdeep_validate shapes --models gpt-125m,resnet50 --micro-batches 1,2,4 --out S.json
//                         [--heuristic-out H.json --gpus-per-node 2]
//       the GEMMs those workloads run, as an xdeep.gemm_shapes/1 file for xdeep-probe;
//       H: those the daemon's probe job asks cuBLASLt's heuristic about
//   xdeep_validate gemm-check --fit REPORT.json --check TIMED.json [--median 0.05 --p95 0.15]
//       the GEMM model fitted to a probe report's points against GEMMs timed
//       by cuBLAS at shapes the probe never ran (bench/validate/gemm_shapes.py):
//       median and 95th-percentile relative error per precision and overall;
//       --algos HEURISTIC.json (xdeep-probe compute --suite gemm-heuristic at the
//       check's shapes, nothing timed) lets the model time the kernel cuBLAS picks
//   xdeep_validate compare --profile PROFILE.json|builtin:NAME --runs RUNS.json...
//                          [--json OUT] [--check [--targets step-time,memory,picks,learning]]
//       predicted vs measured step time and peak memory of every measured run,
//       the mean absolute percentage errors, the tuner's pick per workload
//       against the cheapest measured configuration, and what one reported run
//       teaches the model about its neighbours
//
// PROFILE is a probe report of the machine that ran the training
// (xdeep-probe compute + collectives, merged); RUNS are measure_pytorch.py
// files (bench/memory_validation) or library_suite.py's (--workloads DIR:
// each run's model described by DIR/<model>.toml); builtin:NAME predicts with a built-in
// profile instead, as the daemon does before a site's probes have run. Exit
// status with --check: 0 when every target (of --targets) holds, 1 when one
// misses, 2 on bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "profiler/atomic_file.h"
#include "tuner/gemm_kernel_table.h"
#include "tuner/hardware_profile.h"
#include "tuner/modeling/scaling_correction.h"
#include "tuner/probe_shapes.h"
#include "tuner/search.h"
#include "tuner/step_time_correction.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::validate {
namespace {

using tuner::Configuration;
using tuner::Workload;

// Targets of issue 7.
constexpr double kStepTimeMapeTarget = 0.07;
constexpr double kMemoryMapeTarget = 0.10;
constexpr double kPickWithin = 0.05;

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return true;
}

// --workloads: where workload files name the models (library_suite.py's).
std::string& WorkloadDir() {
  static std::string dir;
  return dir;
}

// The workload as measure_pytorch.py trains it: AdamW, bf16 autocast; FSDP
// gathers GPT units in bf16 but keeps ResNet-50's parameters fp32 (BatchNorm).
// Under --workloads, the model's workload file as written (its settings say
// how library_suite.py trains it).
absl::StatusOr<Workload> ScriptWorkload(const std::string& model) {
  if (!WorkloadDir().empty()) {
    const std::string path = WorkloadDir() + "/" + model + ".toml";
    std::string text;
    if (!ReadFile(path, &text)) {
      return absl::NotFoundError("no workload file " + path + " for model " + model);
    }
    return tuner::ParseWorkloadToml(text, path);
  }
  auto w = tuner::PresetWorkload(model);
  if (!w.ok()) return w.status();
  w->optimizer = tuner::OptimizerKind::kAdamW;
  w->precision = tuner::Precision::kBf16Autocast;
  w->fsdp_16bit_params = model != "resnet50";
  return w;
}

struct Run {
  std::string model, mode;
  Configuration config;
  // Measurements of this configuration (files given together): of its step
  // time, and of its peak on a clean baseline; the measured values their mean.
  int time_samples = 0, memory_samples = 0;
  bool has_time() const { return time_samples > 0; }
  bool has_memory() const { return memory_samples > 0; }
  double measured_s = 0, predicted_s = 0;
  double measured_bytes = 0, predicted_bytes = 0;
  double predicted_total_bytes = 0;  // what the search checks against the card
  double predicted_cost = 0;         // the search's cost of this configuration
  tuner::StepTime predicted_parts;   // the model's breakdown
  // Measured GPU time per kind of kernel in one profiled step (measure_pytorch.py --kernels).
  std::map<std::string, double> kernel_s;
  // Several ranks: the slowest host's time to issue a step over the ranks'
  // mean, averaged over the steps (measure_pytorch.py's host_issue_s; 0:
  // none), and the model's factor for as many ranks.
  double straggle = 0, predicted_straggle = 1;
};

// `x` into the mean of `*n` values.
void AddToMean(double x, double* mean, int* n) {
  *mean = (*mean * *n + x) / (*n + 1);
  ++*n;
}

// Mean over steps of the ranks' largest host issue time, over the mean of
// their mean: how much a synchronous step waits for its slowest host.
double MeasuredStraggle(const nlohmann::json& ranks) {
  std::vector<std::vector<double>> issue;
  for (const auto& r : ranks) {
    if (!r.is_object() || !r.contains("host_issue_s")) return 0;
    issue.push_back(r["host_issue_s"].get<std::vector<double>>());
  }
  if (issue.size() < 2) return 0;
  size_t steps = issue[0].size();
  for (const auto& v : issue) steps = std::min(steps, v.size());
  double max_sum = 0, mean_sum = 0;
  for (size_t i = 0; i < steps; ++i) {
    double mx = 0, sum = 0;
    for (const auto& v : issue) {
      mx = std::max(mx, v[i]);
      sum += v[i];
    }
    max_sum += mx;
    mean_sum += sum / issue.size();
  }
  return mean_sum > 0 ? max_sum / mean_sum : 0;
}

Configuration ConfigFor(const nlohmann::json& run) {
  Configuration c;
  c.gpus_per_node = run.value("world_size", 1);
  c.tp = std::max(1, run.value("tp", 1));
  c.pp = std::max(1, run.value("pp", 1));
  c.dp = std::max(1, c.gpus_per_node / (c.tp * c.pp));
  c.micro_batch = run.value("micro_batch", 1);
  c.grad_accum = run.value("grad_accum", 1);
  c.recompute = run.value("recompute", false);
  c.global_batch = int64_t{c.dp} * c.micro_batch * c.grad_accum;
  c.sharding =
      run.value("mode", "single") == "fsdp" ? tuner::Sharding::kZero3 : tuner::Sharding::kNone;
  return c;
}

double Mape(const std::vector<std::pair<double, double>>& pairs) {
  if (pairs.empty()) return 0;
  double sum = 0;
  for (const auto& [measured, predicted] : pairs) sum += std::abs(predicted - measured) / measured;
  return sum / pairs.size();
}

// The GEMM model fitted to a probe report, against cuBLAS times of other shapes.
int GemmCheck(const std::string& fit_path, const std::string& check_path,
              const std::string& algos_path, double median_target, double p95_target, int worst) {
  std::string fit_text, check_text, algos_text;
  if (!ReadFile(fit_path, &fit_text) || !ReadFile(check_path, &check_text) ||
      (!algos_path.empty() && !ReadFile(algos_path, &algos_text))) {
    std::fprintf(stderr, "xdeep_validate: cannot read %s, %s%s%s\n", fit_path.c_str(),
                 check_path.c_str(), algos_path.empty() ? "" : " or ", algos_path.c_str());
    return 2;
  }
  if (!algos_path.empty()) {
    // The heuristic's kernels join the fit report's: shapes only, no time.
    auto fit_doc = nlohmann::json::parse(fit_text, nullptr, false);
    const auto algos = nlohmann::json::parse(algos_text, nullptr, false);
    if (fit_doc.is_discarded() || algos.is_discarded() || !algos.contains("gemm_algos") ||
        !algos["gemm_algos"].is_array()) {
      std::fprintf(stderr,
                   "xdeep_validate: %s has no gemm_algos (xdeep-probe compute --suite "
                   "gemm-heuristic writes them), or %s is not JSON\n",
                   algos_path.c_str(), fit_path.c_str());
      return 2;
    }
    for (const auto& a : algos["gemm_algos"]) fit_doc["gemm_algos"].push_back(a);
    fit_text = fit_doc.dump();
  }
  auto hw = tuner::HardwareProfileFromProbeReport(fit_text, fit_path);
  if (!hw.ok()) {
    std::fprintf(stderr, "xdeep_validate: %s\n", std::string(hw.status().message()).c_str());
    return 2;
  }
  const auto doc = nlohmann::json::parse(check_text, nullptr, false);
  if (doc.is_discarded() || !doc.contains("gemm") || !doc["gemm"].is_array()) {
    std::fprintf(stderr, "xdeep_validate: %s is not a gemm_shapes.py time result\n",
                 check_path.c_str());
    return 2;
  }
  const std::map<std::string, tuner::DType> dtypes = {
      {"bf16", tuner::DType::kBf16}, {"fp16", tuner::DType::kFp16}, {"tf32", tuner::DType::kTf32}};
  std::map<std::string, std::vector<double>> errors;
  struct Miss {
    double error, predicted, measured;
    std::string what;
  };
  std::vector<Miss> misses;
  size_t with_kernel = 0;
  for (const auto& g : doc["gemm"]) {
    const std::string dt = g.value("dtype", "");
    const double m = g.value("m", 0.0), n = g.value("n", 0.0), k = g.value("k", 0.0),
                 measured = g.value("median_s", 0.0);
    if (!dtypes.contains(dt) || m <= 0 || n <= 0 || k <= 0 || measured <= 0) {
      std::fprintf(stderr, "xdeep_validate: %s: an entry lacks dtype, m, n, k or median_s\n",
                   check_path.c_str());
      return 2;
    }
    const std::string pass = g.value("pass", "fwd");
    const tuner::GemmLayout layout = pass == "wgrad"   ? tuner::GemmLayout::kWgrad
                                     : pass == "dgrad" ? tuner::GemmLayout::kDgrad
                                                       : tuner::GemmLayout::kForward;
    const double predicted = tuner::GemmModel(*hw, dtypes.at(dt)).Seconds(m, n, k, layout);
    if (hw->gemm_kernels && hw->gemm_kernels->Find(dtypes.at(dt), layout, m, n, k)) ++with_kernel;
    const double e = std::abs(predicted / measured - 1);
    errors[dt].push_back(e);
    errors["all"].push_back(e);
    misses.push_back({predicted / measured - 1, predicted, measured,
                      fmt::format("{} {:<5} m={:<6} n={:<6} k={:<6} {}", dt, pass, m, n, k,
                                  g.value("layer", ""))});
  }
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(std::round(q * (v.size() - 1)))];
  };
  std::printf("GEMM model fitted to %s (%zu points), checked against %s\n", fit_path.c_str(),
              hw->gemm.size(), check_path.c_str());
  for (const auto& [dt, d] : dtypes) {
    std::printf("  %s: %s\n", dt.c_str(), hw->gemm_fits[static_cast<int>(d)].note.c_str());
    if (hw->gemm_kernels && hw->gemm_kernels->fit(d).valid) {
      std::printf("  %s: %s\n", dt.c_str(), hw->gemm_kernels->fit(d).note.c_str());
    }
  }
  std::printf("  cuBLASLt kernel known for %zu of %zu checked shapes (%s)\n", with_kernel,
              misses.size(), algos_path.empty() ? "no --algos" : algos_path.c_str());
  bool ok = true;
  for (const auto& [dt, e] : errors) {
    const double median = quantile(e, 0.5), p95 = quantile(e, 0.95);
    const bool met = median <= median_target && p95 <= p95_target;
    if (dt == "all") ok = met;
    std::printf("%-5s %4zu shapes: median error %5.1f %%, 95th percentile %5.1f %%%s\n",
                dt.c_str(), e.size(), 100 * median, 100 * p95,
                dt == "all" ? (met ? "  (targets met)" : "  (targets MISSED)") : "");
  }
  std::printf("targets: median <= %.0f %%, 95th percentile <= %.0f %%\n", 100 * median_target,
              100 * p95_target);
  std::sort(misses.begin(), misses.end(),
            [](const Miss& a, const Miss& b) { return std::abs(a.error) > std::abs(b.error); });
  for (int i = 0; i < std::min<int>(worst, misses.size()); ++i) {
    const Miss& x = misses[i];
    std::printf("  %+6.1f %%  predicted %9.4f ms, measured %9.4f ms  %s\n", 100 * x.error,
                x.predicted * 1e3, x.measured * 1e3, x.what.c_str());
  }
  return ok ? 0 : 1;
}

// With `heuristic_path`: also the GEMMs the daemon's probe job asks cuBLASLt's
// heuristic about for these workloads on nodes of `gpus_per_node` GPUs.
int Shapes(const std::vector<std::string>& models, const std::vector<int>& micro_batches,
           const std::string& out_path, const std::string& heuristic_path, int gpus_per_node) {
  std::vector<Workload> workloads;
  for (const std::string& model : models) {
    auto w = ScriptWorkload(model);
    if (!w.ok()) {
      std::fprintf(stderr, "xdeep_validate: %s\n", std::string(w.status().message()).c_str());
      return 2;
    }
    workloads.push_back(*std::move(w));
  }
  const std::string doc = tuner::GemmShapesJson(workloads, micro_batches);
  if (absl::Status s = profiler::WriteFileAtomically(out_path, doc); !s.ok()) {
    std::fprintf(stderr, "xdeep_validate: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  std::printf("%zu GEMM layers (x3: fwd, dgrad, wgrad) for %zu workloads -> %s\n",
              nlohmann::json::parse(doc)["layers"].size(), models.size(), out_path.c_str());
  if (heuristic_path.empty()) return 0;
  const std::string asked = tuner::HeuristicShapesWithPresets(workloads, gpus_per_node);
  if (asked.empty()) {
    // HeuristicGemmsJson's answer for no GEMM at all: nothing to ask about.
    std::fprintf(stderr,
                 "xdeep_validate: the workloads and the presets have no GEMM for cuBLASLt's "
                 "heuristic at %d GPUs a node; %s not written (name workloads with Linear or "
                 "convolution layers)\n",
                 gpus_per_node, heuristic_path.c_str());
    return 2;
  }
  if (absl::Status s = profiler::WriteFileAtomically(heuristic_path, asked); !s.ok()) {
    std::fprintf(stderr, "xdeep_validate: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  std::printf("%zu GEMMs for cuBLASLt's heuristic (%d GPUs a node, with the presets') -> %s\n",
              nlohmann::json::parse(asked)["gemms"].size(), gpus_per_node, heuristic_path.c_str());
  return 0;
}

// Loads every usable run: a measured step time and/or a clean peak.
bool LoadRuns(const std::vector<std::string>& files, const tuner::HardwareProfile& hw,
              std::vector<Run>* runs, std::string* meta_summary) {
  for (const std::string& file : files) {
    std::string text;
    if (!ReadFile(file, &text)) {
      std::fprintf(stderr, "xdeep_validate: cannot read %s\n", file.c_str());
      return false;
    }
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded() || !doc.contains("runs") || !doc["runs"].is_array()) {
      std::fprintf(stderr,
                   "xdeep_validate: %s is not a measure_pytorch.py result (no \"runs\" array)\n",
                   file.c_str());
      return false;
    }
    if (doc.contains("meta")) {
      const auto& m = doc["meta"];
      *meta_summary += fmt::format(
          "  {}: {} x{} {}, torch {}, CUDA {}, NCCL {}, {}\n", file, m.value("gpu", "?"),
          m.value("gpu_count_used", 0), m.value("date", "?"), m.value("torch", "?"),
          m.value("cuda", "?"), m.value("nccl", "?"), m.value("mode", "?"));
    }
    for (const auto& r : doc["runs"]) {
      if (!r.contains("model")) continue;
      if (r.contains("error") || r.contains("skipped")) {
        // Not compared, but said: a configuration missing from the set.
        *meta_summary +=
            fmt::format("  {}: {} {} mb{} not measured: {}\n", file, r["model"].get<std::string>(),
                        r.value("mode", "single"), r.value("micro_batch", 0),
                        r.contains("skipped") ? r.value("skipped", "") : r.value("error", ""));
        continue;
      }
      Run run;
      run.model = r["model"].get<std::string>();
      run.mode = r.value("mode", "single");
      run.config = ConfigFor(r);
      auto w = ScriptWorkload(run.model);
      if (!w.ok()) {
        std::fprintf(stderr, "xdeep_validate: %s: %s\n", file.c_str(),
                     std::string(w.status().message()).c_str());
        return false;
      }
      if (const std::string why = tuner::StructuralProblem(*w, run.config); !why.empty()) {
        std::fprintf(stderr, "xdeep_validate: %s: %s mb%d: %s\n", file.c_str(), run.model.c_str(),
                     run.config.micro_batch, why.c_str());
        return false;
      }
      tuner::StrategyModel model(*w, hw);
      if (r.contains("step_time_median_s")) {
        run.time_samples = 1;
        run.measured_s = r["step_time_median_s"].get<double>();
        run.predicted_parts = model.Time(run.config);
        run.predicted_s = run.predicted_parts.total_s;
      }
      // A baseline that still held the previous configuration's memory (a process
      // of several, measure_pytorch.py's held_before_bytes; before it recorded that,
      // a negative steady state) measures no peak: another file's may.
      const double held = r.value("held_before_bytes", 0.0);
      if (held > 0) {
        *meta_summary += fmt::format(
            "  {}: {} {} mb{} peak memory not compared: its baseline held {:.0f} MB of the "
            "configuration before\n",
            file, run.model, run.mode, run.config.micro_batch, held / 1e6);
      }
      if (r.contains("peak_allocated_bytes") && r.value("steady_allocated_bytes", 0.0) > 0 &&
          held <= 0) {
        run.memory_samples = 1;
        run.measured_bytes = r["peak_allocated_bytes"].get<double>();
        run.predicted_bytes = model.Memory(run.config).PeakAllocated();
      }
      if (r.contains("ranks") && r["ranks"].is_array()) run.straggle = MeasuredStraggle(r["ranks"]);
      run.predicted_straggle = tuner::StragglerFactor(run.config.TotalGpus(), hw.host_step_cv);
      if (r.contains("kernel_profile")) {
        for (const auto& [kind, seconds] : r["kernel_profile"]["gpu_s"].items()) {
          run.kernel_s[kind] = seconds.get<double>();
        }
      }
      run.predicted_total_bytes = model.MemoryTotal(run.config);
      tuner::SearchLimits limits;  // cost per GPU-hour, the cluster default
      run.predicted_cost = tuner::Evaluate(*w, hw, limits, run.config).cost;
      // The same configuration measured again (another run's file): its step
      // time is the mean of the runs, which evens out the host's run-to-run
      // speed; its peak the mean of the clean ones (DDP's rebuilt buckets add a
      // set at random, StrategyModel's ddp_rebuild).
      auto same = std::find_if(runs->begin(), runs->end(), [&](const Run& o) {
        return o.model == run.model && o.mode == run.mode &&
               o.config.TotalGpus() == run.config.TotalGpus() &&
               o.config.micro_batch == run.config.micro_batch &&
               o.config.grad_accum == run.config.grad_accum &&
               o.config.recompute == run.config.recompute;
      });
      if (same == runs->end()) {
        runs->push_back(run);
        continue;
      }
      if (run.has_time()) {
        AddToMean(run.measured_s, &same->measured_s, &same->time_samples);
        same->predicted_s = run.predicted_s;
        same->predicted_parts = run.predicted_parts;
      }
      if (run.has_memory()) {
        AddToMean(run.measured_bytes, &same->measured_bytes, &same->memory_samples);
        same->predicted_bytes = run.predicted_bytes;
      }
    }
  }
  return true;
}

// Measured GPU-seconds per sample: what the cost objective minimises when
// every GPU-hour costs the same.
double MeasuredCostPerSample(const Run& r) {
  return r.config.TotalGpus() * r.measured_s / static_cast<double>(r.config.global_batch);
}

// "single x1 mb16 "; Label adds the workload in front.
std::string ConfigLabel(const Run& r) {
  return fmt::format("{:<6} x{} mb{:<3}", r.mode, r.config.TotalGpus(), r.config.micro_batch);
}
std::string Label(const Run& r) { return fmt::format("{:<9} {}", r.model, ConfigLabel(r)); }

// Where the time goes, predicted and (if profiled) measured on the GPU.
void PrintBreakdown(const std::vector<Run>& runs) {
  std::printf(
      "%-26s | predicted ms: %8s %8s %8s %8s | measured GPU ms: %8s %8s %8s %8s %8s | %s\n",
      "run", "compute", "comm", "optim", "total", "gemm", "attn", "elemwise", "optim", "nccl",
      "straggle (measured / model)");
  for (const Run& r : runs) {
    if (!r.has_time()) continue;
    auto k = [&](const char* kind) {
      auto it = r.kernel_s.find(kind);
      return it == r.kernel_s.end() ? 0.0 : it->second * 1e3;
    };
    const tuner::StepTime& p = r.predicted_parts;
    const std::string straggle =
        r.straggle > 0 ? fmt::format("{:.3f} / {:.3f}", r.straggle, r.predicted_straggle) : "";
    std::printf("%-26s | %22.1f %8.1f %8.1f %8.1f | %25.1f %8.1f %8.1f %8.1f %8.1f | %s\n",
                Label(r).c_str(), p.compute_s * 1e3, p.exposed_comm_s * 1e3, p.optimizer_s * 1e3,
                p.total_s * 1e3, k("gemm_conv"), k("attention"), k("elementwise"), k("optimizer"),
                k("nccl"), straggle.c_str());
  }
  std::printf("\n");
}

// What --check holds the run to (--targets): the issue's four.
struct Targets {
  bool step_time = true, memory = true, picks = true, learning = true;
};

int Compare(const std::string& profile_path, const std::vector<std::string>& run_files,
            const std::string& json_out, bool check, const Targets& targets, bool breakdown,
            double step_time_target) {
  // builtin:NAME: the daemon's figures before a site's probes have run.
  constexpr std::string_view kBuiltin = "builtin:";
  absl::StatusOr<tuner::HardwareProfile> hw;
  if (profile_path.starts_with(kBuiltin)) {
    hw = tuner::BuiltinHardwareProfile(profile_path.substr(kBuiltin.size()));
  } else {
    std::string profile_text;
    if (!ReadFile(profile_path, &profile_text)) {
      std::fprintf(stderr, "xdeep_validate: cannot read profile %s\n", profile_path.c_str());
      return 2;
    }
    hw = tuner::HardwareProfileFromProbeReport(profile_text, profile_path);
  }
  if (!hw.ok()) {
    std::fprintf(stderr, "xdeep_validate: %s\n", std::string(hw.status().message()).c_str());
    return 2;
  }
  std::vector<Run> runs;
  std::string meta;
  if (!LoadRuns(run_files, *hw, &runs, &meta)) return 2;
  if (runs.empty()) {
    std::fprintf(stderr, "xdeep_validate: no usable runs in the given files\n");
    return 2;
  }
  std::printf(
      "profile: %s (%s, %zu GEMM points, %zu collective fits, %.0f GB/s, host %.1f us per "
      "kernel)\nmeasurements:\n%s\n",
      hw->Label().c_str(), hw->gpu_name.c_str(), hw->gemm.size(), hw->collectives.size(),
      hw->memory_bandwidth_gbps, hw->host_overhead_per_kernel_s * 1e6, meta.c_str());

  if (breakdown) PrintBreakdown(runs);

  // 1. Predicted vs measured, per run.
  std::printf("%-26s %10s %10s %7s   %10s %10s %7s\n", "run", "step ms", "predicted", "error",
              "peak GiB", "predicted", "error");
  std::vector<std::pair<double, double>> time_pairs, memory_pairs;
  std::map<std::string, std::vector<std::pair<double, double>>> time_by_mode, memory_by_mode;
  nlohmann::json rows = nlohmann::json::array();
  for (const Run& r : runs) {
    std::string t = fmt::format("{:>10} {:>10} {:>7}", "-", "-", "");
    std::string m = t;
    if (r.has_time()) {
      t = fmt::format("{:10.1f} {:10.1f} {:+6.1f}%", r.measured_s * 1e3, r.predicted_s * 1e3,
                      100 * (r.predicted_s / r.measured_s - 1));
      time_pairs.push_back({r.measured_s, r.predicted_s});
      time_by_mode[r.mode].push_back({r.measured_s, r.predicted_s});
    }
    if (r.has_memory()) {
      m = fmt::format("{:10.2f} {:10.2f} {:+6.1f}%", r.measured_bytes / (1 << 30),
                      r.predicted_bytes / (1 << 30),
                      100 * (r.predicted_bytes / r.measured_bytes - 1));
      memory_pairs.push_back({r.measured_bytes, r.predicted_bytes});
      memory_by_mode[r.mode].push_back({r.measured_bytes, r.predicted_bytes});
    }
    std::printf("%-26s %s   %s\n", Label(r).c_str(), t.c_str(), m.c_str());
    nlohmann::json row = {{"model", r.model},
                          {"mode", r.mode},
                          {"gpus", r.config.TotalGpus()},
                          {"micro_batch", r.config.micro_batch}};
    if (r.has_time()) {
      row.update({{"step_s", r.measured_s},
                  {"predicted_step_s", r.predicted_s},
                  {"bound", r.predicted_parts.bound() == tuner::StepTime::Bound::kHost ? "host"
                                                                                     : "kernel"},
                  // The passes' kernel and host times (all micro-batches): where the
                  // row lies against the host / GPU crossover.
                  {"predicted_kernel_s", r.predicted_parts.kernel_s()},
                  {"predicted_host_s", r.predicted_parts.host_s()}});
    }
    if (r.has_memory()) {
      row.update({{"peak_bytes", r.measured_bytes}, {"predicted_peak_bytes", r.predicted_bytes}});
    }
    rows.push_back(row);
  }
  const double time_mape = Mape(time_pairs), memory_mape = Mape(memory_pairs);
  std::printf("\n");
  for (const auto& [mode, pairs] : time_by_mode) {
    std::printf("step time MAPE %-6s %5.1f %% over %zu runs\n", mode.c_str(), 100 * Mape(pairs),
                pairs.size());
  }
  for (const auto& [mode, pairs] : memory_by_mode) {
    std::printf("peak memory MAPE %-6s %5.1f %% over %zu runs\n", mode.c_str(), 100 * Mape(pairs),
                pairs.size());
  }
  const bool time_ok = !time_pairs.empty() && time_mape <= step_time_target;
  const bool memory_ok = !memory_pairs.empty() && memory_mape <= kMemoryMapeTarget;
  std::printf("STEP TIME   MAPE %5.1f %% over %zu runs (target <= %.0f %%): %s\n", 100 * time_mape,
              time_pairs.size(), 100 * step_time_target, time_ok ? "met" : "MISSED");
  std::printf("PEAK MEMORY MAPE %5.1f %% over %zu runs (target <= %.0f %%): %s\n\n",
              100 * memory_mape, memory_pairs.size(), 100 * kMemoryMapeTarget,
              memory_ok ? "met" : "MISSED");

  // 2. The tuner's pick per workload among the measured configurations: the
  // lowest predicted cost among those it predicts to fit, against the lowest
  // measured cost (GPU-seconds per sample).
  std::map<std::string, std::vector<const Run*>> by_model;
  for (const Run& r : runs) {
    if (r.has_time()) by_model[r.model].push_back(&r);
  }
  bool picks_ok = true;
  nlohmann::json picks = nlohmann::json::array();
  std::map<std::string, const Run*> picked;
  for (const auto& [model, candidates] : by_model) {
    const Run* best = nullptr;
    const Run* pick = nullptr;
    for (const Run* r : candidates) {
      if (best == nullptr || MeasuredCostPerSample(*r) < MeasuredCostPerSample(*best)) best = r;
      if (r->predicted_total_bytes > static_cast<double>(hw->memory_bytes)) continue;
      if (pick == nullptr || r->predicted_cost < pick->predicted_cost) pick = r;
    }
    if (pick == nullptr) {
      std::printf("pick %-9s: the tuner predicts none of the %zu measured configurations fits\n",
                  model.c_str(), candidates.size());
      picks_ok = false;
      continue;
    }
    picked[model] = pick;
    const double ratio = MeasuredCostPerSample(*pick) / MeasuredCostPerSample(*best);
    const bool ok = ratio <= 1 + kPickWithin;
    picks_ok = picks_ok && ok;
    std::printf(
        "pick %-9s: tuner %-18s measured %.3f ms GPU/sample; cheapest measured %-18s %.3f ms: "
        "%.3fx %s\n",
        model.c_str(), ConfigLabel(*pick).c_str(), 1e3 * MeasuredCostPerSample(*pick),
        ConfigLabel(*best).c_str(), 1e3 * MeasuredCostPerSample(*best), ratio,
        ok ? "ok" : "MISSED");
    picks.push_back({{"model", model},
                     {"pick", ConfigLabel(*pick)},
                     {"cheapest", ConfigLabel(*best)},
                     {"cost_ratio", ratio}});
  }
  std::printf("PICKS within %.0f %% of the cheapest measured: %s\n\n", 100 * kPickWithin,
              picks_ok ? "met" : "MISSED");

  // 3. Learning from one run: the tuner's pick of each workload runs and is
  // reported; the daemon's correction is fitted from it as the daemon fits it
  // (tuner/step_time_correction.h: the factor on the component that set the
  // pick's step, in the pick's mode) and then predicts the workload's
  // neighbouring configurations: at most one doubling away in micro-batch and
  // in GPUs. Only those of the pick's mode can move; the rest stay as predicted.
  auto neighbours = [](const Configuration& a, const Configuration& b) {
    return std::abs(std::log2(double(a.micro_batch) / b.micro_batch)) <= 1 &&
           std::abs(std::log2(double(a.TotalGpus()) / b.TotalGpus())) <= 1;
  };
  std::vector<std::pair<double, double>> before, after, all_before, all_after, same_before,
      same_after;
  // Each other configuration's step time after its model's pick was learned,
  // and whether it is a neighbour of that pick (--json's rows).
  std::map<const Run*, std::pair<double, bool>> learned;
  for (const auto& [model, pick] : picked) {
    const modeling::Outcome outcome = tuner::ReportedOutcome(
        pick->config, pick->predicted_parts, pick->measured_s / pick->predicted_s);
    auto correction = modeling::ComponentCorrection::Fit(std::span(&outcome, 1));
    if (!correction.ok()) {
      std::fprintf(stderr, "xdeep_validate: correction for %s: %s\n", model.c_str(),
                   std::string(correction.status().message()).c_str());
      return 2;
    }
    std::vector<std::pair<double, double>> b, a;
    size_t same_mode = 0;
    for (const Run* r : by_model[model]) {
      if (r == pick) continue;
      const std::pair<double, double> raw{r->measured_s, r->predicted_s};
      const std::pair<double, double> corrected{
          r->measured_s,
          tuner::CorrectedStepTime(*correction, r->config, r->predicted_parts).total_s};
      all_before.push_back(raw);
      all_after.push_back(corrected);
      learned[r] = {corrected.second, neighbours(r->config, pick->config)};
      if (!neighbours(r->config, pick->config)) continue;
      b.push_back(raw);
      a.push_back(corrected);
      if (outcome.mode == tuner::LearningMode(r->config)) {
        ++same_mode;
        same_before.push_back(raw);
        same_after.push_back(corrected);
      }
    }
    std::printf(
        "learn %-9s from %-18s (%s, factor %.3f on its %s): %2zu neighbours, %zu in its mode, "
        "step time MAPE %5.1f %% -> %5.1f %%\n",
        model.c_str(), ConfigLabel(*pick).c_str(), outcome.mode.c_str(),
        outcome.measured / outcome.predicted,
        std::string(modeling::StepComponentName(outcome.component)).c_str(), b.size(), same_mode,
        100 * Mape(b), 100 * Mape(a));
    before.insert(before.end(), b.begin(), b.end());
    after.insert(after.end(), a.begin(), a.end());
  }
  std::printf("(every other configuration of the workloads: %.1f %% before, %.1f %% after)\n",
              100 * Mape(all_before), 100 * Mape(all_after));
  std::printf("(neighbours in the pick's mode: %zu, step time MAPE %.1f %% before, %.1f %% after)\n",
              same_before.size(), 100 * Mape(same_before), 100 * Mape(same_after));
  const bool learn_ok = !before.empty() && Mape(after) < Mape(before);
  std::printf(
      "LEARNING: neighbours' step time MAPE %.1f %% before, %.1f %% after one reported run: %s\n",
      100 * Mape(before), 100 * Mape(after),
      learn_ok            ? "improved"
      : same_before.empty() ? "NOT IMPROVED (no neighbour in a pick's mode: nothing it measured)"
                            : "NOT IMPROVED");

  if (!json_out.empty()) {
    for (size_t i = 0; i < runs.size(); ++i) {
      for (const auto& [model, pick] : picked) {
        if (pick == &runs[i]) rows[i]["pick"] = true;
      }
      if (auto it = learned.find(&runs[i]); it != learned.end()) {
        rows[i]["learned_step_s"] = it->second.first;
        rows[i]["neighbour"] = it->second.second;
      }
    }
    const nlohmann::json doc = {{"schema", "xdeep.validation/1"},
                                {"profile", hw->Label()},
                                {"runs", rows},
                                {"step_time_mape", time_mape},
                                {"peak_memory_mape", memory_mape},
                                {"picks", picks},
                                {"learning",
                                 {{"neighbours_mape_before", Mape(before)},
                                  {"neighbours_mape_after", Mape(after)},
                                  {"all_mape_before", Mape(all_before)},
                                  {"all_mape_after", Mape(all_after)},
                                  {"same_mode_neighbours", same_before.size()},
                                  {"same_mode_mape_before", Mape(same_before)},
                                  {"same_mode_mape_after", Mape(same_after)}}}};
    if (absl::Status st = profiler::WriteFileAtomically(json_out, doc.dump(1) + "\n"); !st.ok()) {
      std::fprintf(stderr, "xdeep_validate: %s\n", std::string(st.message()).c_str());
      return 2;
    }
  }
  if (!check) return 0;
  return (time_ok || !targets.step_time) && (memory_ok || !targets.memory) &&
                 (picks_ok || !targets.picks) && (learn_ok || !targets.learning)
             ? 0
             : 1;
}

}  // namespace
}  // namespace xdeep::validate

int main(int argc, char** argv) {
  CLI::App app{"xdeep_validate: the tuner's predictions against real PyTorch training"};
  app.require_subcommand(1);
  std::string models = "gpt-125m,gpt-350m,gpt-760m,gpt-1.3b,resnet50", micro_batches = "1,2,4,8,16",
              out;
  auto* shapes = app.add_subcommand("shapes", "GEMM shapes of the workloads, for xdeep-probe");
  shapes->add_option("--models", models, "workload presets, comma-separated");
  shapes->add_option("--micro-batches", micro_batches, "comma-separated");
  shapes->add_option("--out", out, "xdeep.gemm_shapes/1 file")->required();
  std::string workloads;
  shapes->add_option("--workloads", workloads, "folder of workload files named <model>.toml")
      ->check(CLI::ExistingDirectory);
  std::string heuristic_out;
  int gpus_per_node = 1;
  shapes->add_option("--heuristic-out", heuristic_out,
                     "also the GEMMs the daemon's probe job asks cuBLASLt's heuristic about "
                     "(xdeep-probe compute --suite gemm-heuristic)");
  shapes->add_option("--gpus-per-node", gpus_per_node, "with --heuristic-out: the node's GPUs")
      ->check(CLI::Range(1, 64));
  std::string fit_report, check_file;
  double median_target = 0.05, p95_target = 0.15;
  auto* gemm_check = app.add_subcommand("gemm-check", "the GEMM model against cuBLAS times");
  gemm_check->add_option("--fit", fit_report, "probe report whose GEMM points the model fits")
      ->required()
      ->check(CLI::ExistingFile);
  gemm_check->add_option("--check", check_file, "gemm_shapes.py time result")
      ->required()
      ->check(CLI::ExistingFile);
  gemm_check->add_option("--median", median_target, "largest median relative error accepted");
  gemm_check->add_option("--p95", p95_target, "largest 95th-percentile error accepted");
  std::string algos_file;
  gemm_check
      ->add_option("--algos", algos_file,
                   "xdeep-probe report with gemm_algos (--suite gemm-heuristic): the kernel "
                   "cuBLAS picks for the check's shapes, nothing timed")
      ->check(CLI::ExistingFile);
  int worst = 0;
  gemm_check->add_option("--worst", worst, "also list the N shapes the model misses most");
  std::string profile, json_out;
  std::vector<std::string> run_files;
  bool check = false;
  auto* compare = app.add_subcommand("compare", "predicted vs measured");
  compare
      ->add_option("--profile", profile,
                   "probe report (xdeep.probe_report/1), or builtin:NAME (e.g. builtin:h200-sxm)")
      ->required();
  compare->add_option("--runs", run_files, "measure_pytorch.py result files")
      ->required()
      ->check(CLI::ExistingFile);
  compare->add_option("--json", json_out, "also write the comparison here");
  compare->add_option("--workloads", workloads, "folder of workload files named <model>.toml")
      ->check(CLI::ExistingDirectory);
  compare->add_flag("--check", check, "exit 1 when a target is missed");
  std::vector<std::string> target_names;
  compare
      ->add_option("--targets", target_names,
                   "the targets --check holds (default all): step-time, memory, picks, learning")
      ->delimiter(',')
      ->check(CLI::IsMember({"step-time", "memory", "picks", "learning"}));
  bool breakdown = false;
  double step_time_target = xdeep::validate::kStepTimeMapeTarget;
  compare
      ->add_option("--step-time-target", step_time_target,
                   "step-time MAPE that --check accepts (issue 7: 0.07)")
      ->check(CLI::Range(0.0, 10.0));
  compare->add_flag("--breakdown", breakdown,
                    "also print the predicted parts of each step and the measured kernel times");
  CLI11_PARSE(app, argc, argv);
  xdeep::validate::WorkloadDir() = workloads;
  if (gemm_check->parsed()) {
    return xdeep::validate::GemmCheck(fit_report, check_file, algos_file, median_target,
                                      p95_target, worst);
  }
  if (shapes->parsed()) {
    std::vector<int> mbs;
    for (const std::string& s : xdeep::validate::Split(micro_batches)) {
      try {
        mbs.push_back(std::stoi(s));
      } catch (const std::exception&) {
        std::fprintf(stderr, "xdeep_validate: --micro-batches: '%s' is not a number\n", s.c_str());
        return 2;
      }
      if (mbs.back() < 1 || mbs.back() > 4096) {
        std::fprintf(stderr, "xdeep_validate: --micro-batches: %s is outside 1..4096\n", s.c_str());
        return 2;
      }
    }
    return xdeep::validate::Shapes(xdeep::validate::Split(models), mbs, out, heuristic_out,
                                   gpus_per_node);
  }
  xdeep::validate::Targets targets;
  if (!target_names.empty()) {
    auto named = [&](const char* t) {
      return std::find(target_names.begin(), target_names.end(), t) != target_names.end();
    };
    targets = {named("step-time"), named("memory"), named("picks"), named("learning")};
  }
  return xdeep::validate::Compare(profile, run_files, json_out, check, targets, breakdown,
                                  step_time_target);
}
