// Probe sets as xdeep-probe runs them.
#include "profiler/suites.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace xdeep::profiler {

std::vector<GemmSpec> DefaultGemms() {
  std::vector<GemmSpec> out = {GemmSpec{8192, 8192, 8192, "plain", "square"}};
  for (auto& [name, in, o] :
       std::vector<std::tuple<std::string, int64_t, int64_t>>{{"attn.qkv", 4096, 12288},
                                                              {"attn.proj", 4096, 4096},
                                                              {"mlp.fc1", 4096, 16384},
                                                              {"mlp.fc2", 16384, 4096}}) {
    for (GemmSpec& g : LayerGemms(name, 8192, in, o)) out.push_back(g);
  }
  return out;
}

std::vector<GemmSpec> ModelAnchorGemms() {
  // (tokens, in, out): misaligned dimensions of 2, 4 and 8 bytes (bf16) at two
  // sizes, small and skinny layers, tall convolution-like ones (and a 7x7x3
  // stem), one large; each in its three passes. The four first convolutions
  // (3 input channels, im2col k = 27 or 147, up to 1.6 M pixels) are element-wise
  // kernels whose result stores, not their loads, take most of the time where
  // the output is wide: the stem alone did not pin that rate
  // (bench/validate/gemm_model_calibration.md, "Session 23 (h23g)").
  const std::tuple<const char*, int64_t, int64_t, int64_t> anchors[] = {
      {"align2", 4096, 1024, 4097},  {"align4", 4096, 1024, 4098},  {"align8", 4096, 1024, 4100},
      {"small1", 64, 1024, 1024},    {"small2", 256, 4096, 4096},   {"small3", 128, 512, 2048},
      {"tall1", 50176, 64, 64},      {"tall2", 12544, 576, 128},    {"tall3", 3136, 1152, 256},
      {"tall4", 784, 4608, 512},     {"big", 16384, 4096, 4096},    {"align2b", 1024, 2048, 1001},
      {"align4b", 2048, 1026, 3072}, {"align8b", 2048, 1540, 1540}, {"stem", 25088, 147, 64},
      {"conv1a", 401408, 27, 64},    {"conv1b", 100352, 27, 256},   {"conv1c", 401408, 147, 24},
      {"conv1d", 1605632, 27, 32}};
  std::vector<GemmSpec> out;
  for (const auto& [name, tokens, in, o] : anchors) {
    for (GemmSpec& g : LayerGemms(absl::StrCat("anchor.", name), tokens, in, o)) out.push_back(g);
  }
  return out;
}

std::vector<AttentionSpec> DefaultAttention() { return {AttentionSpec{4, 32, 2048, 128, true}}; }

absl::StatusOr<Report> RunComputeSuite(const ComputeSuiteOptions& options) {
  const bool cpu = options.suite == "cpu" || options.suite == "all";
  const bool memory = options.suite == "memory";
  const bool heuristic = options.suite == "gemm-heuristic";
  const bool gpu = options.suite == "gpu" || options.suite == "all" || memory || heuristic;
  if (!cpu && !gpu)
    return absl::InvalidArgumentError(absl::StrCat("unknown suite '", options.suite, "'"));
  if (!KokkosInitialized()) return absl::FailedPreconditionError("Kokkos is not initialised");
  const absl::Time start = absl::Now();
  Report report = NewReport();
  report.versions["xdeep_probe"] = "0.1.0";
  report.versions["kokkos"] = KokkosVersionString();
  if (cpu) {
    for (BandwidthEntry& e : RunKokkosHostBandwidth(options.host_bandwidth, &report.errors)) {
      report.bandwidth.push_back(e);
    }
  }
  // Kokkos picks its device itself (KOKKOS_DEVICE_ID, else the first visible one); the
  // CUDA probes below bind device 0, the same one.
  if ((cpu && options.kokkos_device) || (gpu && !heuristic && KokkosHasDeviceSpace())) {
    for (BandwidthEntry& e :
         RunKokkosDeviceBandwidth(options.kokkos_device_bandwidth, &report.errors)) {
      report.bandwidth.push_back(e);
    }
    if (KokkosHasDeviceSpace()) report.versions["kokkos_row_launch"] = KokkosRowLaunchString();
  }
  if (gpu && (BuiltWithCuda() || !memory)) {
    if (absl::Status s = SelectDevice(0); !s.ok()) {
      report.errors.push_back({"gpu", std::string(s.message())});
    } else {
      absl::StatusOr<GpuInfo> info = QueryGpu();
      if (info.ok()) {
        GpuInfo g = *info;
        g.count = 1;  // the compute set measures one GPU
        report.gpu = g;
        report.gpus_per_node = info->count;
      }
      AddGpuVersions(&report.versions);
      if (heuristic) {
        report.gemm_algos = QueryGemmHeuristic(options.gemm, &report.errors);
        report.elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
        return report;
      }
      if (!memory) {
        for (GemmEntry& e : RunGemmProbes(options.gemm, &report.errors)) report.gemm.push_back(e);
        for (AttentionEntry& e : RunAttentionProbes(options.attention, &report.errors))
          report.attention.push_back(e);
      }
      for (BandwidthEntry& e : RunDeviceBandwidth(options.device_bandwidth, &report.errors)) {
        report.bandwidth.push_back(e);
      }
    }
  }
  report.elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
  return report;
}

absl::StatusOr<Report> RunCollectiveSuite(const DistEnv& env, const CollectiveOptions& options) {
  const absl::Time start = absl::Now();
  Report report = NewReport();
  report.versions["xdeep_probe"] = "0.1.0";
  report.nodes = env.nodes;
  report.ranks = env.world_size;
  report.gpus_per_node = env.local_size;
  absl::Status s = RunCollectives(env, options, &report);
  if (!s.ok()) {
    report.errors.push_back({"nccl", std::string(s.message())});
  } else {
    absl::StatusOr<GpuInfo> info = QueryGpu();
    if (info.ok()) {
      report.gpu = *info;
      report.gpu->count = env.world_size;
    }
  }
  AddGpuVersions(&report.versions);
  report.elapsed_s = absl::ToDoubleSeconds(absl::Now() - start);
  return report;
}

}  // namespace xdeep::profiler
