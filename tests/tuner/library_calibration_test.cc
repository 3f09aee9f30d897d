// The step-time model against the library suite's committed runs
// (bench/validate/data/calibration/*library*, all calibration: each term
// below was changed after these measurements were seen). Each test predicts
// measured configurations from the run's own probe report and workload file,
// as `xdeep_validate compare --workloads bench/validate/workloads` does, and
// holds the error a term closed, so the term cannot go unnoticed.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tuner/test_util.h"
#include "tuner/hardware_profile.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

std::string Source(const std::string& relative) {
  return std::string(XDEEP_SOURCE_DIR) + "/" + relative;
}

// The run's merged probe reports (`file`: a folder's own merge where its README
// names one, as bench/validate/compare_all.py reads it).
HardwareProfile RunProfile(const std::string& folder, const std::string& file = "profile.json") {
  const std::string path = Source(folder + "/" + file);
  auto hw = HardwareProfileFromProbeReport(testing::ReadTextFile(path), path);
  EXPECT_TRUE(hw.ok()) << hw.status();
  return hw.ok() ? *hw : HardwareProfile{};
}

Workload SuiteWorkload(const std::string& model) {
  const std::string path = Source("bench/validate/workloads/" + model + ".toml");
  auto w = ParseWorkloadToml(testing::ReadTextFile(path), path);
  EXPECT_TRUE(w.ok()) << w.status();
  return w.ok() ? *w : Workload{};
}

