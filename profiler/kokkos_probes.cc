// Kokkos bandwidth probes: copy, triad, Adam update.
#include "profiler/kokkos_probes.h"

#include <Kokkos_Core.hpp>
#include <chrono>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"

namespace xdeep::profiler {
namespace {

using ExecSpace = Kokkos::DefaultHostExecutionSpace;
using MemSpace = ExecSpace::memory_space;
template <class T>
using Vec = Kokkos::View<T*, MemSpace>;

// Deterministic, non-zero values in [0.5, 1.5): zeros would hide unwritten outputs.
KOKKOS_INLINE_FUNCTION double Pattern(int64_t i, int salt) {
  return 0.5 + static_cast<double>((i * 2654435761LL + salt * 97) % 1000) / 1000.0;
}

template <class Space>
void FillPattern(const Vec<double>& v, int salt) {
  Kokkos::parallel_for(
      "xdeep::fill", Kokkos::RangePolicy<Space>(0, v.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { v(i) = Pattern(i, salt); });
  Space().fence();
}

// Adam hyper-parameters; the bias corrections are folded into lr as PyTorch does.
struct AdamParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};

KOKKOS_INLINE_FUNCTION void AdamStep(double& p, double g, double& m, double& v,
                                     const AdamParams& a) {
  m = a.beta1 * m + (1 - a.beta1) * g;
  v = a.beta2 * v + (1 - a.beta2) * g * g;
  p = p - a.lr * (m / (std::sqrt(v) + a.eps) + a.weight_decay * p);
}

// One class for the three kernels keeps setup and the check in one place.
class KokkosBandwidthProbe : public Probe {
 public:
  KokkosBandwidthProbe(std::string kernel, int64_t n) : kernel_(std::move(kernel)), n_(n) {}

  std::string Name() const override { return absl::StrCat("kokkos.", kernel_); }

  int64_t BytesPerOp() const {
    const int64_t arrays = kernel_ == "copy" ? 2 : kernel_ == "triad" ? 3 : 7;
    return arrays * n_ * static_cast<int64_t>(sizeof(double));
  }

  absl::Status Setup(const Deadline&) override {
    if (kernel_ != "copy" && kernel_ != "triad" && kernel_ != "adam_update") {
      return absl::InvalidArgumentError(absl::StrCat("unknown kernel '", kernel_, "'"));
    }
    a_ = Vec<double>("xdeep::a", n_);
    b_ = Vec<double>("xdeep::b", n_);
    c_ = Vec<double>("xdeep::c", n_);
    FillPattern<ExecSpace>(a_, 1);
    FillPattern<ExecSpace>(b_, 2);
    FillPattern<ExecSpace>(c_, 3);
    if (kernel_ == "adam_update") {
      d_ = Vec<double>("xdeep::d", n_);
      FillPattern<ExecSpace>(d_, 4);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      Launch();
      // Host kernels cannot be interrupted; checking between operations bounds the
      // overrun to one operation.
      if (deadline.Expired()) return absl::DeadlineExceededError("time limit reached");
    }
    ExecSpace().fence();  // the clock stops only after the work is done
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  absl::Status Check(const Deadline&) override {
    // Re-fill, run once, compare every element with a scalar reference.
    FillPattern<ExecSpace>(a_, 1);
    FillPattern<ExecSpace>(b_, 2);
    FillPattern<ExecSpace>(c_, 3);
    if (d_.extent(0) > 0) FillPattern<ExecSpace>(d_, 4);
    Launch();
    ExecSpace().fence();
    auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a_);
    auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b_);
    auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c_);
    const int64_t stride = std::max<int64_t>(1, n_ / 4096);
    for (int64_t i = 0; i < n_; i += stride) {
      double expect_a, expect_c = 0, got_c = 0;
      if (kernel_ == "copy") {
        expect_a = Pattern(i, 2);
      } else if (kernel_ == "triad") {
        expect_a = Pattern(i, 2) + kScalar * Pattern(i, 3);
      } else {
        double p = Pattern(i, 1), m = Pattern(i, 3), v = Pattern(i, 4);
        AdamStep(p, Pattern(i, 2), m, v, AdamParams{});
        expect_a = p;
        expect_c = m;
        got_c = c(i);
      }
      if (std::abs(a(i) - expect_a) > 1e-12 * std::abs(expect_a) + 1e-15 ||
          std::abs(got_c - expect_c) > 1e-12 * std::abs(expect_c) + 1e-15) {
        return absl::DataLossError(absl::StrCat("data check failed at element ", i, ": got ", a(i),
                                                ", expected ", expect_a));
      }
    }
    (void)b;
    return absl::OkStatus();
  }

 private:
  static constexpr double kScalar = 3.0;

  void Launch() {
    auto a = a_, b = b_, c = c_, d = d_;
    const auto policy = Kokkos::RangePolicy<ExecSpace>(0, n_);
    if (kernel_ == "copy") {
      Kokkos::parallel_for(
          "xdeep::copy", policy, KOKKOS_LAMBDA(const int64_t i) { a(i) = b(i); });
    } else if (kernel_ == "triad") {
      const double s = kScalar;
      Kokkos::parallel_for(
          "xdeep::triad", policy, KOKKOS_LAMBDA(const int64_t i) { a(i) = b(i) + s * c(i); });
    } else {
      // a = params, b = grads, c = exp_avg, d = exp_avg_sq.
      const AdamParams ap;
      Kokkos::parallel_for(
          "xdeep::adam_update", policy,
          KOKKOS_LAMBDA(const int64_t i) { AdamStep(a(i), b(i), c(i), d(i), ap); });
    }
  }

  std::string kernel_;
  int64_t n_;
  Vec<double> a_, b_, c_, d_;
};

}  // namespace

std::vector<BandwidthEntry> RunKokkosHostBandwidth(const KokkosBandwidthOptions& options,
                                                   std::vector<ErrorEntry>* errors) {
  std::vector<BandwidthEntry> out;
  for (const std::string& kernel : options.kernels) {
    KokkosBandwidthProbe probe(kernel, options.elements);
    absl::StatusOr<ProbeResult> r = RunProbe(probe, options.harness);
    if (!r.ok()) {
      if (errors) errors->push_back({probe.Name(), std::string(r.status().message())});
      continue;
    }
    BandwidthEntry e;
    e.kernel = kernel;
    e.space = "host";
    e.backend = "kokkos";
    e.bytes = probe.BytesPerOp();
    e.timing = TimingFrom(*r);
    e.gbps = e.bytes / r->per_op.median / 1e9;
    out.push_back(e);
  }
  return out;
}

std::string KokkosVersionString() {
#ifdef KOKKOS_VERSION
  return absl::StrCat(KOKKOS_VERSION / 10000, ".", (KOKKOS_VERSION / 100) % 100, ".",
                      KOKKOS_VERSION % 100, " (", ExecSpace::name(), ")");
#else
  return ExecSpace::name();
#endif
}

bool KokkosInitialized() { return Kokkos::is_initialized(); }

}  // namespace xdeep::profiler
