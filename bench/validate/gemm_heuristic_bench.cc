// gemm_heuristic_bench: what asking cuBLASLt's heuristic in the daemon's probe job
// costs on the daemon's side (issue 19, item 2): how many GEMMs the job asks about per
// node size (tuner::ProbeShapesFor without a workload: the presets' list), the time
// to ingest a report holding a timed set and an answer for each of them, and
// GemmModel::Seconds over those shapes with the kernel table and without it; the
// answers kept across probes (GemmAnswerBook: merge, save, load, install) up to
// the daemon's cap, and the decision path's check that a workload's GEMMs are
// answered (HeuristicCoverage: first time, then cached).
//   gemm_heuristic_bench TIMED_REPORT.json [SCRATCH_DIR]
// (for instance bench/validate/data/calibration/2026-11-27_h200x1_gemm_seed6607/gemm_fit.json;
// every answer names one kernel, so the figures are the table's, not cuBLAS's choices).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "daemon/heuristic_coverage.h"
#include "nlohmann/json.hpp"
#include "profiler/report.h"
#include "profiler/shapes.h"
#include "tuner/fingerprint.h"
#include "tuner/gemm_answer_book.h"
#include "tuner/gemm_kernel_table.h"
#include "tuner/hardware_profile.h"
#include "tuner/probe_shapes.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// One line saying what failed and what to do, and the exit status for it.
int Fail(const std::string& what, const std::string& fix) {
  std::fprintf(stderr, "gemm_heuristic_bench: %s (%s)\n", what.c_str(), fix.c_str());
  return 2;
}

