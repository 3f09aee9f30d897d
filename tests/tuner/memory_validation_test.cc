// The memory model against peak memory measured in real PyTorch runs
// (bench/memory_validation/measure_pytorch.py; data and GPU in
// bench/memory_validation/data/). Every measured configuration must be
// predicted within 15 % of torch.cuda.max_memory_allocated (for DDP, the
// larger of the two ranks').
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tuner/test_util.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

nlohmann::json Load(const std::string& name) {
  return nlohmann::json::parse(testing::ReadTextFile(std::string(XDEEP_SOURCE_DIR) +
                                                     "/bench/memory_validation/data/" + name),
                               nullptr, /*allow_exceptions=*/false);
}

struct Row {
  std::string model, mode;
  int world, micro_batch, grad_accum;
  bool recompute;
  double measured, predicted;
};

// Configuration the script ran, as the tuner describes it.
Configuration ConfigFor(const nlohmann::json& run) {
  Configuration c;
  const std::string mode = run.value("mode", "single");
  c.gpus_per_node = run.value("world_size", 1);
  c.dp = c.gpus_per_node;
  c.micro_batch = run.value("micro_batch", 1);
  c.grad_accum = run.value("grad_accum", 1);
  c.recompute = run.value("recompute", false);
  c.global_batch = int64_t{c.dp} * c.micro_batch * c.grad_accum;
  c.sharding = mode == "fsdp" ? Sharding::kZero3 : Sharding::kNone;
  return c;
}

TEST(MemoryValidationTest, PeakAllocatedWithin15PercentOfPyTorch) {
  auto hw = BuiltinHardwareProfile("h200-sxm");
  ASSERT_TRUE(hw.ok());
  std::vector<Row> rows;
  // DDP comes only from ddp_fresh.json (one torchrun pair per configuration):
  // ddp.json and extra.json ran several DDP configurations in one process, and
  // each one's Reducer buckets leaked into the next one's baseline, so their
  // DDP peaks are off by 0 to 8 bytes per parameter.
  for (const char* file :
       {"single.json", "single_fresh.json", "ddp_fresh.json", "fsdp.json", "extra.json"}) {
    const nlohmann::json doc = Load(file);
    if (doc.is_discarded()) {
      ASSERT_STRNE(file, "single.json") << "measurements missing";
      ASSERT_STRNE(file, "ddp_fresh.json") << "measurements missing";
      continue;
    }
    const bool fresh_ddp = std::string(file) == "ddp_fresh.json";
    const bool fresh = std::string(file).find("_fresh") != std::string::npos;
    std::set<std::pair<std::string, int>> processes_seen;
    for (const nlohmann::json& run : doc["runs"]) {
      if ((run.value("mode", "") == "ddp") != fresh_ddp) continue;
      // Skipped, failed, or polluted by the previous configuration's memory
      // (the script subtracts what was allocated before the model was built;
      // a negative steady state means that baseline was not yet freed).
      if (!run.contains("peak_allocated_bytes") || run.contains("error") ||
          run.value("steady_allocated_bytes", int64_t{0}) <= 0) {
        continue;
      }
      auto w = PresetWorkload(run["model"].get<std::string>());
      ASSERT_TRUE(w.ok()) << w.status();
      w->optimizer = OptimizerKind::kAdamW;
      w->precision = Precision::kBf16Autocast;
      // The script gathers GPT units in bf16 (MixedPrecisionPolicy) but keeps
      // ResNet-50 in fp32 under FSDP (BatchNorm), autocast casting each layer.
      w->fsdp_16bit_params = run["model"] != "resnet50";
      const Configuration c = ConfigFor(run);
      ASSERT_EQ(StructuralProblem(*w, c), "");
      const MemoryBreakdown m = EstimateMemory(*w, *hw, c);
      // The script subtracts what was allocated before the model was built.
      // In the files that ran many configurations in one process (one
      // process per mode and accumulation count), that baseline already holds
      // the cuBLAS workspaces from the process's first configuration on.
      const bool first_in_process =
          processes_seen.insert({run["mode"].get<std::string>(), c.grad_accum}).second;
      const double predicted = m.PeakAllocated() - (fresh || first_in_process ? 0 : m.workspace);
      rows.push_back({run["model"], run["mode"], c.dp, c.micro_batch, c.grad_accum, c.recompute,
                      run["peak_allocated_bytes"].get<double>(), predicted});
      EXPECT_EQ(w->Parameters(), run["params"].get<int64_t>()) << run["model"];
    }
  }
  ASSERT_GE(rows.size(), 40u) << "too few measurements to validate against";
  double worst = 0, sum = 0, ddp_sum = 0;
  int ddp_n = 0;
  for (const Row& r : rows) {
    const double err = (r.predicted - r.measured) / r.measured;
    worst = std::max(worst, std::abs(err));
    sum += std::abs(err);
    std::printf(
        "%-9s %-6s x%d mb%-3d ga%-2d rc%d measured %7.2f GiB predicted %7.2f GiB %+6.1f%%\n",
        r.model.c_str(), r.mode.c_str(), r.world, r.micro_batch, r.grad_accum, r.recompute,
        r.measured / (1 << 30), r.predicted / (1 << 30), 100 * err);
    EXPECT_LE(std::abs(err), 0.15)
        << r.model << " " << r.mode << " mb" << r.micro_batch << " ga" << r.grad_accum;
    if (r.mode == "ddp") {
      ddp_sum += std::abs(err);
      ++ddp_n;
    }
  }
  ASSERT_GE(ddp_n, 25) << "ddp_fresh.json lost configurations";
  std::printf("DDP: %d configurations, mean |error| %.1f %%\n", ddp_n, 100 * ddp_sum / ddp_n);
  std::printf("%zu configurations, mean |error| %.1f %%, worst %.1f %%\n", rows.size(),
              100 * sum / rows.size(), 100 * worst);
}

