// Tests of the CUDA probes; skipped where no GPU is visible (the CI machine).
#include "profiler/gpu_probes.h"

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

class GpuProbesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_TRUE(SelectDevice(0).ok());
  }
};

TEST(GpuBuildTest, BuiltWithCuda) { EXPECT_TRUE(BuiltWithCuda()); }

TEST_F(GpuProbesTest, GemmAllDtypesPassTheCheck) {
  GemmProbeOptions o;
  o.gemms = {GemmSpec{1024, 768, 512, "plain", "t"}};
  o.dtypes = {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32};
  o.harness.max_samples = 5;
  std::vector<ErrorEntry> errors;
  std::vector<GemmEntry> r = RunGemmProbes(o, &errors);
  for (const ErrorEntry& e : errors) ADD_FAILURE() << e.probe << ": " << e.message;
  ASSERT_EQ(r.size(), 4u);
  for (const GemmEntry& e : r) {
    EXPECT_GT(e.tflops, 0.1) << e.dtype;
    EXPECT_LT(e.tflops, 5000) << e.dtype;
  }
}

TEST_F(GpuProbesTest, AttentionPassesTheCheck) {
  AttentionProbeOptions o;
  o.shapes = {AttentionSpec{2, 4, 256, 64, false}, AttentionSpec{2, 4, 256, 64, true}};
  o.dtypes = {DType::kBf16, DType::kFp16};
  o.harness.max_samples = 5;
  std::vector<ErrorEntry> errors;
  std::vector<AttentionEntry> r = RunAttentionProbes(o, &errors);
  for (const ErrorEntry& e : errors) ADD_FAILURE() << e.probe << ": " << e.message;
  ASSERT_EQ(r.size(), 4u);
  for (const AttentionEntry& e : r) EXPECT_GT(e.tflops, 0.01);
}

TEST_F(GpuProbesTest, DeviceBandwidth) {
  DeviceBandwidthOptions o;
  o.elements = int64_t{1} << 24;
  o.harness.max_samples = 5;
  std::vector<ErrorEntry> errors;
  std::vector<BandwidthEntry> r = RunDeviceBandwidth(o, &errors);
  for (const ErrorEntry& e : errors) ADD_FAILURE() << e.probe << ": " << e.message;
  ASSERT_EQ(r.size(), 3u);
  for (const BandwidthEntry& e : r) EXPECT_GT(e.gbps, 10) << e.kernel;
}

TEST_F(GpuProbesTest, SingleRankCollectives) {
  CollectiveOptions o;
  o.min_bytes = 1024;
  o.max_bytes = 1 << 20;
  o.factor = 32;
  o.samples = 3;
  Report r;
  absl::Status s = RunCollectives(DistEnv{}, o, &r);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(r.collectives.size(), 6u * 3);
}

}  // namespace
}  // namespace xdeep::profiler
