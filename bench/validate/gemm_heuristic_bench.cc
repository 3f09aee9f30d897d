// gemm_heuristic_bench: what asking cuBLASLt's heuristic in the daemon's probe job
// costs on the daemon's side (issue 19, item 2): how many GEMMs the job asks about per
// node size (tuner::ProbeShapesFor without a workload: the presets' list), the time
// to ingest a report holding a timed set and an answer for each of them, and
// GemmModel::Seconds over those shapes with the kernel table and without it.
//   gemm_heuristic_bench TIMED_REPORT.json
// (for instance bench/validate/data/heldout/2026-11-27_h200x1_gemm_seed6607/gemm_fit.json;
// every answer names one kernel, so the figures are the table's, not cuBLAS's choices).
#include <chrono>
#include <cstdio>
#include <string>

#include "nlohmann/json.hpp"
#include "profiler/report.h"
#include "profiler/shapes.h"
#include "tuner/gemm_kernel_table.h"
#include "tuner/hardware_profile.h"
#include "tuner/probe_shapes.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

xdeep::tuner::GemmLayout LayoutOf(const std::string& pass) {
  using xdeep::tuner::GemmLayout;
  return pass == "fwd"     ? GemmLayout::kForward
         : pass == "wgrad" ? GemmLayout::kWgrad
                           : GemmLayout::kDgrad;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xdeep;
  if (argc != 2) {
    std::fprintf(stderr, "usage: gemm_heuristic_bench TIMED_REPORT.json\n");
    return 2;
  }
  for (int gpus : {1, 2, 4, 8}) {
    const auto start = Clock::now();
    const tuner::ProbeShapeFiles files = tuner::ProbeShapesFor(nullptr, gpus);
    const double ms = Ms(start);
    std::printf("%d GPUs a node: %zu GEMMs asked (%.1f ms to list, %zu bytes)\n", gpus,
                nlohmann::json::parse(files.heuristic)["gemms"].size(), ms, files.heuristic.size());
  }
  absl::StatusOr<profiler::Report> timed = profiler::ReadReport(argv[1]);
  if (!timed.ok()) {
    std::fprintf(stderr, "gemm_heuristic_bench: %s\n",
                 std::string(timed.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<profiler::ShapeSet> asked =
      profiler::ParseShapesJson(tuner::ProbeShapesFor(nullptr, 8).heuristic);
  if (!asked.ok()) return 2;
  profiler::Report answers = profiler::NewReport();
  answers.gpu = timed->gpu;
  const profiler::GemmKernel kernel{.algo = 66, .tile_id = 24, .tile_m = 128, .tile_n = 256};
  for (const profiler::GemmSpec& s : asked->gemms) {
    profiler::GemmEntry e;
    e.m = s.m, e.n = s.n, e.k = s.k;
    e.dtype = std::string(profiler::DTypeName(s.dtype.value_or(profiler::DType::kBf16)));
    e.pass = s.pass;
    e.kernel = kernel;
    answers.gemm_algos.push_back(e);
  }
  absl::StatusOr<profiler::Report> merged = profiler::MergeReports({*timed, answers});
  if (!merged.ok()) return 2;
  const std::string bare_text = profiler::ToJson(*timed).dump();
  const std::string text = profiler::ToJson(*merged).dump();
  auto start = Clock::now();
  auto bare = tuner::HardwareProfileFromProbeReport(bare_text, "timed");
  const double bare_ms = Ms(start);
  start = Clock::now();
  auto hw = tuner::HardwareProfileFromProbeReport(text, "timed+answers");
  const double hw_ms = Ms(start);
  if (!bare.ok() || !hw.ok() || hw->gemm_kernels == nullptr) {
    std::fprintf(stderr, "gemm_heuristic_bench: the report gives no kernel table\n");
    return 2;
  }
  std::printf("ingest: %zu timed points %.0f ms; with %zu answers %.0f ms (%zu kernels known)\n",
              bare->gemm.size(), bare_ms, answers.gemm_algos.size(), hw_ms,
              hw->gemm_kernels->size());
  for (const auto* profile : {&*bare, &*hw}) {
    const tuner::GemmModel model(*profile, tuner::DType::kBf16);
    constexpr int kCalls = 2'000'000;
    double sink = 0;
    start = Clock::now();
    for (int i = 0; i < kCalls; ++i) {
      const profiler::GemmSpec& s = asked->gemms[i % asked->gemms.size()];
      sink += model.Seconds(s.m, s.n, s.k, LayoutOf(s.pass));
    }
    std::printf("GemmModel::Seconds %s: %.0f ns a call over the asked shapes (sum %.3g s)\n",
                profile == &*hw ? "with the table" : "timed set only", Ms(start) * 1e6 / kCalls,
                sink);
  }
  return 0;
}
