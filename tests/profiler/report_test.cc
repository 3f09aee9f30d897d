// Tests of the probe report: JSON round trip, files, schema and field rejection.
#include "profiler/report.h"

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

Report Sample() {
  Report r = NewReport();
  r.gpu = GpuInfo{"NVIDIA H100 80GB HBM3", 2, 85029158912, 132, "9.0"};
  r.versions = {{"nccl", "2.28.3"}, {"cuda_runtime", "13.0"}};
  r.nodes = 1;
  r.ranks = 2;
  r.gpus_per_node = 2;
  r.elapsed_s = 12.5;
  r.gemm.push_back(
      {4096, 8192, 1024, "bf16", "wgrad", "mlp.fc1", {1.4e-3, 1.3e-3, 1.5e-3, 0.14, 50}, 785.5});
  r.gemm[0].kernel = {66, 24, 35, 0, 0, 256, 128, 1, 2, 1};
  // The heuristic's answer for a shape not timed: a split-k kernel.
  GemmEntry asked{3072, 768, 16384, "bf16", "wgrad", "", {}, 0};
  asked.kernel = {66, 248, 35, 0, 2, 192, 192, 3, 1, 2};
  r.gemm_algos.push_back(asked);
  r.attention.push_back({8, 16, 2048, 128, "bf16", true, {1e-3, 9e-4, 1.1e-3, 0.2, 20}, 400});
  r.bandwidth.push_back(
      {"triad", "host", "kokkos", 3 << 20, {2e-3, 1.9e-3, 2.2e-3, 0.15, 30}, 1.57});
  r.collectives.push_back({"all_reduce",
                           2,
                           1,
                           "intra_node",
                           67108864,
                           "fp32",
                           {2e-4, 1.9e-4, 2.1e-4, 0.1, 50},
                           335.5,
                           335.5});
  FrameworkEntry f;
  f.name = "torch";
  f.version = "2.11.0+cu130";
  f.model = "gpt";
  f.layers = 4, f.hidden = 128, f.heads = 4, f.ffn = 512, f.seq = 128, f.vocab = 1024, f.batch = 1;
  f.kernels = 410;
  f.timing = {9.1e-3, 8.8e-3, 9.6e-3, 0.08, 20};
  f.gpu_busy_fraction = 0.07;
  r.framework.push_back(f);
  FrameworkEntry cnn = f;
  cnn.model = "resnet";
  cnn.depth = 50, cnn.image = 64, cnn.classes = 10;
  cnn.kernels = 906;
  cnn.ddp_median_s = 0.021;
  cnn.fsdp_median_s = 0.045;
  cnn.ranks = 2;
  cnn.straggle = 1.06;
  r.framework.push_back(cnn);
  // The GPT's tensor-parallel pass: the tuner's DTensor cost per split Linear
  // (a merged profile without it made every TP prediction take the built-in one).
  r.framework[0].tp_median_s = 0.0354;
  r.framework[0].tp_step_host_s = 0.0031;
  r.framework[0].tp_linears = 16;
  FrameworkEntry wide = f;
  wide.hidden = 1024, wide.heads = 16, wide.ffn = 4096, wide.seq = 1024, wide.vocab = 50257;
  wide.batch = 4;
  wide.gpu_busy_fraction = 0.93;
  wide.elementwise_s = 0.0061;
  wide.attention_s = 0.0005;
  wide.loss_s = 0.0023;
  r.framework.push_back(wide);
  r.errors.push_back({"nccl.all_to_all", "timed out after 30 s"});
  return r;
}

