// Hardware profiles: built-ins are labelled, probe reports are read (and
// rejected with the path at fault), GEMM interpolation and collective fits,
// the framework probe's host time per kernel.
#include "tuner/hardware_profile.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

TEST(BuiltinProfileTest, EveryNameLoadsAndIsLabelledBuiltIn) {
  const auto names = BuiltinHardwareProfileNames();
  ASSERT_GE(names.size(), 3u);
  for (const std::string& n : names) {
    auto hw = BuiltinHardwareProfile(n);
    ASSERT_TRUE(hw.ok()) << n;
    EXPECT_TRUE(hw->builtin);
    EXPECT_EQ(hw->Label(), "built-in profile " + n);
    EXPECT_EQ(hw->gpus_per_node, 8);
    EXPECT_GT(hw->memory_bytes, int64_t{40} * 1000 * 1000 * 1000);
  }
  auto bad = BuiltinHardwareProfile("tpu-v9");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("h100-sxm"));
}

TEST(BuiltinProfileTest, GemmRateGrowsWithSizeAndSaturates) {
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  const double small = GemmTflops(*hw, DType::kBf16, 256, 256, 256);
  const double mid = GemmTflops(*hw, DType::kBf16, 2048, 2048, 2048);
  const double big = GemmTflops(*hw, DType::kBf16, 8192, 8192, 8192);
  EXPECT_LT(small, mid);
  EXPECT_LT(mid, big);
  EXPECT_GT(big, 600);  // measured 790-890 on this project's H100s
  EXPECT_LT(big, 990);  // never above the datasheet peak
  EXPECT_LT(GemmTflops(*hw, DType::kFp32, 8192, 8192, 8192), big / 10);
}

TEST(CollectiveTest, IntraInterAndRails) {
  auto hw = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  const double bytes = 1e9;
  EXPECT_EQ(CollectiveTime(*hw, CollectiveOp::kAllReduce, bytes, 1, 1), 0);
  const double intra = CollectiveTime(*hw, CollectiveOp::kAllReduce, bytes, 8, 8);
  const double inter1 = CollectiveTime(*hw, CollectiveOp::kAllReduce, bytes, 16, 1);
  const double inter8 = CollectiveTime(*hw, CollectiveOp::kAllReduce, bytes, 16, 8);
  EXPECT_LT(intra, inter8);   // NVLink beats the network
  EXPECT_LT(inter8, inter1);  // eight rails beat one
  // Bus-bandwidth convention: all-gather moves half an all-reduce's bytes.
  const double ag = CollectiveTime(*hw, CollectiveOp::kAllGather, bytes, 8, 8);
  EXPECT_NEAR((ag - 0.6 * 15e-6 * (1 + 0.15 * 3)) * 2, intra - 15e-6 * (1 + 0.15 * 3), 1e-9);
}

constexpr char kReport[] = R"({
  "schema": "xdeep.probe_report/1",
  "created": "2026-11-26T01:30:00Z",
  "host": "node01",
  "gpu": {"name": "NVIDIA H100 80GB HBM3", "count": 2, "memory_bytes": 85029158912,
          "sm_count": 132, "compute_capability": "9.0"},
  "nodes": 1, "ranks": 2, "gpus_per_node": 2,
  "gemm": [
    {"m": 8192, "n": 8192, "k": 8192, "dtype": "bf16", "pass": "plain", "median_s": 0.0014, "tflops": 785.0},
    {"m": 1024, "n": 1024, "k": 1024, "dtype": "bf16", "pass": "fwd", "median_s": 0.00001, "tflops": 214.7}
  ],
  "attention": [{"batch": 8, "heads": 16, "seq": 2048, "head_dim": 128, "dtype": "bf16",
                 "causal": true, "median_s": 0.001, "tflops": 392.5}],
  "bandwidth": [{"kernel": "copy", "space": "device", "backend": "cuda", "bytes": 1073741824,
                 "median_s": 0.0004, "gbps": 2900.0}],
  "collectives": [
    {"op": "all_reduce", "ranks": 2, "nodes": 1, "scope": "intra_node", "bytes": 1000000, "median_s": 0.000025},
    {"op": "all_reduce", "ranks": 2, "nodes": 1, "scope": "intra_node", "bytes": 100000000, "median_s": 0.000520}
  ],
  "errors": []
})";

TEST(ProbeReportTest, FieldOfTheWrongTypeIsAnErrorNotAnException) {
  // Found by tests/fuzz/fuzz_probe_report: json::value() threw out of the library.
  std::string report = kReport;
  report.replace(report.find("\"node01\""), 8, "17");
  auto hw = HardwareProfileFromProbeReport(report, "probe.json");
  ASSERT_FALSE(hw.ok());
  EXPECT_THAT(hw.status().message(), ::testing::HasSubstr("probe.json: $: a field has the wrong type"));
  // A float too large for the integer field it fills (undefined behaviour to cast).
  report = kReport;
  report.replace(report.find("\"m\": 8192"), 9, "\"m\": 1e113");
  hw = HardwareProfileFromProbeReport(report, "probe.json");
  ASSERT_FALSE(hw.ok());
  EXPECT_THAT(hw.status().message(), ::testing::HasSubstr("$.gemm[0].m: number out of range"));
}

