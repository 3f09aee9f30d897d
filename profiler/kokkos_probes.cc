// Kokkos bandwidth probes: copy, triad, Adam update.
#include "profiler/kokkos_probes.h"

#include <Kokkos_Core.hpp>
#include <chrono>
#include <cmath>
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace xdeep::profiler {
namespace {

template <class ExecSpace, class T>
using Vec = Kokkos::View<T*, typename ExecSpace::memory_space>;

// Deterministic, non-zero values in [0.5, 1.5): zeros would hide unwritten outputs.
KOKKOS_INLINE_FUNCTION double Pattern(int64_t i, int salt) {
  return 0.5 + static_cast<double>((i * 2654435761LL + salt * 97) % 1000) / 1000.0;
}

KOKKOS_INLINE_FUNCTION double Sqrt(double x) {
#if defined(KOKKOS_VERSION) && KOKKOS_VERSION >= 40000
  return Kokkos::sqrt(x);
#else
  return Kokkos::Experimental::sqrt(x);
#endif
}

template <class ExecSpace>
void FillPattern(const Vec<ExecSpace, double>& v, int salt) {
  Kokkos::parallel_for(
      "xdeep::fill", Kokkos::RangePolicy<ExecSpace>(0, v.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { v(i) = Pattern(i, salt); });
  ExecSpace().fence();
}

// Adam hyper-parameters; the bias corrections are folded into lr as PyTorch does.
struct AdamParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};

KOKKOS_INLINE_FUNCTION void AdamStep(double& p, double g, double& m, double& v,
                                     const AdamParams& a) {
  m = a.beta1 * m + (1 - a.beta1) * g;
  v = a.beta2 * v + (1 - a.beta2) * g * g;
  p = p - a.lr * (m / (Sqrt(v) + a.eps) + a.weight_decay * p);
}

// The three kernels, each a labelled parallel_for over the execution space.
template <class ExecSpace>
void Copy(const Vec<ExecSpace, double>& a, const Vec<ExecSpace, double>& b) {
  Kokkos::parallel_for(
      "xdeep::copy", Kokkos::RangePolicy<ExecSpace>(0, a.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { a(i) = b(i); });
}

template <class ExecSpace>
void Triad(const Vec<ExecSpace, double>& a, const Vec<ExecSpace, double>& b,
           const Vec<ExecSpace, double>& c, double s) {
  Kokkos::parallel_for(
      "xdeep::triad", Kokkos::RangePolicy<ExecSpace>(0, a.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { a(i) = b(i) + s * c(i); });
}

// p = params, g = grads, m = exp_avg, v = exp_avg_sq.
template <class ExecSpace>
void AdamUpdate(const Vec<ExecSpace, double>& p, const Vec<ExecSpace, double>& g,
                const Vec<ExecSpace, double>& m, const Vec<ExecSpace, double>& v) {
  const AdamParams ap;
  Kokkos::parallel_for(
      "xdeep::adam_update", Kokkos::RangePolicy<ExecSpace>(0, p.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { AdamStep(p(i), g(i), m(i), v(i), ap); });
}

// One probe class for the three kernels keeps setup and the check in one place.
template <class ExecSpace>
class KokkosBandwidthProbe : public Probe {
 public:
  using View = Vec<ExecSpace, double>;

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
    a_ = View("xdeep::a", n_);
    b_ = View("xdeep::b", n_);
    c_ = View("xdeep::c", n_);
    if (kernel_ == "adam_update") d_ = View("xdeep::d", n_);
    Fill();
    return absl::OkStatus();
  }

  absl::StatusOr<double> RunBatch(int reps, const Deadline& deadline) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      Launch();
      // Kernels cannot be interrupted; checking between operations bounds the overrun
      // to one operation (a fence keeps device backends from queueing ahead).
      if (deadline.Expired()) {
        ExecSpace().fence();
        return absl::DeadlineExceededError("time limit reached");
      }
    }
    ExecSpace().fence();  // the clock stops only after the work is done
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  absl::Status Check(const Deadline&) override {
    // Re-fill, run once, compare sampled elements with a scalar reference.
    Fill();
    Launch();
    ExecSpace().fence();
    auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a_);
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
    return absl::OkStatus();
  }

 private:
  static constexpr double kScalar = 3.0;

  void Fill() {
    FillPattern<ExecSpace>(a_, 1);
    FillPattern<ExecSpace>(b_, 2);
    FillPattern<ExecSpace>(c_, 3);
    if (d_.extent(0) > 0) FillPattern<ExecSpace>(d_, 4);
  }

  void Launch() {
    if (kernel_ == "copy") {
      Copy<ExecSpace>(a_, b_);
    } else if (kernel_ == "triad") {
      Triad<ExecSpace>(a_, b_, c_, kScalar);
    } else {
      AdamUpdate<ExecSpace>(a_, b_, c_, d_);
    }
  }

  std::string kernel_;
  int64_t n_;
  View a_, b_, c_, d_;
};

template <class ExecSpace>
std::vector<BandwidthEntry> RunIn(const KokkosBandwidthOptions& options, const char* space,
                                  std::vector<ErrorEntry>* errors) {
  std::vector<BandwidthEntry> out;
  for (const std::string& kernel : options.kernels) {
    KokkosBandwidthProbe<ExecSpace> probe(kernel, options.elements);
    absl::StatusOr<ProbeResult> r = RunProbe(probe, options.harness);
    if (!r.ok()) {
      if (errors) errors->push_back({probe.Name(), std::string(r.status().message())});
      continue;
    }
    BandwidthEntry e;
    e.kernel = kernel;
    e.space = space;
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
  return RunIn<Kokkos::DefaultHostExecutionSpace>(options, "host", errors);
}

std::vector<BandwidthEntry> RunKokkosDeviceBandwidth(const KokkosBandwidthOptions& options,
                                                     std::vector<ErrorEntry>* errors) {
  using Device = Kokkos::DefaultExecutionSpace;
  if (std::is_same_v<Device, Kokkos::DefaultHostExecutionSpace>) {
    if (errors) {
      errors->push_back(
          {"kokkos.device",
           absl::StrCat("this Kokkos has no device backend (default space ", Device::name(), ")")});
    }
    return {};
  }
  return RunIn<Device>(options, "device", errors);
}

std::string KokkosVersionString() {
#ifdef KOKKOS_VERSION
  return absl::StrCat(KOKKOS_VERSION / 10000, ".", (KOKKOS_VERSION / 100) % 100, ".",
                      KOKKOS_VERSION % 100, " (", Kokkos::DefaultExecutionSpace::name(), ")");
#else
  return Kokkos::DefaultExecutionSpace::name();
#endif
}

bool KokkosInitialized() { return Kokkos::is_initialized(); }

}  // namespace xdeep::profiler