// Step time is the accuracy issue's subject; here it is printed against the
// same runs and held to a loose bound so regressions show. Known gap: FSDP2's
// fixed per-step cost at small micro-batches (DTensor optimizer, per-unit
// copy-in/out) is not modelled yet.
TEST(MemoryValidationTest, StepTimeAgainstPyTorchSingleGpu) {
  auto hw = BuiltinHardwareProfile("h200-sxm");  // the GPU the data came from
  ASSERT_TRUE(hw.ok());
  std::vector<double> errors;
  for (const char* file : {"single.json", "ddp.json", "fsdp.json"}) {
    const nlohmann::json doc = Load(file);
    ASSERT_FALSE(doc.is_discarded()) << file;
    for (const nlohmann::json& run : doc["runs"]) {
      if (!run.contains("step_time_median_s") || run.contains("error")) continue;
      auto w = PresetWorkload(run["model"].get<std::string>());
      ASSERT_TRUE(w.ok());
      w->optimizer = OptimizerKind::kAdamW;
      w->fsdp_16bit_params = run["model"] != "resnet50";
      const Configuration c = ConfigFor(run);
      const double predicted = EstimateStepTime(*w, *hw, c).total_s;
      const double measured = run["step_time_median_s"].get<double>();
      const double err = (predicted - measured) / measured;
      std::printf("%-9s %-6s mb%-3d step measured %7.1f ms predicted %7.1f ms %+5.0f%%\n",
                  run["model"].get<std::string>().c_str(), run["mode"].get<std::string>().c_str(),
                  c.micro_batch, measured * 1e3, predicted * 1e3, 100 * err);
      if (std::string(file) == "single.json") errors.push_back(std::abs(err));
    }
  }
  ASSERT_GE(errors.size(), 20u);
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  std::printf("single GPU: median |error| %.0f %%\n", 100 * median);
  EXPECT_LT(median, 0.35);
}