TEST(ProbeReportTest, ReadsMeasuredFiguresAndLabelsThem) {
  auto hw = HardwareProfileFromProbeReport(kReport, "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_FALSE(hw->builtin);
  EXPECT_THAT(hw->Label(), ::testing::StartsWith("measured node01 2026-11-26T01:30:00Z"));
  // Inter-node figures were not measured: the fabric model's, and the label says so.
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr(
                               "inter-node collectives from the fabric model, dgx-h100-superpod"));
  EXPECT_EQ(hw->gpus_per_node, 2);
  EXPECT_EQ(hw->memory_bytes, 85029158912);
  EXPECT_DOUBLE_EQ(hw->memory_bandwidth_gbps, 2900.0);
  EXPECT_NEAR(hw->attention_efficiency, 392.5 / 785.0, 1e-12);
  // The GEMM model, fitted to the two points (its peak only: too few for the
  // shape parameters), passes near the large one and below it at the small.
  EXPECT_NEAR(GemmTflops(*hw, DType::kBf16, 8192, 8192, 8192, GemmLayout::kDgrad), 785.0, 80.0);
  EXPECT_LT(GemmTflops(*hw, DType::kBf16, 1024, 1024, 1024), 600.0);
  EXPECT_EQ(hw->gemm_fits[static_cast<int>(DType::kBf16)].points, 2);
  // Collectives: t = a + b * bytes through the two points: b = 495 us / 99 MB
  // = 5e-12 s/B, a = 25 us - 1 MB * b = 20 us; busbw = 2(n-1)/n / b = 200 GB/s.
  const double t = CollectiveTime(*hw, CollectiveOp::kAllReduce, 5e7, 2, 2);
  EXPECT_NEAR(t, 20e-6 + 5e7 * 5e-12, 1e-12);
}

// profiler/framework_probe.py's entry for its 4-layer GPT, launch-bound.
std::string WithFramework(const std::string& entries) {
  std::string with = kReport;
  with.replace(with.find("\"errors\""), 8, "\"framework\": [" + entries + "], \"errors\"");
  return with;
}
std::string FrameworkEntry(double median_s, double gpu_busy, int layers = 4) {
  return absl::StrCat(R"({"name": "torch", "model": "gpt", "layers": )", layers,
                      R"(, "hidden": 128, "heads": 4, "ffn": 512, "seq": 128, "vocab": 1024,
                          "batch": 1, "kernels": 400, "median_s": )",
                      median_s, R"(, "gpu_busy_fraction": )", gpu_busy, "}");
}

// The probe's ResNet-50 entry at 224 pixels, launch-bound.
const std::string kResNet50Entry = R"({"name": "torch", "model": "resnet", "depth": 50,
    "image": 224, "classes": 1000, "batch": 1, "kernels": 941, "median_s": 0.016,
    "gpu_busy_fraction": 0.2})";
// An entry with more fields (a JSON fragment).
std::string With(std::string entry, const std::string& fields) {
  entry.insert(entry.size() - 1, ", " + fields);
  return entry;
}

// An entry whose passes ran on `ranks` ranks, the slowest trailing the mean by `straggle`.
std::string OnRanks(const std::string& entry, int ranks, double straggle) {
  return With(entry, absl::StrCat(R"("ranks": )", ranks, R"(, "straggle": )", straggle));
}

// The profile of a report whose only framework entry is the tiny GPT's plain
// pass: what stays built-in without the other passes.
HardwareProfile PlainGptOnly() {
  auto hw = HardwareProfileFromProbeReport(WithFramework(FrameworkEntry(0.006, 0.1)), "p.json");
  EXPECT_TRUE(hw.ok()) << hw.status();
  return hw.ok() ? *hw : HardwareProfile();
}

