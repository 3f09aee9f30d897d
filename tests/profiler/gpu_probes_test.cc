// Tests of the CUDA probes; skipped where no GPU is visible (the CI machine).
#include "profiler/gpu_probes.h"

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "profiler/cuda/cuda_util.h"
#include "profiler/cuda/kernels.h"

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

// Events around a batch queued after a 50 ms host delay: without the gate the delay is
// in the timing, with it the timing holds only the device work.
TEST_F(GpuProbesTest, StreamGateKeepsHostDelayOutOfTheTiming) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t start, stop;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 4096 * sizeof(float)), cudaSuccess);
  auto timed = [&](cuda::StreamGate* gate) {
    if (gate != nullptr) {
      EXPECT_TRUE(gate->Close(s, absl::Seconds(5)).ok());
    }
    EXPECT_EQ(cudaEventRecord(start, s), cudaSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(cuda::LaunchFillConstant(p, 4096, 1.0f, s), cudaSuccess);
    EXPECT_EQ(cudaEventRecord(stop, s), cudaSuccess);
    if (gate != nullptr) gate->Open();
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    float ms = 0;
    EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    return ms;
  };
  EXPECT_GE(timed(nullptr), 40.0f);  // the host delay is in an ungated timing
  cuda::StreamGate gate;
  EXPECT_LT(timed(&gate), 5.0f);
  EXPECT_EQ(gate.expired(), 0);
  cudaFree(p);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(s);
}

// A gate never opened ends by its timeout: the stream is delayed, never hung.
TEST_F(GpuProbesTest, StreamGateEndsByItsTimeout) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  {
    cuda::StreamGate gate;
    ASSERT_TRUE(gate.Close(s, absl::Milliseconds(30)).ok());
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(waited, 0.025);
    EXPECT_LT(waited, 2.0);
    gate.Open();
    EXPECT_EQ(gate.expired(), 1);
  }
  cudaStreamDestroy(s);
}

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

// A run near its time limit keeps the GEMMs it timed and says how many it skipped;
// none starts once stop_starting has passed.
TEST_F(GpuProbesTest, GemmsStopStartingAtTheRunsLimitAndSaySo) {
  GemmProbeOptions o;
  o.gemms = {GemmSpec{1024, 768, 512, "plain", "t"}};
  o.dtypes = {DType::kBf16, DType::kFp16};
  o.harness.max_samples = 5;
  std::vector<ErrorEntry> errors;
  ASSERT_EQ(RunGemmProbes(o, &errors).size(), 2u);
  ASSERT_TRUE(errors.empty());
  o.stop_starting = absl::Now();
  std::vector<GemmEntry> r = RunGemmProbes(o, &errors);
  EXPECT_TRUE(r.empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("2 of 2 GEMMs skipped (timed 0)"), std::string::npos)
      << errors[0].message;
}

// A layer's forward, dgrad and wgrad read their operands as nn.Linear stores
// them (weight, resp. output gradient, transposed); an odd width (a vocabulary)
// sits in the leading dimension it has in training. The check recomputes
// sampled elements from the stored operands, so a wrong layout fails it.
TEST_F(GpuProbesTest, LayerPassesUseTrainingsLayoutsAndPassTheCheck) {
  GemmProbeOptions o;
  o.gemms = LayerGemms("head", 256, 64, 1001);
  o.dtypes = {DType::kBf16, DType::kFp32};
  o.harness.max_samples = 5;
  std::vector<ErrorEntry> errors;
  std::vector<GemmEntry> r = RunGemmProbes(o, &errors);
  for (const ErrorEntry& e : errors) ADD_FAILURE() << e.probe << ": " << e.message;
  EXPECT_EQ(r.size(), 6u);
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
  ASSERT_EQ(r.size(), 6u);  // copy, triad, adam_update, layer_norm, softmax, bias_gelu
  for (const BandwidthEntry& e : r) EXPECT_GT(e.gbps, 10) << e.kernel;
}

// The row kernels split a row's 16-byte packets into groups of 4 in flight per thread:
// rows whose packets do not split evenly, or number fewer than 4 or than a block's
// threads, still pass the data check (first, middle and last rows, every column).
TEST_F(GpuProbesTest, DeviceBandwidthRowKernelsAtUnevenRowLengths) {
  for (int64_t cols : {int64_t{12}, int64_t{1028}, int64_t{4100}, int64_t{8196}}) {
    DeviceBandwidthOptions o;
    o.row_length = cols;
    o.elements = cols * 257;
    o.kernels = {"layer_norm", "softmax"};
    o.harness.max_samples = 3;
    std::vector<ErrorEntry> errors;
    std::vector<BandwidthEntry> r = RunDeviceBandwidth(o, &errors);
    for (const ErrorEntry& e : errors) ADD_FAILURE() << cols << ": " << e.probe << ": " << e.message;
    EXPECT_EQ(r.size(), 2u) << cols;
  }
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
