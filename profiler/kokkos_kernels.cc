// Kokkos kernels of the memory-bound probes; with kokkos_row_kernels.h the only xdeep
// code of the probe that includes Kokkos.
#include "profiler/kokkos_kernels.h"

#include <Kokkos_Core.hpp>
#include <array>
#include <exception>
#include <string_view>
#include <type_traits>
#include <utility>

#include "profiler/kokkos_row_kernels.h"

namespace xdeep::profiler::kokkos {

Runtime::Runtime() {
  try {
    Kokkos::initialize();
  } catch (const std::exception& e) {
    error_ = std::string("Kokkos (") + Kokkos::DefaultExecutionSpace::name() +
             ") could not initialise: " + e.what();
  }
}
Runtime::~Runtime() {
  if (Kokkos::is_initialized()) Kokkos::finalize();
}

bool Initialized() { return Kokkos::is_initialized(); }

bool HasDeviceSpace() {
  return !std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace>;
}

std::string Version() {
  return std::to_string(KOKKOS_VERSION / 10000) + "." +
         std::to_string((KOKKOS_VERSION / 100) % 100) + "." + std::to_string(KOKKOS_VERSION % 100) +
         " (" + Kokkos::DefaultExecutionSpace::name() + ")";
}

namespace {

using rows::F4;
namespace kmath = rows::kmath;

// Device copy of Pattern (kokkos_kernels.h), which the host checks use.
KOKKOS_INLINE_FUNCTION float DevicePattern(int64_t i, int salt) {
  return 0.5f + static_cast<float>((i * 2654435761LL + salt * 97) % 1000) / 1000.0f;
}

KOKKOS_INLINE_FUNCTION void AdamOne(float& p, float g, float& m, float& v, const AdamHyper& h) {
  m = h.beta1 * m + (1.f - h.beta1) * g;
  v = h.beta2 * v + (1.f - h.beta2) * g * g;
  p = p - h.lr * (m / (kmath::sqrt(v) + h.eps) + h.weight_decay * p);
}

KOKKOS_INLINE_FUNCTION float GeluTanh(float x) {
  return 0.5f * x * (1.f + kmath::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

template <class Exec>
using Range = Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>;

template <class Exec>
void FillPattern(float* p, int64_t n, int salt) {
  Kokkos::parallel_for(
      "xdeep::fill", Range<Exec>(0, n), KOKKOS_LAMBDA(const int64_t i) {
        p[i] = DevicePattern(i, salt);
      });
}

template <class Exec>
void Copy(F4* a, const F4* b, int64_t n4) {
  Kokkos::parallel_for(
      "xdeep::copy", Range<Exec>(0, n4), KOKKOS_LAMBDA(const int64_t i) { a[i] = b[i]; });
}

template <class Exec>
void Triad(F4* a, const F4* b, const F4* c, int64_t n4) {
  Kokkos::parallel_for(
      "xdeep::triad", Range<Exec>(0, n4), KOKKOS_LAMBDA(const int64_t i) {
        const F4 x = b[i], y = c[i];
        const float s = kTriadScalar;
        a[i] = F4{x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w};
      });
}

template <class Exec>
void AdamUpdate(F4* p, const F4* g, F4* m, F4* v, int64_t n4) {
  const AdamHyper h;
  Kokkos::parallel_for(
      "xdeep::adam_update", Range<Exec>(0, n4), KOKKOS_LAMBDA(const int64_t i) {
        F4 pp = p[i], mm = m[i], vv = v[i];
        const F4 gg = g[i];
        AdamOne(pp.x, gg.x, mm.x, vv.x, h);
        AdamOne(pp.y, gg.y, mm.y, vv.y, h);
        AdamOne(pp.z, gg.z, mm.z, vv.z, h);
        AdamOne(pp.w, gg.w, mm.w, vv.w, h);
        p[i] = pp;
        m[i] = mm;
        v[i] = vv;
      });
}

template <class Exec>
void BiasGelu(F4* y, const F4* x, const F4* bias, int64_t n4, int64_t c4) {
  Kokkos::parallel_for(
      "xdeep::bias_gelu", Range<Exec>(0, n4), KOKKOS_LAMBDA(const int64_t i) {
        const F4 v = x[i], b = bias[i % c4];
        y[i] = F4{GeluTanh(v.x + b.x), GeluTanh(v.y + b.y), GeluTanh(v.z + b.z),
                  GeluTanh(v.w + b.w)};
      });
}

enum class Kind { kCopy, kTriad, kAdam, kLayerNorm, kSoftmax, kBiasGelu };

struct KernelInfo {
  std::string_view name;
  Kind kind;
  int buffers;  // buffers 0.. in use
  int full;     // of them, rows * cols long; the rest are `cols` long
};
constexpr std::array<KernelInfo, 6> kKernels = {{
    {"copy", Kind::kCopy, 2, 2},
    {"triad", Kind::kTriad, 3, 3},
    {"adam_update", Kind::kAdam, 4, 4},
    {"layer_norm", Kind::kLayerNorm, 4, 2},
    {"softmax", Kind::kSoftmax, 1, 1},
    {"bias_gelu", Kind::kBiasGelu, 3, 2},
}};

const KernelInfo* Find(std::string_view name) {
  for (const KernelInfo& k : kKernels) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

template <class Exec>
class Kernels final : public KernelSet {
 public:
  using View = Kokkos::View<float*, typename Exec::memory_space>;

  Kernels(const KernelInfo& info, int64_t rows, int64_t cols, const RowLaunch& row_launch)
      : info_(info), rows_(rows), cols_(cols), row_launch_(row_launch) {
    for (int b = 0; b < info.buffers; ++b) {
      buf_[b] = View(Kokkos::view_alloc(std::string("xdeep::buffer") + std::to_string(b),
                                        Kokkos::WithoutInitializing),
                     b < info.full ? rows * cols : cols);
    }
  }

  void Fill() override {
    for (int b = 0; b < info_.buffers; ++b) {
      FillPattern<Exec>(buf_[b].data(), buf_[b].extent(0), b + 1);
    }
    Fence();
  }

  void Launch() override {
    const int64_t n4 = rows_ * cols_ / 4, c4 = cols_ / 4;
    switch (info_.kind) {
      case Kind::kCopy:
        Copy<Exec>(P(0), P(1), n4);
        break;
      case Kind::kTriad:
        Triad<Exec>(P(0), P(1), P(2), n4);
        break;
      case Kind::kAdam:
        AdamUpdate<Exec>(P(0), P(1), P(2), P(3), n4);
        break;
      case Kind::kLayerNorm:
        rows::LayerNorm<Exec>(P(0), P(1), P(2), P(3), rows_, c4, row_launch_.form);
        break;
      case Kind::kSoftmax:
        rows::Softmax<Exec>(P(0), rows_, c4, row_launch_.softmax_form);
        break;
      case Kind::kBiasGelu:
        BiasGelu<Exec>(P(0), P(1), P(2), n4, c4);
        break;
    }
  }

  void Fence() override { Exec().fence(); }

  std::vector<float> Read(int buffer, int64_t begin, int64_t count) override {
    Fence();
    auto part = Kokkos::subview(buf_[buffer], std::make_pair(begin, begin + count));
    auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
    return std::vector<float>(host.data(), host.data() + count);
  }

 private:
  F4* P(int b) { return reinterpret_cast<F4*>(buf_[b].data()); }

  KernelInfo info_;
  int64_t rows_, cols_;
  RowLaunch row_launch_;
  std::array<View, 4> buf_;
};

}  // namespace

std::vector<std::string> KernelNames() {
  std::vector<std::string> out;
  for (const KernelInfo& k : kKernels) out.emplace_back(k.name);
  return out;
}

DeviceProperties QueryDeviceProperties() {
  if (!HasDeviceSpace() || !Kokkos::is_initialized()) return {};
  return rows::QueryDevice();
}

RowLaunch DeviceRowLaunch() { return ChooseRowLaunch(QueryDeviceProperties()); }

std::unique_ptr<KernelSet> MakeKernelSet(const std::string& kernel, int64_t rows, int64_t cols,
                                         Space space, std::string* why,
                                         const RowLaunch* row_launch) {
  const KernelInfo* k = Find(kernel);
  if (!k) {
    if (why) *why = "unknown kernel '" + kernel + "'";
    return nullptr;
  }
  if (space == Space::kHost) {
    return std::make_unique<Kernels<Kokkos::DefaultHostExecutionSpace>>(
        *k, rows, cols, row_launch ? *row_launch : RowLaunch{});
  }
  if (!HasDeviceSpace()) {
    if (why) {
      *why = std::string("this Kokkos has no device backend (default space ") +
             Kokkos::DefaultExecutionSpace::name() + ")";
    }
    return nullptr;
  }
  return std::make_unique<Kernels<Kokkos::DefaultExecutionSpace>>(
      *k, rows, cols, row_launch ? *row_launch : DeviceRowLaunch());
}

}  // namespace xdeep::profiler::kokkos