TEST(ProbeReportTest, FrameworkProbeSetsHostTimePerKernelInTheModelsUnits) {
  // The model's own kernel count for the probe's tiny GPT.
  Workload tiny;
  tiny.transformer.layers = 4;
  tiny.transformer.hidden = 128;
  tiny.transformer.heads = tiny.transformer.kv_heads = 4;
  tiny.transformer.ffn = 512;
  tiny.transformer.seq_len = 128;
  tiny.transformer.vocab = 1024;
  tiny.transformer.tied_embeddings = true;
  BuildTransformerLayers(tiny);
  int forward = 0;
  for (const LayerCost& l : tiny.layers) forward += l.kernels;
  ASSERT_GT(forward, 0);

  // Median of the launch-bound GPU entries; a busy GPU's and a CPU smoke run's are left out.
  std::string cpu_smoke_run = FrameworkEntry(0.002, 0.0);
  cpu_smoke_run.insert(1, R"("device": "cpu", )");
  auto hw = HardwareProfileFromProbeReport(
      WithFramework(FrameworkEntry(0.006, 0.1) + "," + FrameworkEntry(0.008, 0.1) + "," +
                    FrameworkEntry(0.05, 0.9) + "," + cpu_smoke_run),
      "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  // The device's tenth taken out as the model combines them: sqrt(host² + device²).
  EXPECT_DOUBLE_EQ(hw->host_overhead_per_kernel_s,
                   0.007 * std::sqrt(1 - 0.1 * 0.1) / (3.0 * forward));
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr(
                               absl::StrFormat("host %.1f us per kernel from the framework probe",
                                               hw->host_overhead_per_kernel_s * 1e6)));
  auto without = HardwareProfileFromProbeReport(kReport, "probe.json");
  ASSERT_TRUE(without.ok());
  EXPECT_NE(without->host_overhead_per_kernel_s, hw->host_overhead_per_kernel_s);

  auto bad = HardwareProfileFromProbeReport(WithFramework(FrameworkEntry(0.006, 0.1, 0)), "f.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("f.json: $.framework[0]: needs a GPT shape"));
}

TEST(ProbeReportTest, FrameworkProbesResNetEntrySetsTheHostTimeOfConvolutionalNetworks) {
  auto resnet = CnnLayerTable("resnet50", 64, 10, Precision::kBf16Autocast);
  ASSERT_TRUE(resnet.ok());
  // The ops the host issues: cuDNN's layout transforms inside each NCHW
  // convolution call are not among them.
  int forward = 0, library = 0;
  for (const LayerCost& l : *resnet) {
    forward += l.kernels - l.library_kernels;
    library += l.library_kernels;
  }
  EXPECT_GT(library, 0);
  const std::string entry = R"({"name": "torch", "model": "resnet", "depth": 50, "image": 64,
      "classes": 10, "batch": 1, "kernels": 906, "median_s": 0.02, "gpu_busy_fraction": 0.1})";
  // Alone, the ResNet's pass sets the CNN figure.
  auto alone = HardwareProfileFromProbeReport(WithFramework(entry), "probe.json");
  ASSERT_TRUE(alone.ok()) << alone.status();
  const double resnet_figure = 0.02 * std::sqrt(1 - 0.1 * 0.1) / (3.0 * forward);
  EXPECT_DOUBLE_EQ(alone->host_overhead_per_kernel_cnn_s, resnet_figure);
  EXPECT_THAT(alone->Label(), ::testing::HasSubstr(absl::StrFormat(
                                  "%.1f us for CNNs", alone->host_overhead_per_kernel_cnn_s * 1e6)));

  // Beside the GPT's pass, both figures are one host speed read from both passes:
  // the geometric mean of the GPT's figure and the ResNet's over the networks' op
  // ratio, times each network's cost per op.
  auto hw = HardwareProfileFromProbeReport(WithFramework(FrameworkEntry(0.006, 0.1) + "," + entry),
                                           "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  const double gpt_figure = PlainGptOnly().host_overhead_per_kernel_s;
  const double ratio = HardwareProfile().cnn_host_op_ratio;
  EXPECT_DOUBLE_EQ(hw->host_overhead_per_kernel_s, std::sqrt(gpt_figure * resnet_figure / ratio));
  EXPECT_DOUBLE_EQ(hw->host_overhead_per_kernel_cnn_s, hw->host_overhead_per_kernel_s * ratio);
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr(absl::StrFormat(
                               "%.1f us for CNNs", hw->host_overhead_per_kernel_cnn_s * 1e6)));
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr(absl::StrFormat(
                               "its GPT's pass %.1f us", gpt_figure * 1e6)));
  // A slower ResNet window is a slower host for transformers too, by half as much
  // in the logarithm; the GPT's window alone moves both figures the same way.
  const std::string slower = R"({"name": "torch", "model": "resnet", "depth": 50, "image": 64,
      "classes": 10, "batch": 1, "kernels": 906, "median_s": 0.08, "gpu_busy_fraction": 0.1})";
  auto slow = HardwareProfileFromProbeReport(
      WithFramework(FrameworkEntry(0.006, 0.1) + "," + slower), "probe.json");
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_NEAR(slow->host_overhead_per_kernel_s / hw->host_overhead_per_kernel_s, 2.0, 1e-9);
  EXPECT_NEAR(slow->host_overhead_per_kernel_cnn_s / hw->host_overhead_per_kernel_cnn_s, 2.0, 1e-9);

  // A launch-bound ResNet-50 step follows the CNN figure, a GPT's the other one.
  auto resnet50 = PresetWorkload("resnet50");
  auto gpt = PresetWorkload("gpt-125m");
  ASSERT_TRUE(resnet50.ok() && gpt.ok());
  Configuration single;
  single.micro_batch = 1;
  HardwareProfile faster_cnn = *hw;
  faster_cnn.host_overhead_per_kernel_cnn_s /= 2;
  EXPECT_LT(EstimateStepTime(*resnet50, faster_cnn, single).total_s,
            0.8 * EstimateStepTime(*resnet50, *hw, single).total_s);
  EXPECT_DOUBLE_EQ(EstimateStepTime(*gpt, faster_cnn, single).total_s,
                   EstimateStepTime(*gpt, *hw, single).total_s);

  auto bad = HardwareProfileFromProbeReport(
      WithFramework(R"({"name": "torch", "model": "resnet", "depth": 49, "image": 64, "classes": 10,
                        "batch": 1, "kernels": 9, "median_s": 0.02, "gpu_busy_fraction": 0.1})"),
      "f.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("f.json: $.framework[0]: needs a ResNet shape"));
}

