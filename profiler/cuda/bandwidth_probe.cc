// Device memory-bandwidth probes in CUDA: copy, triad, a fused AdamW update, layer norm,
// softmax and bias + GeLU (profiler/bandwidth_kernels.h), the hand-written counterparts
// of the Kokkos kernels. Bytes count each array read or written once per operation
// (copy 2, triad 3, Adam 7 arrays of fp32), the STREAM convention.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "profiler/bandwidth_kernels.h"
#include "profiler/cuda/cuda_util.h"
#include "profiler/cuda/kernels.h"
#include "profiler/gpu_probes.h"
#include "profiler/kokkos_row_launch.h"

namespace xdeep::profiler {
namespace {

using cuda::DeviceBuffer;

// Whether the Kokkos probe runs its resident softmax on this device (its choice from the
// device's properties, profiler/kokkos_row_launch.h): this twin then runs the resident
// kernel too, for rows it can hold, so the two compare like for like. Elsewhere (H100:
// grouped) the three-pass kernel, as before.
// The resident twin's block: 256 threads x 4 packets, the Kokkos form's shape.
constexpr int kSoftmaxResidentThreads = 256;
bool KokkosTakesResidentSoftmax() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  auto attribute = [device](cudaDeviceAttr a) {
    int v = 0;
    return cudaDeviceGetAttribute(&v, a, device) == cudaSuccess ? v : 0;
  };
  kokkos::DeviceProperties d;
  d.multiprocessors = attribute(cudaDevAttrMultiProcessorCount);
  d.peak_bytes_per_second = 2.0 * attribute(cudaDevAttrMemoryClockRate) * 1e3 *
                            attribute(cudaDevAttrGlobalMemoryBusWidth) / 8;
  d.max_threads_per_multiprocessor = attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  d.registers_per_multiprocessor = attribute(cudaDevAttrMaxRegistersPerMultiprocessor);
  return kokkos::ChooseRowLaunch(d).softmax_form == kokkos::RowForm::kResident;
}

class DeviceBandwidthProbe : public Probe {
 public:
  DeviceBandwidthProbe(std::string kernel, int64_t n, int64_t cols)
      : kernel_(std::move(kernel)), n_(n), cols_(cols), info_(FindBandwidthKernel(kernel_)) {}
  ~DeviceBandwidthProbe() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string Name() const override { return absl::StrCat("cuda.", kernel_); }
  int64_t BytesPerOp() const { return info_ ? BandwidthBytes(*info_, n_ / cols_, cols_) : 0; }

  absl::Status Setup(const Deadline&) override {
    if (!info_) return absl::InvalidArgumentError(absl::StrCat("unknown kernel '", kernel_, "'"));
    if (cols_ <= 0 || cols_ % 4 != 0 || n_ % cols_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "row length ", cols_, " must be a positive multiple of 4 dividing ", n_, " elements"));
    }
    XDEEP_CUDA_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    XDEEP_CUDA_RETURN(cudaEventCreate(&start_));
    XDEEP_CUDA_RETURN(cudaEventCreate(&stop_));
    // Buffers 0.. as profiler/kokkos_kernels.h numbers them; row vectors are cols long.
    std::vector<int64_t> sizes = {n_, n_};
    if (kernel_ == "triad") sizes = {n_, n_, n_};
    if (kernel_ == "adam_update") sizes = {n_, n_, n_, n_};
    if (kernel_ == "layer_norm") sizes = {n_, n_, cols_, cols_};
    if (kernel_ == "softmax") {
      sizes = {n_};
      softmax_resident_ = cols_ <= cuda::kSoftmaxResidentMaxCols && KokkosTakesResidentSoftmax();
    }
    if (kernel_ == "bias_gelu") sizes = {n_, n_, cols_};
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (absl::Status s = buf_[i].Allocate(sizes[i] * sizeof(float)); !s.ok()) return s;
      size_[i] = sizes[i];
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
    if (kernel_ == "layer_norm" || kernel_ == "softmax" || kernel_ == "bias_gelu")
      return CheckWithInputs(deadline);
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
  static constexpr float kEps = 1e-5f;

  absl::StatusOr<std::vector<float>> Copy(int b, int64_t begin, int64_t count) {
    std::vector<float> out(count);
    XDEEP_CUDA_RETURN(cudaMemcpy(out.data(), buf_[b].as<float>() + begin, count * 4,
                                 cudaMemcpyDeviceToHost));
    return out;
  }