TEST(ReportTest, JsonRoundTripKeepsEveryField) {
  const Report in = Sample();
  absl::StatusOr<Report> out = ReportFromJson(ToJson(in));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->schema, kReportSchema);
  EXPECT_EQ(out->created, in.created);
  ASSERT_TRUE(out->gpu.has_value());
  EXPECT_EQ(out->gpu->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(out->gpu->memory_bytes, 85029158912);
  EXPECT_EQ(out->versions.at("nccl"), "2.28.3");
  EXPECT_EQ(out->ranks, 2);
  EXPECT_DOUBLE_EQ(out->elapsed_s, 12.5);
  ASSERT_EQ(out->gemm.size(), 1u);
  EXPECT_EQ(out->gemm[0].pass, "wgrad");
  EXPECT_EQ(out->gemm[0].layer, "mlp.fc1");
  EXPECT_EQ(out->gemm[0].k, 1024);
  EXPECT_DOUBLE_EQ(out->gemm[0].timing.median_s, 1.4e-3);
  EXPECT_EQ(out->gemm[0].timing.iterations, 50);
  EXPECT_DOUBLE_EQ(out->gemm[0].tflops, 785.5);
  EXPECT_EQ(out->gemm[0].kernel.algo, 66);
  EXPECT_EQ(out->gemm[0].kernel.tile_m, 256);
  EXPECT_EQ(out->gemm[0].kernel.cluster_m, 2);
  ASSERT_EQ(out->gemm_algos.size(), 1u);
  EXPECT_EQ(out->gemm_algos[0].kernel.split_k, 3);
  EXPECT_EQ(out->gemm_algos[0].kernel.tile_n, 192);
  EXPECT_EQ(out->gemm_algos[0].kernel.reduction, 2);
  EXPECT_EQ(out->gemm_algos[0].k, 16384);
  ASSERT_EQ(out->attention.size(), 1u);
  EXPECT_TRUE(out->attention[0].causal);
  ASSERT_EQ(out->bandwidth.size(), 1u);
  EXPECT_EQ(out->bandwidth[0].backend, "kokkos");
  ASSERT_EQ(out->collectives.size(), 1u);
  EXPECT_DOUBLE_EQ(out->collectives[0].busbw_gbps, 335.5);
  ASSERT_EQ(out->framework.size(), 3u);
  EXPECT_EQ(out->framework[1].model, "resnet");
  EXPECT_EQ(out->framework[1].depth, 50);
  EXPECT_EQ(out->framework[1].image, 64);
  EXPECT_EQ(out->framework[1].classes, 10);
  EXPECT_EQ(out->framework[1].kernels, 906);
  EXPECT_DOUBLE_EQ(out->framework[1].ddp_median_s, 0.021);
  EXPECT_DOUBLE_EQ(out->framework[1].fsdp_median_s, 0.045);
  EXPECT_EQ(out->framework[1].ranks, 2);
  EXPECT_DOUBLE_EQ(out->framework[1].straggle, 1.06);
  EXPECT_DOUBLE_EQ(out->framework[0].tp_median_s, 0.0354);
  EXPECT_DOUBLE_EQ(out->framework[0].tp_step_host_s, 0.0031);
  EXPECT_EQ(out->framework[0].tp_linears, 16);
  EXPECT_EQ(out->framework[1].tp_linears, 0);  // not measured: left out
  EXPECT_DOUBLE_EQ(out->framework[0].straggle, 0);
  EXPECT_EQ(out->framework[0].ranks, 1);
  EXPECT_DOUBLE_EQ(out->framework[0].ddp_median_s, 0);  // not measured: left out
  EXPECT_DOUBLE_EQ(out->framework[0].elementwise_s, 0);
  EXPECT_DOUBLE_EQ(out->framework[2].elementwise_s, 0.0061);
  // The loss / attention split (a merged profile without it gave the tuner no split).
  EXPECT_DOUBLE_EQ(out->framework[2].attention_s, 0.0005);
  EXPECT_DOUBLE_EQ(out->framework[2].loss_s, 0.0023);
  EXPECT_DOUBLE_EQ(out->framework[0].loss_s, 0);  // not measured: left out
  EXPECT_EQ(out->framework[2].vocab, 50257);
  EXPECT_EQ(out->framework[0].version, "2.11.0+cu130");
  EXPECT_EQ(out->framework[0].ffn, 512);
  EXPECT_EQ(out->framework[0].kernels, 410);
  EXPECT_DOUBLE_EQ(out->framework[0].timing.median_s, 9.1e-3);
  EXPECT_DOUBLE_EQ(out->framework[0].gpu_busy_fraction, 0.07);
  ASSERT_EQ(out->errors.size(), 1u);
  EXPECT_EQ(out->errors[0].probe, "nccl.all_to_all");
}