TEST(ProbeReportTest, FrameworkProbesDdpPassSetsTheReducersHostTimePerLaunch) {
  // The probe's tiny GPT: 36 parameter tensors (embeddings 2, 4 blocks of 8,
  // final LayerNorm 2), no buffers, 2 buckets; ResNet-50: 161 tensors, 159
  // BatchNorm buffers, 5 buckets. DDP adds two launches per tensor, one per
  // buffer and a bucket's NCCL call as ddp_bucket_host_launches of them.
  const double k = HardwareProfile().ddp_bucket_host_launches;
  const std::string gpt = With(FrameworkEntry(0.006, 0.1), R"("ddp_median_s": 0.0066)");
  const std::string resnet = With(kResNet50Entry, R"("ddp_median_s": 0.021)");
  const std::string slower = With(FrameworkEntry(0.006, 0.1), R"("ddp_median_s": 0.0075)");
  auto hw = HardwareProfileFromProbeReport(WithFramework(gpt + "," + resnet + "," + slower),
                                           "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  // Median of 0.6 ms / (72 + 2k), 5 ms / (481 + 5k) and 1.5 ms / (72 + 2k).
  EXPECT_DOUBLE_EQ(hw->ddp_host_per_launch_s, 0.005 / (481 + 5 * k));
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr(absl::StrFormat("%.1f us per DDP reducer launch",
                                                                hw->ddp_host_per_launch_s * 1e6)));
  // Without the DDP pass the built-in figure stays.
  const HardwareProfile without = PlainGptOnly();
  EXPECT_DOUBLE_EQ(without.ddp_host_per_launch_s, HardwareProfile().ddp_host_per_launch_s);

  // DDP passes on two ranks, as training runs them (each bucket's all-reduce a
  // real NCCL call the ranks meet at), outweigh one rank's: here the GPT's
  // reducer takes 2 ms over its plain pass, the DDP pass waiting 5 % for the
  // slower rank (the model's straggler term adds that back).
  const std::string two_ranks =
      OnRanks(With(FrameworkEntry(0.006, 0.1), R"("ddp_median_s": 0.0084)"), 2, 1.05);
  auto on_two = HardwareProfileFromProbeReport(
      WithFramework(gpt + "," + resnet + "," + slower + "," + two_ranks), "probe.json");
  ASSERT_TRUE(on_two.ok()) << on_two.status();
  EXPECT_NEAR(on_two->ddp_host_per_launch_s, 0.002 / (72 + 2 * k), 1e-12);
  EXPECT_THAT(on_two->Label(), ::testing::HasSubstr("us per DDP reducer launch on 2 ranks"));
}

