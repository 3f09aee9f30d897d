// Tests of the Kokkos host bandwidth probes: sane non-zero figures, data check passes.
#include "profiler/kokkos_probes.h"

#include <Kokkos_Core.hpp>
#include <type_traits>

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

// Kokkos allows one initialize per process.
class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

TEST(KokkosProbesTest, BandwidthFiguresAreSane) {
  KokkosBandwidthOptions o;
  o.elements = int64_t{1} << 20;  // 8 MiB per array: quick on a CI core
  o.harness.max_samples = 5;
  std::vector<ErrorEntry> errors;
  std::vector<BandwidthEntry> r = RunKokkosHostBandwidth(o, &errors);
  for (const ErrorEntry& e : errors) ADD_FAILURE() << e.probe << ": " << e.message;
  ASSERT_EQ(r.size(), 3u);
  const int64_t arrays[] = {2, 3, 7};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].space, "host");
    EXPECT_EQ(r[i].backend, "kokkos");
    EXPECT_EQ(r[i].bytes, arrays[i] * o.elements * 8) << r[i].kernel;
    EXPECT_GT(r[i].timing.median_s, 0);
    EXPECT_LE(r[i].timing.min_s, r[i].timing.median_s);
    EXPECT_LE(r[i].timing.median_s, r[i].timing.p95_s);
    EXPECT_GE(r[i].timing.iterations, 3);
    // Any real memory system moves between 0.1 GB/s and 10 TB/s.
    EXPECT_GT(r[i].gbps, 0.1) << r[i].kernel;
    EXPECT_LT(r[i].gbps, 1e4) << r[i].kernel;
    EXPECT_NEAR(r[i].gbps, r[i].bytes / r[i].timing.median_s / 1e9, 1e-9 * r[i].gbps);
  }
}

TEST(KokkosProbesTest, UnknownKernelIsAnErrorNotAFigure) {
  KokkosBandwidthOptions o;
  o.elements = 1024;
  o.kernels = {"scale"};
  std::vector<ErrorEntry> errors;
  EXPECT_TRUE(RunKokkosHostBandwidth(o, &errors).empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("scale"), std::string::npos);
}

TEST(KokkosProbesTest, TinyTimeLimitEndsInTime) {
  KokkosBandwidthOptions o;
  o.elements = int64_t{1} << 22;
  o.kernels = {"adam_update"};
  o.harness.time_limit = absl::Milliseconds(1);
  o.harness.max_samples = 1000;
  std::vector<ErrorEntry> errors;
  const auto t0 = std::chrono::steady_clock::now();
  RunKokkosHostBandwidth(o, &errors);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_EQ(errors.size(), 1u);
}

TEST(KokkosProbesTest, DeviceSpaceRunsOrSaysWhyNot) {
  KokkosBandwidthOptions o;
  o.elements = int64_t{1} << 16;
  o.kernels = {"triad"};
  o.harness.max_samples = 3;
  std::vector<ErrorEntry> errors;
  std::vector<BandwidthEntry> r = RunKokkosDeviceBandwidth(o, &errors);
  if (std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace>) {
    EXPECT_TRUE(r.empty());
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].message.find("no device backend"), std::string::npos);
  } else {
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].space, "device");
  }
}

TEST(KokkosProbesTest, VersionNamesTheSpace) {
  EXPECT_NE(KokkosVersionString().find("Serial"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::profiler