TEST(ReportTest, FileRoundTrip) {
  const std::string path = ::testing::TempDir() + "/report_test.json";
  ASSERT_TRUE(WriteReport(Sample(), path).ok());
  absl::StatusOr<Report> r = ReadReport(path);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->collectives.size(), 1u);
  std::remove(path.c_str());
  EXPECT_EQ(ReadReport(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(ReportTest, RejectsUnknownSchema) {
  nlohmann::json j = ToJson(Sample());
  j["schema"] = "xdeep.probe_report/2";
  absl::StatusOr<Report> r = ReportFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("xdeep.probe_report/2"), std::string::npos);
  j.erase("schema");
  EXPECT_FALSE(ReportFromJson(j).ok());
  EXPECT_FALSE(ParseReport("{not json").ok());
  EXPECT_FALSE(ParseReport("[1,2]").ok());
}

TEST(ReportTest, RejectsMalformedEntriesNamingTheField) {
  struct Case {
    const char* section;
    const char* field;
    nlohmann::json value;
  };
  const Case cases[] = {
      {"gemm", "m", -5},
      {"gemm", "dtype", "int8"},
      {"gemm", "pass", "backward"},
      {"gemm", "median_s", 0.0},
      {"gemm", "tflops", "fast"},
      {"gemm", "kernel", "tile 128x256"},
      {"gemm_algos", "kernel", nullptr},
      {"gemm_algos", "dtype", "int8"},
      {"collectives", "op", "all-reduce"},
      {"collectives", "scope", "x"},
      {"collectives", "busbw_gbps", -1},
      {"bandwidth", "space", "disk"},
      {"framework", "model", "vit"},
      {"framework", "device", "tpu"},
      {"framework", "layers", 0},
      {"framework", "kernels", 0},
      {"framework", "median_s", 0.0},
      {"framework", "ddp_median_s", -1.0},
      {"framework", "fsdp_median_s", 0.0},
      {"framework", "elementwise_s", -1.0},
      {"framework", "ranks", 0},
      {"framework", "straggle", 0.9},
      {"framework", "tp_median_s", 0.0},
      {"framework", "tp_linears", 0},
      {"framework", "llama_tp_median_s", 0.0},
      {"framework", "llama_tp_linears", -7},
  };
  for (const Case& c : cases) {
    nlohmann::json j = ToJson(Sample());
    j[c.section][0][c.field] = c.value;
    absl::StatusOr<Report> r = ReportFromJson(j);
    ASSERT_FALSE(r.ok()) << c.section << "." << c.field;
    EXPECT_NE(r.status().message().find(c.field), std::string::npos) << r.status();
  }
  nlohmann::json j = ToJson(Sample());
  j["gemm"][0].erase("k");
  EXPECT_FALSE(ReportFromJson(j).ok());
  j = ToJson(Sample());
  j["framework"][1]["image"] = 0;  // a ResNet entry needs its shape
  absl::StatusOr<Report> r = ReportFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("framework[1].image"), std::string::npos) << r.status();
}

TEST(ReportTest, EmptySectionsAreValid) {
  nlohmann::json j = {{"schema", kReportSchema}, {"created", "2026-11-26T01:30:00Z"}};
  absl::StatusOr<Report> r = ReportFromJson(j);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->gpu.has_value());
  EXPECT_TRUE(r->gemm.empty());
}

// The GPT's second window after the other networks' turns (data the tuner does not
// read yet): a round trip and a merge keep it; entries without it stay without it.
TEST(ReportTest, RoundTripAndMergeKeepTheLateGptWindow) {
  Report in = Sample();
  in.framework[0].late_median_s = 0.0061;
  in.framework[0].late_min_s = 0.0049;
  in.framework[0].late_p95_s = 0.0072;
  in.framework[0].late_after_s = 9.5;
  nlohmann::json j = ToJson(in);
  EXPECT_DOUBLE_EQ(j["framework"][0]["late_median_s"].get<double>(), 0.0061);
  EXPECT_FALSE(j["framework"][1].contains("late_median_s"));
  absl::StatusOr<Report> out = ReportFromJson(j);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_DOUBLE_EQ(out->framework[0].late_median_s, 0.0061);
  EXPECT_DOUBLE_EQ(out->framework[0].late_min_s, 0.0049);
  EXPECT_DOUBLE_EQ(out->framework[0].late_p95_s, 0.0072);
  EXPECT_DOUBLE_EQ(out->framework[0].late_after_s, 9.5);
  EXPECT_DOUBLE_EQ(out->framework[1].late_median_s, 0);
  Report other = Sample();
  other.framework.clear();
  absl::StatusOr<Report> merged = MergeReports({*out, other});
  ASSERT_TRUE(merged.ok()) << merged.status();
  absl::StatusOr<Report> back = ReportFromJson(ToJson(*merged));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->framework[0].late_median_s, 0.0061);
  EXPECT_DOUBLE_EQ(back->framework[0].late_after_s, 9.5);
}