TEST(ProbeReportTest, FrameworkProbesFsdpPassesSetFsdpsHostTimePerUnitAndTensor) {
  // The tiny GPT: 5 units (4 blocks, the root), 36 tensors; ResNet-50: 5 units
  // (4 stages, the root), 161 tensors. Chosen costs: 1 ms per unit, 50 us per
  // tensor, added to the plain passes.
  auto with_fsdp = [](const std::string& entry, double fsdp_s) {
    return With(entry, absl::StrCat(R"("fsdp_median_s": )", fsdp_s));
  };
  const std::string& resnet = kResNet50Entry;
  const double gpt_added = 5 * 1e-3 + 36 * 50e-6, cnn_added = 5 * 1e-3 + 161 * 50e-6;
  auto hw = HardwareProfileFromProbeReport(
      WithFramework(with_fsdp(FrameworkEntry(0.006, 0.1), 0.006 + gpt_added) + "," +
                    with_fsdp(resnet, 0.016 + cnn_added)),
      "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_NEAR(hw->fsdp_host_per_unit_s, 1e-3, 1e-12);
  EXPECT_NEAR(hw->fsdp_host_per_tensor_s, 50e-6, 1e-12);
  EXPECT_THAT(hw->Label(),
              ::testing::HasSubstr("FSDP 1.00 ms per unit + 50 us per tensor on 1 rank"));
  EXPECT_EQ(hw->fsdp_host_ranks, 1);

  // Passes on two ranks, as training runs them, outweigh one rank's: here
  // twice the cost, the FSDP passes waiting 4 % for the slower rank (which
  // the model's straggler term adds back); the host's per-kernel figure stays
  // one process's, DDP's is the two-rank pass's too.
  const std::string two_rank_gpt = With(FrameworkEntry(0.009, 0.1), R"("ddp_median_s": 0.012)");
  auto both = HardwareProfileFromProbeReport(
      WithFramework(with_fsdp(FrameworkEntry(0.006, 0.1), 0.006 + gpt_added) + "," +
                    with_fsdp(resnet, 0.016 + cnn_added) + "," +
                    OnRanks(with_fsdp(two_rank_gpt, (0.009 + 2 * gpt_added) * 1.04), 2, 1.04) +
                    "," + OnRanks(with_fsdp(resnet, (0.016 + 2 * cnn_added) * 1.04), 2, 1.04)),
      "probe.json");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_NEAR(both->fsdp_host_per_unit_s, 2e-3, 1e-12);
  EXPECT_NEAR(both->fsdp_host_per_tensor_s, 100e-6, 1e-12);
  EXPECT_THAT(both->Label(), ::testing::HasSubstr("on 2 ranks"));
  EXPECT_EQ(both->fsdp_host_ranks, 2);
  EXPECT_DOUBLE_EQ(both->host_overhead_per_kernel_s, hw->host_overhead_per_kernel_s);
  EXPECT_NEAR(both->ddp_host_per_launch_s,
              (0.012 / 1.04 - 0.009) / (72 + 2 * HardwareProfile().ddp_bucket_host_launches),
              1e-12);

  // The GPT alone cannot split the two: the built-in ratio between them holds.
  auto gpt_only = HardwareProfileFromProbeReport(
      WithFramework(with_fsdp(FrameworkEntry(0.006, 0.1), 0.006 + gpt_added)), "probe.json");
  ASSERT_TRUE(gpt_only.ok()) << gpt_only.status();
  const HardwareProfile builtin;
  EXPECT_NEAR(gpt_only->fsdp_host_per_tensor_s / gpt_only->fsdp_host_per_unit_s,
              builtin.fsdp_tensor_host_kernels / builtin.fsdp_unit_host_kernels, 1e-12);
  EXPECT_NEAR(5 * gpt_only->fsdp_host_per_unit_s + 36 * gpt_only->fsdp_host_per_tensor_s, gpt_added,
              1e-12);

  // Without FSDP passes nothing is measured: the model keeps its launch counts.
  const HardwareProfile without = PlainGptOnly();
  EXPECT_EQ(without.fsdp_host_per_unit_s, 0);
  EXPECT_EQ(without.fsdp_host_per_tensor_s, 0);
  EXPECT_EQ(without.fsdp_host_ranks, 0);
}

TEST(ProbeReportTest, FrameworkProbesOptimizerStepSetsItsHostTimePerTensor) {
  // The tiny GPT's 36 parameter tensors, ResNet-50's 161: the median of each
  // network's step over its tensors, plain from one rank's entries; FSDP's
  // from the entries of the most ranks (its DTensors on 2 ranks here).
  const std::string gpt =
      With(FrameworkEntry(0.006, 0.1), R"("step_host_s": 0.00072, "fsdp_step_host_s": 0.0018)");
  const std::string resnet =
      With(kResNet50Entry,
           R"("step_host_s": 0.00483, "fsdp_median_s": 0.04, "fsdp_step_host_s": 0.008)");
  const std::string slow = With(FrameworkEntry(0.006, 0.1), R"("step_host_s": 0.0036)");
  const std::string two_ranks =
      OnRanks(With(FrameworkEntry(0.006, 0.1), R"("step_host_s": 0.01, "fsdp_median_s": 0.02,
                                                  "fsdp_step_host_s": 0.00252)"),
              2, 1.05);
  auto with_fsdp = [](const std::string& entry) {
    return With(entry, R"("fsdp_median_s": 0.015)");
  };
  auto hw = HardwareProfileFromProbeReport(
      WithFramework(with_fsdp(gpt) + "," + resnet + "," + slow + "," + two_ranks), "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  // Median of 20, 30 and 100 us; the two-rank entry's plain step is not one process's.
  // FSDP's from the one network on 2 ranks: all of it per tensor.
  EXPECT_NEAR(hw->optimizer_host.per_tensor_s, 30e-6, 1e-12);
  EXPECT_EQ(hw->optimizer_host.fixed_s, 0);
  EXPECT_NEAR(hw->fsdp_optimizer_host.per_tensor_s, 70e-6, 1e-12);
  EXPECT_EQ(hw->fsdp_optimizer_host.fixed_s, 0);
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr(
                               "optimizer step 30.0 us per tensor, 0.00 ms + 70.0 us under FSDP"));
  // One rank's FSDP steps where no more ranks ran: the GPT (36 tensors, 1.8
  // ms) and ResNet-50 (161, 8 ms) give a fixed part and a part per tensor.
  auto one_rank =
      HardwareProfileFromProbeReport(WithFramework(with_fsdp(gpt) + "," + resnet), "probe.json");
  ASSERT_TRUE(one_rank.ok()) << one_rank.status();
  const double per_tensor = (0.008 - 0.0018) / (161 - 36);
  EXPECT_NEAR(one_rank->fsdp_optimizer_host.per_tensor_s, per_tensor, 1e-12);
  EXPECT_NEAR(one_rank->fsdp_optimizer_host.fixed_s, 0.0018 - 36 * per_tensor, 1e-12);
  // Unmeasured: 0, the built-in figures having been fitted to whole steps.
  const HardwareProfile without = PlainGptOnly();
  EXPECT_FALSE(without.optimizer_host.measured());
  EXPECT_FALSE(without.fsdp_optimizer_host.measured());
}

TEST(ProbeReportTest, FsdpOptimizerStepIsAFixedPartAndAPartPerTensor) {
  // Run 9's two-rank probe (2x H100): the tiny GPT's 36 tensors 3.62 ms, ResNet-50's
  // 161 11.64 ms under FSDP2: 1.31 ms + 64.2 us a tensor, so a network of 389
  // tensors (timm ViT-H/14) is charged 26.3 ms, where 86 us a tensor (the median of
  // the two networks' ratios) charged 33.6.
  const std::string gpt = OnRanks(
      With(FrameworkEntry(0.0079, 0.06),
           R"("step_host_s": 0.00126, "fsdp_median_s": 0.026, "fsdp_step_host_s": 0.00362)"),
      2, 1.05);
  const std::string resnet = OnRanks(
      With(kResNet50Entry,
           R"("step_host_s": 0.0039, "fsdp_median_s": 0.0525, "fsdp_step_host_s": 0.01164)"),
      2, 1.07);
  auto hw = HardwareProfileFromProbeReport(WithFramework(gpt + "," + resnet), "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  const double per_tensor = (0.01164 - 0.00362) / 125;
  EXPECT_NEAR(hw->fsdp_optimizer_host.per_tensor_s, per_tensor, 1e-12);
  EXPECT_NEAR(hw->fsdp_optimizer_host.fixed_s, 0.00362 - 36 * per_tensor, 1e-12);
  EXPECT_NEAR(hw->fsdp_optimizer_host.For(389), 0.0263, 0.0002);
  // Where the two would give a negative fixed part, all of it is per tensor.
  const std::string flat = OnRanks(
      With(kResNet50Entry,
           R"("step_host_s": 0.0039, "fsdp_median_s": 0.0525, "fsdp_step_host_s": 0.002)"),
      2, 1.07);
  auto per_only = HardwareProfileFromProbeReport(WithFramework(gpt + "," + flat), "probe.json");
  ASSERT_TRUE(per_only.ok()) << per_only.status();
  EXPECT_EQ(per_only->fsdp_optimizer_host.fixed_s, 0);
  EXPECT_NEAR(per_only->fsdp_optimizer_host.per_tensor_s, (0.00362 / 36 + 0.002 / 161) / 2, 1e-12);
}

TEST(ProbeReportTest, FrameworkProbesTensorParallelPassSetsItsHostTimePerSplitLinear) {
  // The tiny GPT's 16 split Linears: its TP pass took 6.4 ms more than the
  // plain one on one rank (400 us each of dispatch). On two ranks, the
  // straggle (1.1x) taken out first, the TP pass took 19.8 / 1.1 = 18 ms where
  // its 6.6 ms of plain launches and 6.4 ms of dispatch would take 13: the
  // ranks' meetings at the split blocks' all-reduces make the whole pass
  // 1.385x as long (run 9's probe read 1.39x), so the blocks' launches are
  // charged that and each split Linear 400 us x 1.385.
  const std::string one_rank =
      With(FrameworkEntry(0.006, 0.1), R"("tp_median_s": 0.0124, "tp_linears": 16)");
  auto hw = HardwareProfileFromProbeReport(WithFramework(one_rank), "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_NEAR(hw->tp_host_per_linear_s, 400e-6, 1e-12);
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("TP 400 us per split Linear on 1 rank"));
  EXPECT_EQ(hw->tp_rank_sync_factor, 1);
  const std::string two_ranks = OnRanks(
      With(FrameworkEntry(0.0066, 0.1), R"("tp_median_s": 0.0198, "tp_linears": 16)"), 2, 1.1);
  hw = HardwareProfileFromProbeReport(WithFramework(one_rank + "," + two_ranks), "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  const double sync = 0.018 / (0.0066 + 0.0064);
  EXPECT_NEAR(hw->tp_rank_sync_factor, sync, 1e-9);
  EXPECT_NEAR(hw->tp_host_per_linear_s, 400e-6 * sync, 1e-9);
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("TP's pass 1.38x on its ranks"));
  // Two ranks no slower than one: no meeting cost, the one-rank dispatch.
  const std::string quick_ranks = OnRanks(
      With(FrameworkEntry(0.006, 0.1), R"("tp_median_s": 0.01232, "tp_linears": 16)"), 2, 1.1);
  hw = HardwareProfileFromProbeReport(WithFramework(one_rank + "," + quick_ranks), "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->tp_rank_sync_factor, 1);
  EXPECT_NEAR(hw->tp_host_per_linear_s, 400e-6, 1e-9);
  // Two ranks alone: the dispatch per Linear as measured there, no factor.
  hw = HardwareProfileFromProbeReport(WithFramework(two_ranks), "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->tp_rank_sync_factor, 1);
  EXPECT_NEAR(hw->tp_host_per_linear_s, (0.018 - 0.0066) / 16, 1e-9);
  // Unmeasured: 0, and the model counts tp_linear_host_kernels launches' worth.
  EXPECT_EQ(PlainGptOnly().tp_host_per_linear_s, 0);
}

TEST(ProbeReportTest, FrameworkProbesRanksSideBySideSetTheirHostFactor) {
  // Plain passes of each network on one rank (median 6 ms GPT, 16 ms ResNet-50)
  // and on two (7.2 and 17.6 ms): 1.2x and 1.1x, the median 1.15x.
  auto on_two = [](const std::string& entry) { return OnRanks(entry, 2, 1.05); };
  std::string resnet_two = kResNet50Entry;
  resnet_two.replace(resnet_two.find("0.016"), 5, "0.0176");
  auto hw = HardwareProfileFromProbeReport(
      WithFramework(FrameworkEntry(0.005, 0.1) + "," + FrameworkEntry(0.006, 0.1) + "," +
                    FrameworkEntry(0.007, 0.1) + "," + on_two(FrameworkEntry(0.0072, 0.1)) + "," +
                    kResNet50Entry + "," + on_two(resnet_two)),
      "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_NEAR(hw->side_by_side_host_factor, (1.2 + 1.1) / 2, 1e-12);
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("1.15x per rank side by side"));
  // One rank only, or several ranks only: nothing to compare, 1.
  for (const std::string& entries :
       {FrameworkEntry(0.006, 0.1), on_two(FrameworkEntry(0.0072, 0.1))}) {
    auto one = HardwareProfileFromProbeReport(WithFramework(entries), "probe.json");
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(one->side_by_side_host_factor, 1);
  }
}

TEST(ProbeReportTest, FrameworkProbesMemoryBoundGptSetsTheElementwiseBandwidth) {
  // The model's elementwise bytes for the probe's GPT at its training size.
  Workload wide;
  TransformerShape& t = wide.transformer;
  t.layers = 4, t.hidden = 1024, t.heads = t.kv_heads = 16, t.ffn = 4096, t.seq_len = 1024;
  t.vocab = 50257;
  t.tied_embeddings = true;
  BuildTransformerLayers(wide);
  double bytes = 0;
  for (const LayerCost& l : wide.layers) bytes += ElementwiseBytes(l).fwd + ElementwiseBytes(l).bwd;
  ASSERT_GT(bytes, 0);
  auto entry = [](double elementwise_s) {
    return absl::StrCat(R"({"name": "torch", "model": "gpt", "layers": 4, "hidden": 1024,
        "heads": 16, "ffn": 4096, "seq": 1024, "vocab": 50257, "batch": 4, "kernels": 500,
        "median_s": 0.03, "gpu_busy_fraction": 0.95, "elementwise_s": )",
                        elementwise_s, "}");
  };
  auto hw =
      HardwareProfileFromProbeReport(WithFramework(FrameworkEntry(0.006, 0.1) + "," + entry(0.010) +
                                                   "," + entry(0.012) + "," + entry(0.011)),
                                     "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_NEAR(hw->elementwise_bandwidth_gbps, 4 * bytes / 0.011 / 1e9, 1e-6);
  EXPECT_THAT(hw->Label(),
              ::testing::HasSubstr(absl::StrFormat("(elementwise kernels at %.0f GB/s)",
                                                   hw->elementwise_bandwidth_gbps)));
  // Not a launch-bound entry: the host's figure is the tiny GPT's alone.
  const HardwareProfile tiny_only = PlainGptOnly();
  EXPECT_DOUBLE_EQ(hw->host_overhead_per_kernel_s, tiny_only.host_overhead_per_kernel_s);
  EXPECT_EQ(tiny_only.elementwise_bandwidth_gbps, 0);

  // A memory-bound step follows it, a launch-bound one does not.
  auto gpt = PresetWorkload("gpt-350m");
  ASSERT_TRUE(gpt.ok());
  Configuration big, small;
  big.micro_batch = 16;
  small.micro_batch = 1;
  HardwareProfile faster = *hw;
  faster.elementwise_bandwidth_gbps *= 2;
  EXPECT_LT(EstimateStepTime(*gpt, faster, big).total_s,
            0.95 * EstimateStepTime(*gpt, *hw, big).total_s);
  EXPECT_NEAR(EstimateStepTime(*gpt, faster, small).total_s,
              EstimateStepTime(*gpt, *hw, small).total_s,
              0.05 * EstimateStepTime(*gpt, *hw, small).total_s);
}

// Bandwidth entries beside the report's CUDA copy (JSON fragments).
std::string WithBandwidth(const std::string& entries) {
  std::string with = kReport;
  const std::string copy_end = R"("gbps": 2900.0})";
  with.insert(with.find(copy_end) + copy_end.size(), "," + entries);
  return with;
}
std::string BandwidthEntry(const char* kernel, const char* backend, double gbps) {
  return absl::StrCat(R"({"kernel": ")", kernel, R"(", "space": "device", "backend": ")", backend,
                      R"(", "bytes": 1073741824, "median_s": 0.001, "gbps": )", gbps, "}");
}

TEST(ProbeReportTest, KokkosDeviceProbesSetTheOptimizerAndElementwiseBandwidth) {
  auto hw = HardwareProfileFromProbeReport(
      WithBandwidth(BandwidthEntry("adam_update", "kokkos", 2500) + "," +
                    BandwidthEntry("layer_norm", "kokkos", 2200) + "," +
                    BandwidthEntry("softmax", "kokkos", 2000) + "," +
                    BandwidthEntry("bias_gelu", "kokkos", 2600) + "," +
                    // The CUDA kernels and host figures are not the Kokkos device ones,
                    // and the CUDA row kernels (with 4 loads in flight, as fast as
                    // copy) are no memory bandwidth either.
                    BandwidthEntry("adam_update", "cuda", 2700) + "," +
                    BandwidthEntry("layer_norm", "cuda", 3100) + "," +
                    BandwidthEntry("softmax", "cuda", 3050) +
                    R"(, {"kernel": "adam_update", "space": "host", "backend": "kokkos",
                          "bytes": 1000, "median_s": 0.001, "gbps": 30})"),
      "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_DOUBLE_EQ(hw->optimizer_bandwidth_gbps, 2500);
  EXPECT_DOUBLE_EQ(hw->elementwise_bandwidth_gbps, 2200);  // the median of the three
  EXPECT_DOUBLE_EQ(hw->memory_bandwidth_gbps, 2900);       // the copy, as before
  EXPECT_THAT(hw->Label(),
              ::testing::HasSubstr("(optimizer at 2500 GB/s, elementwise at 2200 GB/s from the "
                                   "Kokkos device probes)"));

  // Without them: no optimizer figure (the model uses the copy bandwidth), no label.
  auto plain = HardwareProfileFromProbeReport(
      WithBandwidth(BandwidthEntry("adam_update", "cuda", 2700) + "," +
                    BandwidthEntry("layer_norm", "cuda", 3100) + "," +
                    BandwidthEntry("softmax", "cuda", 3050)),
      "probe.json");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->optimizer_bandwidth_gbps, 0);
  EXPECT_EQ(plain->elementwise_bandwidth_gbps, 0);
  EXPECT_DOUBLE_EQ(plain->memory_bandwidth_gbps, 2900);
  EXPECT_THAT(plain->Label(), ::testing::Not(::testing::HasSubstr("Kokkos")));

  // The model's optimizer step follows the Kokkos figure: half the bandwidth, at
  // least 1.5x the (device-bound) step time for a large model on one GPU.
  auto gpt = PresetWorkload("gpt-350m");
  ASSERT_TRUE(gpt.ok());
  Configuration c;
  c.micro_batch = 1;
  HardwareProfile slower = *hw;
  slower.optimizer_bandwidth_gbps /= 2;
  EXPECT_GT(EstimateStepTime(*gpt, slower, c).optimizer_s,
            1.5 * EstimateStepTime(*gpt, *hw, c).optimizer_s);
}

TEST(ProbeReportTest, FrameworkProbesSpreadSetsTheHostsPassToPassVariation) {
  // (p95 - median) / (1.645 median) per entry, as if normal; their median.
  const std::string a = With(FrameworkEntry(0.006, 0.1), R"("p95_s": 0.0075)"),
                    b = With(FrameworkEntry(0.005, 0.1), R"("p95_s": 0.0055)"),
                    c = With(FrameworkEntry(0.004, 0.1), R"("p95_s": 0.0052)");
  auto hw = HardwareProfileFromProbeReport(WithFramework(a + "," + b + "," + c), "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_DOUBLE_EQ(hw->host_step_cv, 0.0015 / (1.645 * 0.006));
  const HardwareProfile without = PlainGptOnly();
  EXPECT_DOUBLE_EQ(without.host_step_cv, HardwareProfile().host_step_cv);

  // Ranks in step measure it where it acts: the slowest of two trailing the
  // mean by 5 % is a spread of 0.05 / E[max of 2 standard normals] (0.564).
  const std::string two = OnRanks(With(FrameworkEntry(0.006, 0.1), R"("p95_s": 0.009)"), 2, 1.05);
  auto ranked = HardwareProfileFromProbeReport(WithFramework(a + "," + two), "probe.json");
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  EXPECT_NEAR(ranked->host_step_cv, 0.05 / (1 / std::sqrt(M_PI)), 1e-3);
  EXPECT_NEAR(StragglerFactor(2, ranked->host_step_cv), 1.05, 1e-12);
  EXPECT_THAT(ranked->Label(), ::testing::HasSubstr("rank-to-rank spread 9 % of ranks in step"));
}

TEST(ProbeReportTest, ErrorsNameTheSourceAndPath) {
  auto bad = HardwareProfileFromProbeReport("{\"schema\": \"other/2\"}", "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::StartsWith("x.json: $.schema: "));
  bad = HardwareProfileFromProbeReport("not json", "y.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::StartsWith("y.json: $: "));
  std::string no_gemm = kReport;
  no_gemm.replace(no_gemm.find("\"gemm\""), 6, "\"gemmX\"");
  bad = HardwareProfileFromProbeReport(no_gemm, "z.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("z.json: $.gemm: no GEMM"));
  std::string bad_coll = kReport;
  bad_coll.replace(bad_coll.find("\"median_s\": 0.000025"), 20, "\"median_s\": -1.0000");
  bad = HardwareProfileFromProbeReport(bad_coll, "c.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("c.json: $.collectives[0]"));
}

}  // namespace
}  // namespace xdeep::tuner

namespace xdeep::tuner {
namespace {

TEST(ProbeReportTest, LatencyOverRanksExtrapolatedWithPmnf) {
  // Inter-node all-reduce latency measured at 4..64 ranks grows linearly with
  // the rank count (a ring): 2 us + 1 us per rank. The PMNF fit carries that
  // to 1024 ranks (1026 us); a straight line in log2(ranks) through the last
  // two points would say 64 + 4 * 32 = 194 us.
  std::string report = R"({"schema": "xdeep.probe_report/1", "created": "d", "host": "h",
    "gpu": {"name": "NVIDIA H100", "memory_bytes": 85029158912}, "gpus_per_node": 8,
    "gemm": [{"m": 4096, "n": 4096, "k": 4096, "dtype": "bf16", "tflops": 700}],
    "collectives": [)";
  bool first = true;
  for (int r : {4, 8, 16, 32, 64}) {
    const double lat = 2e-6 + 1e-6 * r;
    for (double bytes : {1e6, 1e8}) {
      if (!first) report += ",";
      first = false;
      report +=
          "{\"op\": \"all_reduce\", \"scope\": \"inter_node\", \"ranks\": " + std::to_string(r) +
          ", \"nodes\": " + std::to_string(r) + ", \"bytes\": " + std::to_string(bytes) +
          ", \"median_s\": " + std::to_string(lat + bytes * 2.0 * (r - 1) / r / 40e9) + "}";
    }
  }
  report += "]}";
  auto hw = HardwareProfileFromProbeReport(report, "p.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("extrapolated by a PMNF fit"));
  // The model itself, the modeler that won and its cross-validated error.
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("all_reduce inter-node past 64 ranks: "));
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("ranks^(1)"));
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("cross-validated error"));
  EXPECT_THAT(hw->Label(), ::testing::HasSubstr("(modeler "));
  // One byte: latency only (plus a negligible bandwidth term).
  EXPECT_NEAR(CollectiveTime(*hw, CollectiveOp::kAllReduce, 1, 1024, 1), 1026e-6, 20e-6);
  EXPECT_NEAR(CollectiveTime(*hw, CollectiveOp::kAllReduce, 1, 32, 1), 34e-6, 1e-6);
}

}  // namespace
}  // namespace xdeep::tuner