// The fragmentation margin (MemoryBreakdown::margin, a share of the card)
// against what PyTorch's caching allocator reserved beyond the tensors in the
// measured runs that recorded both peaks: max_memory_reserved -
// max_memory_allocated, one process per configuration, single GPU, DDP and
// FSDP2 on 2x H100 and 2x H200 (calibration data: the memory model was built on
// these runs). The excess is an upper bound on what a run needs: the allocator
// frees its unsplit cached blocks and retries before it reports out of memory.
// bench/memory_validation/allocator_excess.py prints the same figures.
TEST(MemoryValidationTest, FragmentationMarginCoversTheMeasuredAllocatorExcess) {
  // The script's selection: every committed measurement file whose runs each
  // had a process of their own (meta.processes "per configuration").
  const std::filesystem::path bench = std::filesystem::path(XDEEP_SOURCE_DIR) / "bench";
  std::vector<std::filesystem::path> dirs = {bench / "memory_validation/data"};
  for (const char* set : {"validate/data/calibration", "validate/data/checks"}) {
    for (const auto& entry : std::filesystem::directory_iterator(bench / set)) {
      if (entry.is_directory()) dirs.push_back(entry.path());
    }
  }
  std::vector<std::string> files;
  for (const auto& d : dirs) {
    for (const auto& entry : std::filesystem::directory_iterator(d)) {
      if (entry.path().extension() == ".json") files.push_back(entry.path().string());
    }
  }
  // One margin share for both cards: the model's margin over its profile's memory.
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  Configuration one;
  one.global_batch = 1;
  const double share = EstimateMemory(*w, *hw, one).margin / static_cast<double>(hw->memory_bytes);
  // A configuration copied into several data folders counts once.
  std::set<std::tuple<std::string, std::string, int, int, bool, double, double, double>> seen;
  std::vector<double> excess_share;
  for (const std::string& file : files) {
    const nlohmann::json doc = nlohmann::json::parse(testing::ReadTextFile(file), nullptr,
                                                     /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array()) continue;
    const nlohmann::json meta = doc.value("meta", nlohmann::json::object());
    if (meta.value("processes", "").find("per configuration") == std::string::npos) continue;
    const double card = meta.value("gpu_memory_bytes", 0.0);
    ASSERT_GT(card, 0) << file;
    for (const nlohmann::json& run : doc["runs"]) {
      if (!run.contains("peak_reserved_bytes") || run.contains("error")) continue;
      const nlohmann::json ranks =
          run.contains("ranks") ? run["ranks"] : nlohmann::json::array({run});
      for (const nlohmann::json& rank : ranks) {
        const double allocated =
            rank.value("peak_allocated_bytes", 0.0) + run.value("held_before_bytes", 0.0);
        const double reserved = rank.value("peak_reserved_bytes", 0.0);
        if (allocated <= 0 || reserved <= 0) continue;
        if (!seen.emplace(run.value("model", ""), run.value("mode", meta.value("mode", "")),
                          run.value("micro_batch", 0), run.value("grad_accum", 1),
                          run.value("recompute", false), allocated, reserved, card)
                 .second) {
          continue;
        }
        excess_share.push_back((reserved - allocated) / card);
      }
    }
  }
  ASSERT_GE(excess_share.size(), 150u);
  std::sort(excess_share.begin(), excess_share.end());
  const double p90 = excess_share[excess_share.size() * 9 / 10];
  const auto over =
      excess_share.end() - std::upper_bound(excess_share.begin(), excess_share.end(), share);
  std::printf(
      "margin %.1f %% of the card; measured excess: p90 %.1f %%, max %.1f %%, %td of %zu over\n",
      100 * share, 100 * p90, 100 * excess_share.back(), over, excess_share.size());
  EXPECT_GE(share, p90);                                      // covers nine runs in ten
  EXPECT_LE(over, std::ptrdiff_t(excess_share.size() / 20));  // misses at most one in twenty
  EXPECT_LE(excess_share.back(), 1.5 * share);                // and none by half as much again
}

}  // namespace
}  // namespace xdeep::tuner