  // Row kernels and bias + GeLU: copy the inputs of the first, middle and last rows, run
  // once, recompute those rows on the host in double precision.
  absl::Status CheckWithInputs(const Deadline& deadline) {
    if (absl::Status s = Fill(); !s.ok()) return s;
    const int64_t rows = n_ / cols_;
    const int64_t picked[] = {0, rows / 2, rows - 1};
    const int in = kernel_ == "softmax" ? 0 : 1;
    std::vector<std::vector<float>> x;
    for (int64_t r : picked) {
      absl::StatusOr<std::vector<float>> v = Copy(in, r * cols_, cols_);
      if (!v.ok()) return v.status();
      x.push_back(*std::move(v));
    }
    std::vector<float> w, b;
    if (kernel_ != "softmax") {
      absl::StatusOr<std::vector<float>> v = Copy(2, 0, cols_);
      if (!v.ok()) return v.status();
      w = *std::move(v);
    }
    if (kernel_ == "layer_norm") {
      absl::StatusOr<std::vector<float>> v = Copy(3, 0, cols_);
      if (!v.ok()) return v.status();
      b = *std::move(v);
    }
    XDEEP_CUDA_RETURN(Launch());
    XDEEP_CUDA_RETURN(cudaEventRecord(stop_, stream_));
    if (absl::Status s = cuda::WaitEvent(stop_, deadline, nullptr); !s.ok()) return s;
    for (size_t k = 0; k < x.size(); ++k) {
      absl::StatusOr<std::vector<float>> got = Copy(0, picked[k] * cols_, cols_);
      if (!got.ok()) return got.status();
      const std::vector<double> expect = Reference(x[k], w, b);
      for (int64_t j = 0; j < cols_; ++j) {
        const double e = expect[j];
        if (!std::isfinite((*got)[j]) || std::abs((*got)[j] - e) > 1e-4 * std::abs(e) + 1e-5) {
          return absl::DataLossError(absl::StrCat("data check failed (", kernel_, ") at row ",
                                                  picked[k], " column ", j, ": got ", (*got)[j],
                                                  ", expected ", e));
        }
      }
    }
    return absl::OkStatus();
  }

  std::vector<double> Reference(const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<float>& b) const {
    const size_t n = x.size();
    std::vector<double> y(n);
    if (kernel_ == "bias_gelu") {
      for (size_t j = 0; j < n; ++j) {
        const double v = static_cast<double>(x[j]) + w[j];
        y[j] = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      }
    } else if (kernel_ == "softmax") {
      double mx = x[0], sum = 0;
      for (float v : x) mx = std::max<double>(mx, v);
      for (float v : x) sum += std::exp(v - mx);
      for (size_t j = 0; j < n; ++j) y[j] = std::exp(x[j] - mx) / sum;
    } else {
      double mean = 0, var = 0;
      for (float v : x) mean += v;
      mean /= n;
      for (float v : x) var += (v - mean) * (v - mean);
      const double rstd = 1 / std::sqrt(var / n + kEps);
      for (size_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * w[j] + b[j];
    }
    return y;
  }

  absl::Status Fill() {
    for (int b = 0; b < 4; ++b) {
      if (buf_[b].get() == nullptr) continue;
      XDEEP_CUDA_RETURN(cuda::LaunchFillRandom(buf_[b].get(), size_[b], cuda::ElemKind::kFp32,
                                               100 + b, stream_));
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
    if (kernel_ == "layer_norm") {
      return cuda::LaunchLayerNormRows(buf_[0].as<float>(), buf_[1].as<float>(),
                                       buf_[2].as<float>(), buf_[3].as<float>(), n_ / cols_,
                                       cols_, kEps, stream_);
    }
    if (kernel_ == "softmax" && softmax_resident_) {
      return cuda::LaunchSoftmaxRowsResident(buf_[0].as<float>(), n_ / cols_, cols_, 1.f,
                                             kSoftmaxResidentThreads, stream_);
    }
    if (kernel_ == "softmax") {
      return cuda::LaunchSoftmaxRows(buf_[0].get(), n_ / cols_, cols_, cuda::ElemKind::kFp32, 1.f,
                                     false, stream_);
    }
    if (kernel_ == "bias_gelu") {
      return cuda::LaunchBiasGelu(buf_[0].as<float>(), buf_[1].as<float>(), buf_[2].as<float>(),
                                  n_, cols_, stream_);
    }
    return cuda::LaunchAdam(buf_[0].as<float>(), buf_[1].as<float>(), buf_[2].as<float>(),
                            buf_[3].as<float>(), n_, cuda::AdamHyper{}, stream_);
  }

  std::string kernel_;
  int64_t n_;
  int64_t cols_;
  const BandwidthKernel* info_;
  bool softmax_resident_ = false;
  DeviceBuffer buf_[4];
  int64_t size_[4] = {0, 0, 0, 0};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

std::vector<BandwidthEntry> RunDeviceBandwidth(const DeviceBandwidthOptions& options,
                                               std::vector<ErrorEntry>* errors) {
  std::vector<BandwidthEntry> out;
  for (const std::string& kernel : options.kernels) {
    DeviceBandwidthProbe probe(kernel, options.elements, options.row_length);
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