// The GEMMs of a tuner::HeuristicGemmsJson document; "" (none) counts 0.
size_t GemmCount(const std::string& doc) {
  if (doc.empty()) return 0;
  const nlohmann::json parsed = nlohmann::json::parse(doc, nullptr, false);
  return parsed.is_object() && parsed.contains("gemms") ? parsed["gemms"].size() : 0;
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
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: gemm_heuristic_bench TIMED_REPORT.json [SCRATCH_DIR]\n");
    return 2;
  }
  for (int gpus : {1, 2, 4, 8}) {
    const auto start = Clock::now();
    const tuner::ProbeShapeFiles files = tuner::ProbeShapesFor(nullptr, gpus);
    const double ms = Ms(start);
    std::printf("%d GPUs a node: %zu GEMMs asked (%.1f ms to list, %zu bytes)\n", gpus,
                GemmCount(files.heuristic), ms, files.heuristic.size());
  }
  absl::StatusOr<profiler::Report> timed = profiler::ReadReport(argv[1]);
  if (!timed.ok()) {
    return Fail(std::string(timed.status().message()),
                "give a probe report with a timed GPU compute set, for instance "
                "bench/validate/data/calibration/2026-11-27_h200x1_gemm_seed6607/gemm_fit.json");
  }
  const std::string presets = tuner::ProbeShapesFor(nullptr, 8).heuristic;
  if (presets.empty()) {
    return Fail("the presets give no GEMM to ask the heuristic about",
                "tuner::PresetWorkloadNames lists no preset with GEMMs");
  }
  absl::StatusOr<profiler::ShapeSet> asked = profiler::ParseShapesJson(presets);
  if (!asked.ok()) {
    return Fail("xdeep-probe's shapes parser rejects the presets' list: " +
                    std::string(asked.status().message()),
                "tuner::HeuristicGemmsJson and profiler::ParseShapesJson disagree on the format");
  }
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
  if (!merged.ok()) {
    return Fail(
        "merging the answers into the timed report: " + std::string(merged.status().message()),
        "the report must be one GPU's xdeep.probe_report/1");
  }
  const std::string bare_text = profiler::ToJson(*timed).dump();
  const std::string text = profiler::ToJson(*merged).dump();
  auto start = Clock::now();
  auto bare = tuner::HardwareProfileFromProbeReport(bare_text, "timed");
  const double bare_ms = Ms(start);
  start = Clock::now();
  auto hw = tuner::HardwareProfileFromProbeReport(text, "timed+answers");
  const double hw_ms = Ms(start);
  if (!bare.ok() || !hw.ok() || hw->gemm_kernels == nullptr) {
    return Fail("the report gives no kernel table: " +
                    std::string((!bare.ok() ? bare.status() : hw.status()).message()),
                "the timed set must name the cuBLASLt kernel of each GEMM (xdeep-probe "
                "compute on a GPU)");
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
  // Answers kept across probes: the presets' plus made-up shapes up to n.
  const std::string scratch = argc == 3 ? argv[2] : std::filesystem::temp_directory_path().string();
  auto answered = tuner::HeuristicAnswersFromProbeReport(text, "timed+answers");
  if (!answered.ok()) {
    return Fail(
        "no heuristic answers in the merged report: " + std::string(answered.status().message()),
        "the report must record the GPU and its cuBLASLt / CUDA versions");
  }
  const std::string& key = answered->key;
  const std::string book_path = scratch + "/gemm_heuristic_bench-answers.json";
  for (size_t n :
       {hw->gemm_heuristic.size(), size_t{50000}, tuner::GemmAnswerBook::kDefaultMaxPerKey}) {
    std::vector<tuner::GemmPoint> points = hw->gemm_heuristic;
    for (int64_t m = 1; points.size() < n; ++m) {
      points.push_back({m * 8 + 3, 4099, 1027, tuner::DType::kBf16, 0.0,
                        tuner::GemmLayout::kForward, tuner::GemmKernel{66, 128, 256, 1}});
    }
    tuner::GemmAnswerBook book;
    start = Clock::now();
    book.Merge(key, points);
    const double merge_ms = Ms(start);
    start = Clock::now();
    if (absl::Status saved = book.Save(book_path); !saved.ok()) {
      return Fail("saving the answer book: " + std::string(saved.message()),
                  "give a writable SCRATCH_DIR");
    }
    const double save_ms = Ms(start);
    start = Clock::now();
    auto loaded = tuner::GemmAnswerBook::Load(book_path, tuner::GemmAnswerBook::kDefaultMaxPerKey);
    const double load_ms = Ms(start);
    if (!loaded.ok()) {
      return Fail("loading the answer book just saved: " + std::string(loaded.status().message()),
                  "tuner::GemmAnswerBook's Save and Load disagree");
    }
    tuner::HardwareProfile installed = *hw;
    start = Clock::now();
    tuner::SetHeuristicAnswers(&installed, loaded->Answers(key));
    const double install_ms = Ms(start);
    std::printf(
        "answer book %zu answers: merge %.0f ms, save %.0f ms (%ju bytes), load %.0f ms, "
        "install (answers + kernel table) %.0f ms\n",
        loaded->Size(key), merge_ms, save_ms,
        static_cast<uintmax_t>(std::filesystem::file_size(book_path)), load_ms, install_ms);
  }
  std::filesystem::remove(book_path);
  // The decision path's check, for a workload the presets do not cover.
  auto workload = tuner::PresetWorkload("gpt-1.3b");
  if (!workload.ok()) {
    return Fail(std::string(workload.status().message()),
                "the coverage check needs the gpt-1.3b preset");
  }
  workload->transformer.hidden = 1792;
  workload->transformer.ffn = 7168;
  tuner::BuildTransformerLayers(*workload);
  const std::string fingerprint = tuner::ModelFingerprint(*workload);
  const auto profile = std::make_shared<const tuner::HardwareProfile>(*hw);
  daemon::HeuristicCoverage coverage;
  start = Clock::now();
  auto gap = coverage.Check(profile, *workload, fingerprint, 8);
  const double first_ms = Ms(start);
  constexpr int kChecks = 100000;
  start = Clock::now();
  for (int i = 0; i < kChecks; ++i) gap = coverage.Check(profile, *workload, fingerprint, 8);
  std::printf("coverage check (%zu of %zu GEMMs unanswered): first %.2f ms, cached %.0f ns\n",
              gap ? gap->missing.size() : 0, gap ? gap->asked : 0, first_ms,
              Ms(start) * 1e6 / kChecks);
  return 0;
}
