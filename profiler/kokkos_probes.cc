// Kokkos bandwidth probes: the harness around kokkos_kernels.h and the data checks,
// which recompute sampled outputs on the host in double precision.
#include "profiler/kokkos_probes.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "profiler/bandwidth_kernels.h"

namespace xdeep::profiler {
namespace {

using kokkos::KernelSet;
using kokkos::Pattern;

double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

class KokkosBandwidthProbe : public Probe {
 public:
  KokkosBandwidthProbe(std::string kernel, const KokkosBandwidthOptions& o, kokkos::Space space)
      : kernel_(std::move(kernel)),
        cols_(o.row_length),
        rows_(o.row_length > 0 ? o.elements / o.row_length : 0),
        space_(space),
        row_launch_(o.row_launch) {}

  std::string Name() const override { return absl::StrCat("kokkos.", kernel_); }

  int64_t BytesPerOp() const {
    const BandwidthKernel* k = FindBandwidthKernel(kernel_);
    return k ? BandwidthBytes(*k, rows_, cols_) : 0;
  }

  absl::Status Setup(const Deadline&) override {
    if (cols_ <= 0 || cols_ % 4 != 0 || rows_ <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("row length ", cols_, " must be a positive multiple of 4 and at most the ",
                       rows_ * cols_, " elements per array"));
    }
    std::string why;
    set_ = kokkos::MakeKernelSet(kernel_, rows_, cols_, space_, &why,
                                 row_launch_ ? &*row_launch_ : nullptr);
    if (!set_) return absl::InvalidArgumentError(why);
    set_->Fill();
    return absl::OkStatus();
  }

  absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      set_->Launch();
      // Kernels cannot be interrupted; checking between operations bounds the overrun
      // to one operation (a fence keeps device backends from queueing ahead).
      if (deadline.Expired()) {
        set_->Fence();
        return absl::DeadlineExceededError("time limit reached");
      }
    }
    set_->Fence();  // the clock stops only after the work is done
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  absl::Status Check(const Deadline&) override {
    // Re-fill, run once, compare samples with a double-precision host reference.
    set_->Fill();
    set_->Launch();
    if (IsRowKernel(kernel_)) return CheckRows();
    return CheckPointwise();
  }

 private:
  static absl::Status Compare(const char* what, int64_t i, double got, double expect,
                              double tolerance) {
    if (std::isfinite(got) && std::abs(got - expect) <= tolerance) return absl::OkStatus();
    return absl::DataLossError(absl::StrCat("data check failed (", what, ") at element ", i,
                                            ": got ", got, ", expected ", expect));
  }

