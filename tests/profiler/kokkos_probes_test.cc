// Tests of the Kokkos bandwidth probes: sane non-zero figures, data checks pass, bad
// options are errors.
#include "profiler/kokkos_probes.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

// Kokkos allows one initialize per process.
class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { runtime_ = std::make_unique<kokkos::Runtime>(); }
  void TearDown() override { runtime_.reset(); }

 private:
  std::unique_ptr<kokkos::Runtime> runtime_;
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

TEST(KokkosProbesTest, BandwidthFiguresAreSane) {
  KokkosBandwidthOptions o;
  o.elements = int64_t{1} << 20;  // 4 MiB per array: quick on a CI core
  o.row_length = 1024;
  o.harness.max_samples = 5;
  std::vector<ErrorEntry> errors;
  std::vector<BandwidthEntry> r = RunKokkosHostBandwidth(o, &errors);
  for (const ErrorEntry& e : errors) ADD_FAILURE() << e.probe << ": " << e.message;
  ASSERT_EQ(r.size(), 6u);
  // Full arrays and row-long vectors of fp32 per operation.
  const std::pair<const char*, int64_t> expect[] = {
      {"copy", 2 * o.elements},      {"triad", 3 * o.elements},
      {"adam_update", 7 * o.elements}, {"layer_norm", 2 * o.elements + 2 * 1024},
      {"softmax", 2 * o.elements},   {"bias_gelu", 2 * o.elements + 1024}};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].kernel, expect[i].first);
    EXPECT_EQ(r[i].space, "host");
    EXPECT_EQ(r[i].backend, "kokkos");
    EXPECT_EQ(r[i].bytes, expect[i].second * 4) << r[i].kernel;
    EXPECT_GT(r[i].timing.median_s, 0);
    EXPECT_LE(r[i].timing.min_s, r[i].timing.median_s);
    EXPECT_LE(r[i].timing.median_s, r[i].timing.p95_s);
    EXPECT_GE(r[i].timing.iterations, 3);
    // Any real memory system moves between 0.01 GB/s (bias_gelu's tanh on a busy CI
    // core is compute bound) and 10 TB/s.
    EXPECT_GT(r[i].gbps, 0.01) << r[i].kernel;
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
  if (!KokkosHasDeviceSpace()) {
    EXPECT_TRUE(r.empty());
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].message.find("no device backend"), std::string::npos);
  } else {
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].space, "device");
  }
}

TEST(KokkosProbesTest, RowLengthMustDivideIntoPackets) {
  KokkosBandwidthOptions o;
  o.elements = 4096;
  o.row_length = 6;  // not a multiple of 4: the kernels move 16-byte packets
  o.kernels = {"layer_norm"};
  std::vector<ErrorEntry> errors;
  EXPECT_TRUE(RunKokkosHostBandwidth(o, &errors).empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("multiple of 4"), std::string::npos) << errors[0].message;
}

// The data check compares with a host reference: a kernel that wrote nothing (or the
// wrong rows) would fail it. Reading back through the kernel set shows the reference
// and the kernel agree on a row that is not the first.
TEST(KokkosProbesTest, RowKernelsMatchTheReference) {
  std::string why;
  auto set = kokkos::MakeKernelSet("layer_norm", 8, 64, kokkos::Space::kHost, &why);
  ASSERT_NE(set, nullptr) << why;
  set->Fill();
  const std::vector<float> before = set->Read(0, 3 * 64, 64);
  set->Launch();
  const std::vector<float> y = set->Read(0, 3 * 64, 64);
  double mean = 0, sq = 0;
  for (int j = 0; j < 64; ++j) mean += (y[j] - kokkos::Pattern(j, 4)) / kokkos::Pattern(j, 3);
  mean /= 64;
  for (int j = 0; j < 64; ++j) {
    const double z = (y[j] - kokkos::Pattern(j, 4)) / kokkos::Pattern(j, 3);
    sq += z * z;
  }
  EXPECT_NEAR(mean, 0, 1e-5);       // normalised: zero mean
  EXPECT_NEAR(sq / 64, 1, 1e-3);    // and unit variance
  EXPECT_NE(before, y);             // the output buffer was written
}