// transformers' decoders of the GPT's shape taking turns with its pass (data the
// tuner does not read yet): a round trip and a merge keep their times and counts;
// entries without them stay without them.
TEST(ReportTest, RoundTripAndMergeKeepTheTransformersDecoders) {
  Report in = Sample();
  in.framework[0].hf_gpt_median_s = 0.0066;
  in.framework[0].hf_llama_median_s = 0.0231;
  in.framework[0].hf_gpt_neox_step_host_s = 0.0012;
  in.framework[0].hf_llama_kernels = 530;
  in.framework[0].hf_gpt2_module_calls = 61;
  in.framework[0].module_calls = 32;
  nlohmann::json j = ToJson(in);
  EXPECT_DOUBLE_EQ(j["framework"][0]["hf_llama_median_s"].get<double>(), 0.0231);
  EXPECT_EQ(j["framework"][0]["hf_llama_kernels"].get<int>(), 530);
  EXPECT_FALSE(j["framework"][0].contains("hf_gpt2_median_s"));
  EXPECT_FALSE(j["framework"][1].contains("module_calls"));
  Report other = Sample();
  other.framework.clear();
  absl::StatusOr<Report> merged = MergeReports({*ReportFromJson(j), other});
  ASSERT_TRUE(merged.ok()) << merged.status();
  absl::StatusOr<Report> back = ReportFromJson(ToJson(*merged));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->framework[0].hf_gpt_median_s, 0.0066);
  EXPECT_DOUBLE_EQ(back->framework[0].hf_llama_median_s, 0.0231);
  EXPECT_DOUBLE_EQ(back->framework[0].hf_gpt_neox_step_host_s, 0.0012);
  EXPECT_EQ(back->framework[0].hf_llama_kernels, 530);
  EXPECT_EQ(back->framework[0].hf_gpt2_module_calls, 61);
  EXPECT_EQ(back->framework[0].module_calls, 32);
  EXPECT_EQ(back->framework[1].hf_llama_kernels, 0);
}

// The Llama-style block's TP pass beside the GPT's (data the tuner does not read
// yet): a round trip through JSON and a merge keep it; entries without it stay
// without it.
TEST(ReportTest, RoundTripAndMergeKeepTheLlamaTensorParallelPass) {
  Report in = Sample();
  in.framework[0].llama_median_s = 0.0121;
  in.framework[0].llama_tp_median_s = 0.0583;
  in.framework[0].llama_tp_linears = 28;
  nlohmann::json j = ToJson(in);
  EXPECT_DOUBLE_EQ(j["framework"][0]["llama_tp_median_s"].get<double>(), 0.0583);
  EXPECT_FALSE(j["framework"][1].contains("llama_tp_median_s"));
  EXPECT_FALSE(j["framework"][1].contains("llama_tp_linears"));
  absl::StatusOr<Report> out = ReportFromJson(j);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_DOUBLE_EQ(out->framework[0].llama_median_s, 0.0121);
  EXPECT_DOUBLE_EQ(out->framework[0].llama_tp_median_s, 0.0583);
  EXPECT_EQ(out->framework[0].llama_tp_linears, 28);
  EXPECT_DOUBLE_EQ(out->framework[0].tp_median_s, 0.0354);  // the GPT's beside it
  EXPECT_EQ(out->framework[1].llama_tp_linears, 0);
  EXPECT_DOUBLE_EQ(out->framework[1].llama_median_s, 0);

  Report other = Sample();
  other.framework.clear();
  absl::StatusOr<Report> m = MergeReports({*out, other});
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<Report> back = ReportFromJson(ToJson(*m));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->framework.size(), 3u);
  EXPECT_DOUBLE_EQ(back->framework[0].llama_median_s, 0.0121);
  EXPECT_DOUBLE_EQ(back->framework[0].llama_tp_median_s, 0.0583);
  EXPECT_EQ(back->framework[0].llama_tp_linears, 28);
}

}  // namespace
}  // namespace xdeep::profiler

namespace xdeep::profiler {
namespace {

TEST(MergeTest, ConcatenatesSectionsAndRejectsMixedHardware) {
  Report compute = Sample();
  compute.collectives.clear();
  compute.gpu->count = 1;
  compute.elapsed_s = 3;
  Report coll = Sample();
  coll.gemm.clear();
  coll.bandwidth.clear();
  coll.attention.clear();
  coll.versions["nccl"] = "2.28.9";
  coll.elapsed_s = 4;
  absl::StatusOr<Report> m = MergeReports({compute, coll});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->gemm.size(), 1u);
  EXPECT_EQ(m->collectives.size(), 1u);
  EXPECT_EQ(m->errors.size(), 2u);
  EXPECT_EQ(m->gpu->count, 2);
  EXPECT_DOUBLE_EQ(m->elapsed_s, 7);
  EXPECT_EQ(m->versions.at("nccl"), "2.28.3,2.28.9");
  EXPECT_TRUE(ReportFromJson(ToJson(*m)).ok());

  Report other = Sample();
  other.gpu->name = "NVIDIA A100-SXM4-80GB";
  absl::StatusOr<Report> bad = MergeReports({compute, other});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("A100"), std::string::npos);
  EXPECT_FALSE(MergeReports({}).ok());
}

}  // namespace
}  // namespace xdeep::profiler