// The measured median step of one single-GPU configuration (0: not measured).
double MeasuredSingleStep(const std::string& suite_file, const std::string& model, int mb) {
  const auto doc =
      nlohmann::json::parse(testing::ReadTextFile(Source(suite_file)), nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << suite_file;
  if (doc.is_discarded() || !doc.contains("runs")) return 0;
  for (const auto& run : doc["runs"]) {
    if (run.value("mode", "") == "single" && run.value("model", "") == model &&
        run.value("micro_batch", 0) == mb && run.contains("step_time_median_s") &&
        run["step_time_median_s"].is_number()) {
      return run["step_time_median_s"].get<double>();
    }
  }
  return 0;
}

double SingleGpuStep(const Workload& w, const HardwareProfile& hw, int mb) {
  StrategyModel model(w, hw);
  Configuration c;
  c.micro_batch = mb;
  c.global_batch = mb;
  return model.Time(c).total_s;
}

// transformers' GPT-2 runs "gelu_new" in eager ops; under autocast pow runs in
// fp32 and the chain after it too, so its kernels move 72 bytes an element
// forward and 112 backward beyond GELU's (tuner/workload.cc). At micro-batch 16
// the step is GPU-bound and was under-predicted by 14-17 % on all four runs
// that trained GPT-2 small and medium, in every mode, where OPT-125m (the same
// shape with ReLU) was -5 %. With the traffic counted: within 10 %, and the
// term adds what it should (the same workload in bf16-mixed, where nothing is
// promoted to fp32, keeps the old count).
TEST(LibraryCalibrationTest, Gpt2GeluNewUnderAutocastMovesFp32Traffic) {
  const std::vector<std::string> runs = {
      "bench/validate/data/calibration/2026-11-26_h100x2_library_heldout",
      "bench/validate/data/calibration/2026-11-26_h100x2_library_heldout2",
      "bench/validate/data/calibration/2026-11-27_h100x2_library_heldout",
      "bench/validate/data/calibration/2026-11-27_h100x2_library_heldout2"};
  int checked = 0;
  for (const std::string& folder : runs) {
    const HardwareProfile hw = RunProfile(folder);
    for (const char* model : {"hf-gpt2", "hf-gpt2-medium"}) {
      const double measured = MeasuredSingleStep(folder + "/suite_single_lm.json", model, 16);
      ASSERT_GT(measured, 0) << folder << " " << model;
      const double predicted = SingleGpuStep(SuiteWorkload(model), hw, 16);
      const double error = predicted / measured - 1;
      std::printf("%s %s mb16: measured %.1f ms, predicted %.1f (%+.1f %%)\n", folder.c_str(),
                  model, measured * 1e3, predicted * 1e3, 100 * error);
      EXPECT_LT(std::abs(error), 0.10) << folder << " " << model;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8);

  // The term itself: gelu_new's extra traffic under autocast is 32 + 32
  // bytes an element of the MLP's inner width per token, and none without
  // autocast or under torch.compile.
  Workload gpt2 = SuiteWorkload("hf-gpt2");
  Workload gelu = gpt2;
  gelu.settings.activation = Activation::kGelu;
  BuildTransformerLayers(gpt2);
  BuildTransformerLayers(gelu);
  const LayerCost& with = gpt2.layers[1];
  const LayerCost& without = gelu.layers[1];
  const double per_element = static_cast<double>(gpt2.transformer.seq_len) * gpt2.transformer.ffn;
  EXPECT_DOUBLE_EQ(with.extra_traffic_fwd_bytes - without.extra_traffic_fwd_bytes,
                   32 * per_element);
  EXPECT_DOUBLE_EQ(with.extra_traffic_bwd_bytes - without.extra_traffic_bwd_bytes,
                   32 * per_element);
  Workload mixed = gpt2, mixed_gelu = gelu;
  mixed.precision = mixed_gelu.precision = Precision::kBf16Mixed;
  BuildTransformerLayers(mixed);
  BuildTransformerLayers(mixed_gelu);
  EXPECT_DOUBLE_EQ(mixed.layers[1].extra_traffic_fwd_bytes,
                   mixed_gelu.layers[1].extra_traffic_fwd_bytes);
  // torch.compile fuses the chain into one kernel, as GELU's.
  Workload compiled = gpt2, compiled_gelu = gelu;
  compiled.settings.compile = compiled_gelu.settings.compile = true;
  BuildTransformerLayers(compiled);
  BuildTransformerLayers(compiled_gelu);
  EXPECT_DOUBLE_EQ(compiled.layers[1].extra_traffic_bwd_bytes,
                   compiled_gelu.layers[1].extra_traffic_bwd_bytes);
}

// torchvision's VGG-16 has no BatchNorm: its convs add their bias after
// cuDNN's call and run an in-place ReLU (4 passes over the output forward,
// 4 backward: the ReLU's gradient 3, the bias gradient 1), and its max-pools
// move their input, output and int64 indices once each way; the model had
// counted a transformer's 8 passes backward and 12 over the indices. Trained
// GPU-bound on 2x H100 (run 7, single GPU), VGG-16 was over-predicted by
// +16 % at micro-batch 32 and +37 % at 256; now within 20 % at both.
TEST(LibraryCalibrationTest, VggConvsWithoutBatchNormAndMaxPoolsMoveWhatTheirKernelsMove) {
  const std::string folder = "bench/validate/data/calibration/2026-11-27_h100x2_library_run7";
  const HardwareProfile hw = RunProfile(folder);
  const Workload vgg = SuiteWorkload("tv-vgg16");
  for (int mb : {32, 256}) {
    const double measured = MeasuredSingleStep(folder + "/suite_single_vision.json", "tv-vgg16", mb);
    ASSERT_GT(measured, 0) << mb;
    const double error = SingleGpuStep(vgg, hw, mb) / measured - 1;
    std::printf("VGG-16 mb%d: measured %.1f ms, %+.1f %%\n", mb, measured * 1e3, 100 * error);
    EXPECT_LT(std::abs(error), 0.20) << mb;
  }
  // conv2 (64 -> 64 at 224 pixels, after conv1) and pool1 (2x2, stride 2).
  const LayerCost& conv2 = vgg.layers[1];
  const LayerCost& pool1 = vgg.layers[2];
  ASSERT_EQ(conv2.name, "conv2");
  ASSERT_EQ(pool1.name, "pool1");
  const double out = 64.0 * 224 * 224, a = 2;
  EXPECT_DOUBLE_EQ(ElementwiseBytes(conv2).fwd, 4 * out * a);
  EXPECT_DOUBLE_EQ(ElementwiseBytes(conv2).bwd, 4 * out * a);
  const double pooled = 64.0 * 112 * 112;
  EXPECT_DOUBLE_EQ(ElementwiseBytes(pool1).fwd, out * a + pooled * (a + 8));
  EXPECT_DOUBLE_EQ(ElementwiseBytes(pool1).bwd, out * a + pooled * (a + 8));
}

// DDP's reducer on the host, from the framework probe's DDP pass on two ranks
// (the ranks training runs on: each bucket's all-reduce a real NCCL call the
// ranks meet at) where the one-rank pass had been read: on the library runs'
// two-rank probes the two-rank pass added 0.7-2.5x the one-rank pass's reducer
// time per network, median 1.23x (ResNet-50 on 2x H200, run 10: 7.6 against
// 6.6 ms). Over the ten runs' 60 DDP configurations the step's error was
// 10.2 % with the one-rank figure, 8.8 % with this one; ResNet-26's DDP steps
// on 2x H200, 24-28 % under, move up (-16 / -21 %).
TEST(LibraryCalibrationTest, DdpReducerHostTimeFromTheTwoRankPass) {
  const std::vector<std::string> runs = {
      "2026-11-27_h100x2_library_heldout", "2026-11-27_h100x2_library_heldout3",
      "2026-11-27_h100x2_library_heldout4", "2026-11-27_h100x2_library_run5",
      "2026-11-27_h100x2_library_run6",    "2026-11-27_h100x2_library_run7",
      "2026-11-27_h100x2_library_run8",    "2026-11-27_h100x2_library_run9",
      "2026-11-27_h100x2_library_run10",   "2026-11-27_h200x2_library_run10"};
  double error_sum = 0;
  int checked = 0;
  for (const std::string& run : runs) {
    const std::string folder = "bench/validate/data/calibration/" + run;
    const HardwareProfile hw = RunProfile(
        folder, run == "2026-11-27_h100x2_library_heldout4" ? "profile_with_run3_gemm.json"
                                                              : "profile.json");
    const auto doc = nlohmann::json::parse(
        testing::ReadTextFile(Source(folder + "/suite_ddp.json")), nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << folder;
    for (const auto& r : doc["runs"]) {
      if (r.value("mode", "") != "ddp" || !r.contains("step_time_median_s") ||
          !r["step_time_median_s"].is_number()) {
        continue;
      }
      Configuration c;
      c.gpus_per_node = r.value("world_size", 1);
      c.dp = c.gpus_per_node;
      c.micro_batch = r.value("micro_batch", 1);
      c.grad_accum = r.value("grad_accum", 1);
      c.global_batch = int64_t{c.dp} * c.micro_batch * c.grad_accum;
      const Workload w = SuiteWorkload(r.value("model", ""));
      StrategyModel model(w, hw);  // keeps a reference to w
      const double measured = r["step_time_median_s"].get<double>();
      error_sum += std::abs(model.Time(c).total_s / measured - 1);
      ++checked;
    }
  }
  ASSERT_EQ(checked, 60);
  std::printf("DDP on the ten two-rank runs: step MAPE %.1f %%\n", 100 * error_sum / checked);
  EXPECT_LT(error_sum / checked, 0.095);
}

// h19k: the ResNets at micro-batch 256, GPU-bound, were under-predicted on
// every calibration run (bottleneck ResNets and Wide ResNets -7..-19 %). A
// profile of the same training on one H200 (cnn_kernel_profile.py) named it:
// BatchNorm's statistics kernel (Welford, a division per element) reads its
// input at 324 G elements/s, 650 GB/s of bf16, where the model had charged it
// the elementwise bandwidth (3,788 GB/s there): 8.7 ms of ResNet-50's step
// against 1.5. Counted at that rate (and the stem's input gradient, which
// autograd never computes, left out) the twelve ResNet configurations' error
// is 4.5 %, 11.0 % before (12.5 % with the stem's dgrad out alone).
TEST(LibraryCalibrationTest, BatchNormStatisticsAtTheirArithmeticRate) {
  const std::vector<std::string> runs = {
      "2026-11-26_h100x2_library_heldout",  "2026-11-26_h100x2_library_heldout2",
      "2026-11-27_h100x2_library_heldout",  "2026-11-27_h100x2_library_heldout2",
      "2026-11-27_h100x2_library_heldout3", "2026-11-27_h100x2_library_heldout4",
      "2026-11-27_h100x2_library_run5",     "2026-11-27_h100x2_library_run6",
      "2026-11-27_h100x2_library_run7",     "2026-11-27_h100x2_library_run8",
      "2026-11-27_h100x2_library_run9",     "2026-11-27_h100x2_library_run10",
      "2026-11-27_h200x2_library_run10"};
  double error_sum = 0;
  int checked = 0;
  for (const std::string& run : runs) {
    const std::string folder = "bench/validate/data/calibration/" + run;
    const HardwareProfile hw = RunProfile(folder, run == "2026-11-27_h100x2_library_heldout4"
                                                      ? "profile_with_run3_gemm.json"
                                                      : "profile.json");
    const auto doc = nlohmann::json::parse(
        testing::ReadTextFile(Source(folder + "/suite_single_vision.json")), nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << folder;
    for (const auto& r : doc["runs"]) {
      const std::string model = r.value("model", "");
      const int mb = r.value("micro_batch", 0);
      if (r.value("mode", "") != "single" || mb < 64 || model.find("resnet") == std::string::npos ||
          !r.contains("step_time_median_s") || !r["step_time_median_s"].is_number()) {
        continue;
      }
      const double measured = r["step_time_median_s"].get<double>();
      const double error = SingleGpuStep(SuiteWorkload(model), hw, mb) / measured - 1;
      std::printf("%s %s mb%d: measured %.1f ms, %+.1f %%\n", run.c_str(), model.c_str(), mb,
                  measured * 1e3, 100 * error);
      error_sum += std::abs(error);
      ++checked;
    }
  }
  ASSERT_EQ(checked, 12);
  std::printf("ResNets at micro-batch >= 64: step MAPE %.1f %%\n", 100 * error_sum / checked);
  EXPECT_LT(error_sum / checked, 0.06);

  // The term: each training BatchNorm's statistics read its output's elements
  // once; VGG-16's convolutions have no BatchNorm.
  const Workload resnet50 = SuiteWorkload("tv-resnet50");
  const LayerCost& conv1 = resnet50.layers[0];
  ASSERT_EQ(conv1.name, "conv1");
  EXPECT_DOUBLE_EQ(conv1.batch_norm_statistics_elements, 64.0 * 112 * 112);
  EXPECT_DOUBLE_EQ(SuiteWorkload("tv-vgg16").layers[0].batch_norm_statistics_elements, 0);
  // The images need no gradient: the stem computes none.
  EXPECT_FALSE(conv1.input_gradient);
  EXPECT_TRUE(resnet50.layers[2].input_gradient);
}

}  // namespace
}  // namespace xdeep::tuner