// The row kernels give each thread a group of packets spread over the row (2 on every
// backend): rows whose packets do not split evenly into groups, or are fewer than the
// team's threads, still pass the data check (first, middle and last row against the
// host reference), on the host and, with a device Kokkos, on the device.
TEST(KokkosProbesTest, RowKernelsMatchTheReferenceForAnyRowLength) {
  for (const int64_t cols : {12, 52, 4100}) {
    KokkosBandwidthOptions o;
    o.elements = cols * 40;
    o.row_length = cols;
    o.kernels = {"layer_norm", "softmax"};
    o.harness.max_samples = 3;
    std::vector<ErrorEntry> errors;
    EXPECT_EQ(RunKokkosHostBandwidth(o, &errors).size(), 2u) << cols;
    if (KokkosHasDeviceSpace()) {
      EXPECT_EQ(RunKokkosDeviceBandwidth(o, &errors).size(), 2u) << cols;
    }
    for (const ErrorEntry& e : errors) ADD_FAILURE() << cols << " " << e.probe << ": " << e.message;
  }
}

// Every form of the row kernels, whichever the device would choose, passes the data
// check at rows that do not split evenly into the team's packet groups (nor, in the lanes
// form, into its members' lanes), on the host and, with a device Kokkos, on the device;
// the resident softmax at rows it holds whole (4096 floats), in part (12, 52, 1000: slots
// past the row) and, through the lanes form, rows it cannot hold (4100).
TEST(KokkosProbesTest, EveryRowLaunchMatchesTheReference) {
  using kokkos::RowForm;
  const std::vector<kokkos::RowLaunch> launches = {{RowForm::kGrouped, 0, RowForm::kGrouped},
                                                   {RowForm::kCompact, 0, RowForm::kCompact},
                                                   {RowForm::kLanes, 0, RowForm::kLanes},
                                                   {RowForm::kCompact, 0, RowForm::kLanes},
                                                   {RowForm::kWide, 0, RowForm::kWide},
                                                   {RowForm::kCompact, 0, RowForm::kResident}};
  for (const kokkos::RowLaunch& launch : launches) {
    for (const int64_t cols : {12, 52, 1000, 4096, 4100}) {
      KokkosBandwidthOptions o;
      o.elements = cols * 40;
      o.row_length = cols;
      o.kernels = {"layer_norm", "softmax"};
      o.row_launch = launch;
      o.harness.max_samples = 3;
      std::vector<ErrorEntry> errors;
      EXPECT_EQ(RunKokkosHostBandwidth(o, &errors).size(), 2u);
      if (KokkosHasDeviceSpace()) {
        EXPECT_EQ(RunKokkosDeviceBandwidth(o, &errors).size(), 2u);
      }
      for (const ErrorEntry& e : errors) {
        ADD_FAILURE() << kokkos::Describe(launch) << ", " << cols << " " << e.probe << ": "
                      << e.message;
      }
    }
  }
}

// The device's properties as the backend reports them: all known on a CUDA device (so the
// launch follows the card), none on a host Kokkos (which keeps the grouped form).
TEST(KokkosProbesTest, DevicePropertiesAreReadFromTheBackend) {
  const kokkos::DeviceProperties d = kokkos::QueryDeviceProperties();
  const std::string v = KokkosVersionString();
  if (v.find("(Cuda)") != std::string::npos) {
    EXPECT_GT(d.multiprocessors, 0);
    EXPECT_GT(d.peak_bytes_per_second, 1e11);  // HBM and GDDR: 0.1-10 TB/s
    EXPECT_LT(d.peak_bytes_per_second, 1e14);
    EXPECT_GE(d.max_threads_per_multiprocessor, 1024);
    EXPECT_GE(d.registers_per_multiprocessor, 32768);
    std::printf("device: %d SMs, %.0f GB/s peak; row kernels: %s\n", d.multiprocessors,
                d.peak_bytes_per_second / 1e9, KokkosRowLaunchString().c_str());
  } else if (!KokkosHasDeviceSpace()) {
    EXPECT_EQ(d.multiprocessors, 0);
    EXPECT_EQ(kokkos::DeviceRowLaunch().form, kokkos::RowForm::kGrouped);
  }
}

TEST(KokkosProbesTest, VersionNamesTheSpace) {
  const std::string v = KokkosVersionString();
  EXPECT_NE(v.find(" ("), std::string::npos) << v;
  if (!KokkosHasDeviceSpace()) {
    // A host Kokkos: Debian's Serial, or a site's OpenMP / Threads / HPX build.
    const bool host_backend = v.find("(Serial)") != std::string::npos ||
                              v.find("(OpenMP)") != std::string::npos ||
                              v.find("(Threads)") != std::string::npos ||
                              v.find("(HPX)") != std::string::npos;
    EXPECT_TRUE(host_backend) << v;
  }
}

}  // namespace
}  // namespace xdeep::profiler
