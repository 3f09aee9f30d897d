// The kernel-aware GEMM model (tuner/gemm_kernel_table.h, FitGemmKernels):
// where cuBLAS's heuristic runs a kernel other than the fastest tile, knowing
// that kernel predicts shapes no probe timed that the best-tile model misses;
// shapes whose kernel is unknown keep the best-tile model; lookups stay cheap.
#include "tuner/gemm_kernel_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "nlohmann/json.hpp"
#include "tuner/hardware_profile.h"

namespace xdeep::tuner {
namespace {

GemmFit Truth() {
  GemmFit t;
  t.valid = true;
  t.peak_flops = 760e12;
  t.small_tile = 0.15;
  t.tile_fixed_s = 1.2e-6;
  t.fixed_s = 2.5e-6;
  t.bandwidth = 2.9e12;
  t.store_bandwidth = 1.8e12;
  t.wave_quantisation = 0.8;
  t.misaligned_input = {0.3, 0.45, 0.7};
  t.misaligned_output = {0.4, 0.6, 0.8};
  return t;
}

// A heuristic that is not "the fastest tile": large tiles wherever they make a
// wave, a split k only for long k, a non-TMA family (algorithm 21) for odd widths.
GemmKernel Heuristic(int64_t m, int64_t n, int64_t k) {
  if (n % 8 != 0 || k % 8 != 0 || m % 8 != 0) return {21, 128, 128, 1};
  const int64_t big = ((m + 127) / 128) * ((n + 255) / 256);
  if (big >= 100) return {66, 128, 256, 1};
  if (k >= 8192) return {66, 128, 128, static_cast<int>(std::min<int64_t>(4, k / 4096))};
  return {66, 64, 128, 1};
}

// What each kernel runs at against its tile grid: the non-TMA family 1.35x
// slower, the small tile 1.15x.
double TrueSeconds(const GemmFit& truth, int64_t m, int64_t n, int64_t k, GemmLayout layout,
                   const GemmKernel& kernel) {
  const double factor = kernel.algo == 21 ? 1.35 : kernel.tile_m == 64 ? 1.15 : 1.0;
  return GemmKernelSeconds(truth, m, n, k, layout, kernel) * factor;
}

std::vector<GemmPoint> Points(int layers, uint32_t seed) {
  const GemmFit truth = Truth();
  std::mt19937 rng(seed);
  const int64_t hidden[] = {512, 768, 1024, 1536, 2048, 4096, 1000, 4097, 5120, 3072};
  const int64_t tokens[] = {256, 1024, 4096, 16384, 32768};
  std::lognormal_distribution<double> noise(0.0, 0.02);
  std::vector<GemmPoint> out;
  for (int i = 0; i < layers; ++i) {
    const int64_t t = tokens[rng() % 5], in = hidden[rng() % 10], o = hidden[rng() % 10];
    for (auto [m, n, k, layout] : {std::tuple{t, o, in, GemmLayout::kForward},
                                   {t, in, o, GemmLayout::kDgrad},
                                   {o, in, t, GemmLayout::kWgrad}}) {
      const GemmKernel kernel = Heuristic(m, n, k);
      const double s = TrueSeconds(truth, m, n, k, layout, kernel) * noise(rng);
      out.push_back({m, n, k, DType::kBf16, 2.0 * m * n * k / s / 1e12, layout, kernel});
    }
  }
  return out;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

TEST(GemmKernelTableTest, KnowingTheKernelPredictsShapesTheBestTileModelMisses) {
  GemmFit start;
  start.bandwidth = Truth().bandwidth;
  const std::vector<GemmPoint> fit_points = Points(60, 1);
  const GemmFit kernel_fit = FitGemmKernels(fit_points, DType::kBf16, start);
  const GemmFit blind_fit = FitGemm(fit_points, DType::kBf16, start);
  ASSERT_TRUE(kernel_fit.valid);
  EXPECT_EQ(kernel_fit.points, 180);
  EXPECT_FALSE(kernel_fit.kernel_classes.empty());
  std::vector<double> with_kernel, blind;
  for (const GemmPoint& p : Points(60, 2)) {  // other layers, never fitted
    const double want = TrueSeconds(Truth(), p.m, p.n, p.k, p.layout, p.kernel);
    with_kernel.push_back(
        std::abs(GemmKernelSeconds(kernel_fit, p.m, p.n, p.k, p.layout, p.kernel) / want - 1));
    blind.push_back(std::abs(GemmSeconds(blind_fit, p.m, p.n, p.k, p.layout) / want - 1));
  }
  EXPECT_LT(Quantile(with_kernel, 0.5), 0.05);
  EXPECT_LT(Quantile(with_kernel, 0.95), 0.15);
  EXPECT_LT(Quantile(with_kernel, 0.95), Quantile(blind, 0.95));
}

TEST(GemmKernelTableTest, TooFewPointsWithKernelsGiveNoKernelFit) {
  std::vector<GemmPoint> points = Points(2, 3);  // 6 points
  EXPECT_FALSE(FitGemmKernels(points, DType::kBf16, GemmFit{}).valid);
  HardwareProfile hw;
  hw.gemm = points;
  FitGemmModels(&hw);
  EXPECT_EQ(hw.gemm_kernels, nullptr);
}

TEST(GemmKernelTableTest, TheProfileUsesAKnownKernelAndTheBestTileOtherwise) {
  HardwareProfile hw;
  hw.gemm = Points(40, 4);
  // The heuristic's answer for a shape nobody timed: a split k the best-tile
  // model would not choose.
  const GemmKernel split{66, 128, 128, 4};
  hw.gemm_heuristic.push_back({6144, 2560, 16384, DType::kBf16, 0, GemmLayout::kWgrad, split});
  FitGemmModels(&hw);
  ASSERT_NE(hw.gemm_kernels, nullptr);
  const GemmModel model(hw, DType::kBf16);
  const GemmFit& kernel_fit = hw.gemm_kernels->fit(DType::kBf16);
  EXPECT_DOUBLE_EQ(model.Seconds(6144, 2560, 16384, GemmLayout::kWgrad),
                   GemmKernelSeconds(kernel_fit, 6144, 2560, 16384, GemmLayout::kWgrad, split));
  // Another layout of the same sizes is another GEMM: not known.
  const GemmFit& blind = hw.gemm_fits[static_cast<int>(DType::kBf16)];
  EXPECT_DOUBLE_EQ(model.Seconds(6144, 2560, 16384, GemmLayout::kForward),
                   GemmSeconds(blind, 6144, 2560, 16384, GemmLayout::kForward));
  // fp16 has no points with kernels: the best-tile model (scaled from bf16).
  EXPECT_EQ(hw.gemm_kernels->Find(DType::kFp16, GemmLayout::kWgrad, 6144, 2560, 16384), nullptr);
  // A timed point's own kernel is known too.
  const GemmPoint& p = hw.gemm.front();
  EXPECT_NE(hw.gemm_kernels->Find(DType::kBf16, p.layout, p.m, p.n, p.k), nullptr);
}

// A probe report of `points` (their kernels in each entry) and one untimed
// shape the heuristic was asked about.
std::string ReportWith(const std::vector<GemmPoint>& points, const std::string& asked) {
  nlohmann::json doc = {{"schema", "xdeep.probe_report/1"},
                        {"created", "2026-11-27T12:00:00Z"},
                        {"gpu", {{"name", "NVIDIA H100 80GB HBM3"}, {"count", 1}, {"sm_count", 132},
                                 {"memory_bytes", 85029158912}}},
                        {"gemm", nlohmann::json::array()},
                        {"bandwidth", nlohmann::json::array()}};
  const char* passes[] = {"fwd", "dgrad", "wgrad"};
  for (const GemmPoint& p : points) {
    doc["gemm"].push_back({{"m", p.m}, {"n", p.n}, {"k", p.k}, {"dtype", "bf16"},
                           {"pass", passes[static_cast<int>(p.layout)]}, {"tflops", p.tflops},
                           {"kernel", {{"algo", p.kernel.algo}, {"tile_m", p.kernel.tile_m},
                                       {"tile_n", p.kernel.tile_n}, {"split_k", p.kernel.split_k}}}});
  }
  doc["gemm_algos"] = nlohmann::json::array({nlohmann::json::parse(asked)});
  return doc.dump();
}

TEST(GemmKernelTableTest, AProbeReportCarriesKernelsAndTheHeuristicsAnswers) {
  const std::vector<GemmPoint> points = Points(10, 7);
  auto hw = HardwareProfileFromProbeReport(
      ReportWith(points, R"({"m": 6144, "n": 2560, "k": 16384, "dtype": "bf16", "pass": "wgrad",
                             "kernel": {"algo": 66, "tile_m": 128, "tile_n": 128, "split_k": 4}})"),
      "probe.json");
  ASSERT_TRUE(hw.ok()) << hw.status();
  ASSERT_EQ(hw->gemm_heuristic.size(), 1u);
  EXPECT_EQ(hw->gemm_heuristic[0].kernel.split_k, 4);
  EXPECT_EQ(hw->gemm.front().kernel.tile_m, points.front().kernel.tile_m);
  ASSERT_NE(hw->gemm_kernels, nullptr);
  EXPECT_NE(hw->gemm_kernels->Find(DType::kBf16, GemmLayout::kWgrad, 6144, 2560, 16384), nullptr);
  // An answer without its kernel's tile is refused, naming the entry.
  auto bad = HardwareProfileFromProbeReport(
      ReportWith(points, R"({"m": 64, "n": 64, "k": 64, "dtype": "bf16", "pass": "fwd",
                             "kernel": {"algo": 66}})"),
      "probe.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gemm_algos[0]"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace xdeep::tuner
