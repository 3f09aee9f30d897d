// Device memory-bandwidth probes: copy, triad and a fused AdamW update in CUDA, the
// GPU counterparts of the Kokkos host kernels. Bytes count each array read or written
// once per operation (copy 2, triad 3, Adam 7 arrays of fp32), the STREAM convention.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "profiler/cuda/cuda_util.h"
#include "profiler/cuda/kernels.h"
#include "profiler/gpu_probes.h"

namespace xdeep::profiler {
namespace {

using cuda::DeviceBuffer;

class DeviceBandwidthProbe : public Probe {
 public:
  DeviceBandwidthProbe(std::string kernel, int64_t n) : kernel_(std::move(kernel)), n_(n) {}
  ~DeviceBandwidthProbe() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string Name() const override { return absl::StrCat("cuda.", kernel_); }
  int Arrays() const { return kernel_ == "copy" ? 2 : kernel_ == "triad" ? 3 : 7; }
  int64_t BytesPerOp() const { return Arrays() * n_ * 4; }

  absl::Status Setup(const Deadline&) override {
    if (kernel_ != "copy" && kernel_ != "triad" && kernel_ != "adam_update") {
      return absl::InvalidArgumentError(absl::StrCat("unknown kernel '", kernel_, "'"));
    }
    XDEEP_CUDA_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    XDEEP_CUDA_RETURN(cudaEventCreate(&start_));
    XDEEP_CUDA_RETURN(cudaEventCreate(&stop_));
    const int buffers = kernel_ == "adam_update" ? 4 : kernel_ == "triad" ? 3 : 2;
    for (int i = 0; i < buffers; ++i) {
      if (absl::Status s = buf_[i].Allocate(n_ * sizeof(float)); !s.ok()) return s;
    }
    return Fill();
  }

  absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) override {
    XDEEP_CUDA_RETURN(cudaEventRecord(start_, stream_));
    for (int r = 0; r < reps; ++r) XDEEP_CUDA_RETURN(Launch());
    XDEEP_CUDA_RETURN(cudaEventRecord(stop_, stream_));
    if (absl::Status s = cuda::WaitEvent(stop_, deadline, nullptr); !s.ok()) return s;
    float ms = 0;
    XDEEP_CUDA_RETURN(cudaEventElapsedTime(&ms, start_, stop_));
    return ms / 1e3;
  }

  absl::Status Check(const Deadline& deadline) override {
    // Known inputs, one operation, then compare samples with a host computation.
    if (absl::Status s = Fill(); !s.ok()) return s;
    std::vector<float> before[4];
    const int64_t samples = 4096, stride = std::max<int64_t>(1, n_ / samples);
    auto gather = [&](int b, std::vector<float>* out) -> absl::Status {
      out->resize(samples);
      for (int64_t s = 0; s < samples; ++s) {
        const int64_t i = std::min(s * stride, n_ - 1);
        XDEEP_CUDA_RETURN(
            cudaMemcpy(&(*out)[s], buf_[b].as<float>() + i, 4, cudaMemcpyDeviceToHost));
      }
      return absl::OkStatus();
    };
    for (int b = 0; b < 4; ++b) {
      if (buf_[b].get() == nullptr) continue;
      if (absl::Status s = gather(b, &before[b]); !s.ok()) return s;
    }
    XDEEP_CUDA_RETURN(Launch());
    XDEEP_CUDA_RETURN(cudaEventRecord(stop_, stream_));
    if (absl::Status s = cuda::WaitEvent(stop_, deadline, nullptr); !s.ok()) return s;
    std::vector<float> after;
    if (absl::Status s = gather(0, &after); !s.ok()) return s;
    std::vector<float> m_after;
    if (kernel_ == "adam_update") {
      if (absl::Status s = gather(2, &m_after); !s.ok()) return s;
    }
    const cuda::AdamHyper h;
    for (int64_t s = 0; s < samples; ++s) {
      double expect, expect_m = 0;
      // fp32 rounding of b + k*c (one FMA or two roundings) is relative to the
      // operands, not the result: when they cancel, the result's own magnitude
      // says nothing about the error allowed.
      double magnitude = 0;
      if (kernel_ == "copy") {
        expect = before[1][s];
      } else if (kernel_ == "triad") {
        expect = before[1][s] + kScalar * before[2][s];
        magnitude = std::abs(before[1][s]) + std::abs(kScalar * before[2][s]);
      } else {
        const double g = before[1][s];
        const double m = h.beta1 * before[2][s] + (1 - h.beta1) * g;
        const double v = h.beta2 * before[3][s] + (1 - h.beta2) * g * g;
        expect = before[0][s] - h.lr * (m / (std::sqrt(v) + h.eps) + h.weight_decay * before[0][s]);
        expect_m = m;
        if (std::abs(m_after[s] - expect_m) > 1e-5 * (std::abs(expect_m) + 1e-3)) {
          return absl::DataLossError(absl::StrCat("data check failed (exp_avg) at sample ", s));
        }
      }
      if (!std::isfinite(after[s]) ||
          std::abs(after[s] - expect) > 1e-5 * (std::abs(expect) + 1e-3) + 4e-7 * magnitude) {
        return absl::DataLossError(absl::StrCat("data check failed at sample ", s, ": got ",
                                                after[s], ", expected ", expect));
      }
    }
    return absl::OkStatus();
  }