  // Eight 1024-element chunks spread over the arrays.
  absl::Status CheckPointwise() {
    const int64_t n = rows_ * cols_, chunk = std::min<int64_t>(1024, n);
    for (int c = 0; c < 8; ++c) {
      const int64_t begin = (n - chunk) / 7 * c / 4 * 4;
      const std::vector<float> out = set_->Read(0, begin, chunk);
      std::vector<float> m_out;
      if (kernel_ == "adam_update") m_out = set_->Read(2, begin, chunk);
      for (int64_t k = 0; k < chunk; ++k) {
        const int64_t i = begin + k;
        absl::Status s;
        if (kernel_ == "copy") {
          s = Compare("copy", i, out[k], Pattern(i, 2), 0);
        } else if (kernel_ == "triad") {
          const double b = Pattern(i, 2), c3 = kokkos::kTriadScalar * Pattern(i, 3);
          s = Compare("triad", i, out[k], b + c3, 4e-7 * (b + c3));
        } else if (kernel_ == "adam_update") {
          const kokkos::AdamHyper h;
          const double g = Pattern(i, 2);
          const double m = h.beta1 * Pattern(i, 3) + (1 - h.beta1) * g;
          const double v = h.beta2 * Pattern(i, 4) + (1 - h.beta2) * g * g;
          const double p0 = Pattern(i, 1);
          const double p = p0 - h.lr * (m / (std::sqrt(v) + h.eps) + h.weight_decay * p0);
          s = Compare("adam params", i, out[k], p, 1e-6 * std::abs(p));
          if (s.ok()) s = Compare("adam exp_avg", i, m_out[k], m, 1e-6 * std::abs(m));
        } else {
          const double y = GeluTanh(Pattern(i, 2) + Pattern(i % cols_, 3));
          s = Compare("bias_gelu", i, out[k], y, 1e-5 * std::abs(y) + 1e-6);
        }
        if (!s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // First, middle and last rows, whole.
  absl::Status CheckRows() {
    for (const int64_t r : {int64_t{0}, rows_ / 2, rows_ - 1}) {
      const std::vector<float> out = set_->Read(0, r * cols_, cols_);
      std::vector<double> x(cols_);
      const int salt = kernel_ == "softmax" ? 1 : 2;
      for (int64_t j = 0; j < cols_; ++j) x[j] = Pattern(r * cols_ + j, salt);
      if (kernel_ == "softmax") {
        const double mx = *std::max_element(x.begin(), x.end());
        double sum = 0;
        for (double v : x) sum += std::exp(v - mx);
        for (int64_t j = 0; j < cols_; ++j) {
          const double y = std::exp(x[j] - mx) / sum;
          if (absl::Status s = Compare("softmax", r * cols_ + j, out[j], y, 1e-4 * y); !s.ok())
            return s;
        }
      } else {
        double mean = 0, var = 0;
        for (double v : x) mean += v;
        mean /= cols_;
        for (double v : x) var += (v - mean) * (v - mean);
        const double rstd = 1 / std::sqrt(var / cols_ + kokkos::kLayerNormEps);
        for (int64_t j = 0; j < cols_; ++j) {
          const double y = (x[j] - mean) * rstd * Pattern(j, 3) + Pattern(j, 4);
          if (absl::Status s = Compare("layer_norm", r * cols_ + j, out[j], y, 1e-4);
              !s.ok())
            return s;
        }
      }
    }
    return absl::OkStatus();
  }

  std::string kernel_;
  int64_t cols_, rows_;
  kokkos::Space space_;
  std::optional<kokkos::RowLaunch> row_launch_;
  std::unique_ptr<KernelSet> set_;
};

std::vector<BandwidthEntry> RunIn(const KokkosBandwidthOptions& options, kokkos::Space space,
                                  std::vector<ErrorEntry>* errors) {
  std::vector<BandwidthEntry> out;
  for (const std::string& kernel : options.kernels) {
    KokkosBandwidthProbe probe(kernel, options, space);
    absl::StatusOr<ProbeResult> r = RunProbe(probe, options.harness);
    if (!r.ok()) {
      if (errors) errors->push_back({probe.Name(), std::string(r.status().message())});
      continue;
    }
    BandwidthEntry e;
    e.kernel = kernel;
    e.space = space == kokkos::Space::kHost ? "host" : "device";
    e.backend = "kokkos";
    e.bytes = probe.BytesPerOp();
    e.timing = TimingFrom(*r);
    e.gbps = e.bytes / r->per_op.median / 1e9;
    out.push_back(e);
  }
  return out;
}

}  // namespace

std::vector<BandwidthEntry> RunKokkosHostBandwidth(const KokkosBandwidthOptions& options,
                                                   std::vector<ErrorEntry>* errors) {
  return RunIn(options, kokkos::Space::kHost, errors);
}

std::vector<BandwidthEntry> RunKokkosDeviceBandwidth(const KokkosBandwidthOptions& options,
                                                     std::vector<ErrorEntry>* errors) {
  if (!kokkos::HasDeviceSpace()) {
    if (errors) {
      errors->push_back(
          {"kokkos.device", absl::StrCat("this Kokkos has no device backend (", kokkos::Version(),
                                         "); build one with scripts/build-kokkos.sh")});
    }
    return {};
  }
  return RunIn(options, kokkos::Space::kDevice, errors);
}

std::string KokkosVersionString() { return kokkos::Version(); }
std::string KokkosRowLaunchString() { return kokkos::Describe(kokkos::DeviceRowLaunch()); }
bool KokkosInitialized() { return kokkos::Initialized(); }
bool KokkosHasDeviceSpace() { return kokkos::HasDeviceSpace(); }

}  // namespace xdeep::profiler