 private:
  static constexpr float kScalar = 3.0f;

  absl::Status Fill() {
    for (int b = 0; b < 4; ++b) {
      if (buf_[b].get() == nullptr) continue;
      XDEEP_CUDA_RETURN(
          cuda::LaunchFillRandom(buf_[b].get(), n_, cuda::ElemKind::kFp32, 100 + b, stream_));
    }
    if (kernel_ == "adam_update") {
      // exp_avg_sq must be non-negative, as in a real optimizer state.
      XDEEP_CUDA_RETURN(cuda::LaunchFillConstant(buf_[3].as<float>(), n_, 0.25f, stream_));
    }
    XDEEP_CUDA_RETURN(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

  cudaError_t Launch() {
    if (kernel_ == "copy")
      return cuda::LaunchCopy(buf_[0].as<float>(), buf_[1].as<float>(), n_, stream_);
    if (kernel_ == "triad") {
      return cuda::LaunchTriad(buf_[0].as<float>(), buf_[1].as<float>(), buf_[2].as<float>(),
                               kScalar, n_, stream_);
    }
    return cuda::LaunchAdam(buf_[0].as<float>(), buf_[1].as<float>(), buf_[2].as<float>(),
                            buf_[3].as<float>(), n_, cuda::AdamHyper{}, stream_);
  }

  std::string kernel_;
  int64_t n_;
  DeviceBuffer buf_[4];
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

std::vector<BandwidthEntry> RunDeviceBandwidth(const DeviceBandwidthOptions& options,
                                               std::vector<ErrorEntry>* errors) {
  std::vector<BandwidthEntry> out;
  for (const std::string& kernel : options.kernels) {
    DeviceBandwidthProbe probe(kernel, options.elements);
    absl::StatusOr<ProbeResult> r = RunProbe(probe, options.harness);
    if (!r.ok()) {
      if (errors) errors->push_back({probe.Name(), std::string(r.status().message())});
      if (absl::IsDeadlineExceeded(r.status())) break;  // the stream is still busy
      continue;
    }
    BandwidthEntry e;
    e.kernel = kernel;
    e.space = "device";
    e.backend = "cuda";
    e.bytes = probe.BytesPerOp();
    e.timing = TimingFrom(*r);
    e.gbps = e.bytes / r->per_op.median / 1e9;
    out.push_back(e);
  }
  return out;
}

}  // namespace xdeep::profiler
