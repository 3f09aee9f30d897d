// Kokkos kernels of the memory-bound probes; the only xdeep file that includes Kokkos.
#include "profiler/kokkos_kernels.h"

#include <Kokkos_Core.hpp>
#include <array>
#include <exception>
#include <string_view>
#include <type_traits>
#include <utility>

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

// Kokkos 4 moved the math functions out of Experimental.
#if KOKKOS_VERSION >= 40000
namespace kmath = Kokkos;
#else
namespace kmath = Kokkos::Experimental;
#endif

// 16-byte packets: plain C++, so the same kernels compile for CUDA, HIP and hosts.
struct alignas(16) F4 {
  float x, y, z, w;
};

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

// Row kernels: one team per row, 256 threads on a device, whatever the host backend
// likes on a host.
template <class Exec>
Kokkos::TeamPolicy<Exec> RowPolicy(int64_t rows) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Exec::memory_space>::accessible) {
    return Kokkos::TeamPolicy<Exec>(rows, Kokkos::AUTO);
  } else {
    return Kokkos::TeamPolicy<Exec>(rows, 256);
  }
}
template <class Exec>
using Member = typename Kokkos::TeamPolicy<Exec>::member_type;

// The row kernels wait on DRAM between team barriers: each thread keeps
// kPacketsInFlight 16-byte loads in flight instead of one per loop trip. Thread k of a
// team takes packets k, k + s, ... (s = ceil(packets / kPacketsInFlight)), so with 256
// threads and 4096-float rows it reads what the CUDA twin's thread k reads. One load per
// trip left the softmax 8-11 % behind the twin up to 256 MiB on H100 whatever the
// reduction form, two loads 7 %; with four (46-47 registers, 5 teams per multiprocessor;
// launch bounds for 8 made it spill) softmax and layer norm run at copy's bandwidth
// (bench/kokkos/data/2026-11-27_h100x1_run6 study.csv, run7).
constexpr int kPacketsInFlight = 4;

// Packet q of thread k's group, or packet k again where the group runs past the row
// (the caller skips those).
KOKKOS_INLINE_FUNCTION int GroupPacket(int k, int q, int s, int n) {
  return k + q * s < n ? k + q * s : k;
}

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

// Mean, then variance about it (two reductions over a row that stays in cache), then
// the normalised row: what torch's layer_norm computes, fp32 throughout. Packets grouped
// as in the softmax below.
template <class Exec>
void LayerNorm(F4* y, const F4* x, const F4* gamma, const F4* beta, int64_t rows, int64_t c4) {
  constexpr int U = kPacketsInFlight;
  const float inv_cols = 1.f / static_cast<float>(c4 * 4);
  Kokkos::parallel_for(
      "xdeep::layer_norm", RowPolicy<Exec>(rows), KOKKOS_LAMBDA(const Member<Exec>& t) {
        const F4* xr = x + t.league_rank() * c4;
        F4* yr = y + t.league_rank() * c4;
        const int n = static_cast<int>(c4), s = (n + U - 1) / U;
        float sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, s),
            [&](const int k, float& acc) {
              F4 v[U];
              for (int q = 0; q < U; ++q) v[q] = xr[GroupPacket(k, q, s, n)];
              for (int q = 0; q < U; ++q) {
                if (k + q * s < n) acc += v[q].x + v[q].y + v[q].z + v[q].w;
              }
            },
            sum);
        const float mean = sum * inv_cols;
        float sq = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, s),
            [&](const int k, float& acc) {
              F4 v[U];
              for (int q = 0; q < U; ++q) v[q] = xr[GroupPacket(k, q, s, n)];
              for (int q = 0; q < U; ++q) {
                const float a = v[q].x - mean, b = v[q].y - mean, c = v[q].z - mean,
                            d = v[q].w - mean;
                if (k + q * s < n) acc += a * a + b * b + c * c + d * d;
              }
            },
            sq);
        const float rstd = 1.f / kmath::sqrt(sq * inv_cols + kLayerNormEps);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s), [&](const int k) {
          F4 v[U];
          for (int q = 0; q < U; ++q) v[q] = xr[GroupPacket(k, q, s, n)];
          for (int q = 0; q < U; ++q) {
            const int j = k + q * s;
            if (j < n) {
              const F4 g = gamma[j], b = beta[j];
              yr[j] = F4{(v[q].x - mean) * rstd * g.x + b.x, (v[q].y - mean) * rstd * g.y + b.y,
                         (v[q].z - mean) * rstd * g.z + b.z, (v[q].w - mean) * rstd * g.w + b.w};
            }
          }
        });
      });
}

// Row max, sum of exponentials, normalise in place: the softmax of attention scores.
template <class Exec>
void Softmax(F4* p, int64_t rows, int64_t c4) {
  constexpr int U = kPacketsInFlight;
  Kokkos::parallel_for(
      "xdeep::softmax", RowPolicy<Exec>(rows), KOKKOS_LAMBDA(const Member<Exec>& t) {
        F4* row = p + t.league_rank() * c4;
        const int n = static_cast<int>(c4), s = (n + U - 1) / U;
        float mx = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, s),
            [&](const int k, float& m) {
              F4 v[U];
              for (int q = 0; q < U; ++q) v[q] = row[GroupPacket(k, q, s, n)];
              for (int q = 0; q < U; ++q) {  // a repeated packet k changes no maximum
                const float a = v[q].x > v[q].y ? v[q].x : v[q].y;
                const float b = v[q].z > v[q].w ? v[q].z : v[q].w;
                const float c = a > b ? a : b;
                if (c > m) m = c;
              }
            },
            Kokkos::Max<float>(mx));
        float sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, s),
            [&](const int k, float& acc) {
              F4 v[U];
              for (int q = 0; q < U; ++q) v[q] = row[GroupPacket(k, q, s, n)];
              for (int q = 0; q < U; ++q) {
                if (k + q * s < n) {
                  acc += kmath::exp(v[q].x - mx) + kmath::exp(v[q].y - mx) +
                         kmath::exp(v[q].z - mx) + kmath::exp(v[q].w - mx);
                }
              }
            },
            sum);
        const float inv = 1.f / sum;
        // Each thread rewrites only the packets it reads: in place is safe.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s), [&](const int k) {
          F4 v[U];
          for (int q = 0; q < U; ++q) v[q] = row[GroupPacket(k, q, s, n)];
          for (int q = 0; q < U; ++q) {
            if (k + q * s < n) {
              row[k + q * s] = F4{kmath::exp(v[q].x - mx) * inv, kmath::exp(v[q].y - mx) * inv,
                                  kmath::exp(v[q].z - mx) * inv, kmath::exp(v[q].w - mx) * inv};
            }
          }
        });
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

  Kernels(const KernelInfo& info, int64_t rows, int64_t cols)
      : info_(info), rows_(rows), cols_(cols) {
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
        LayerNorm<Exec>(P(0), P(1), P(2), P(3), rows_, c4);
        break;
      case Kind::kSoftmax:
        Softmax<Exec>(P(0), rows_, c4);
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
  std::array<View, 4> buf_;
};

}  // namespace

std::vector<std::string> KernelNames() {
  std::vector<std::string> out;
  for (const KernelInfo& k : kKernels) out.emplace_back(k.name);
  return out;
}

std::unique_ptr<KernelSet> MakeKernelSet(const std::string& kernel, int64_t rows, int64_t cols,
                                         Space space, std::string* why) {
  const KernelInfo* k = Find(kernel);
  if (!k) {
    if (why) *why = "unknown kernel '" + kernel + "'";
    return nullptr;
  }
  if (space == Space::kHost) {
    return std::make_unique<Kernels<Kokkos::DefaultHostExecutionSpace>>(*k, rows, cols);
  }
  if (!HasDeviceSpace()) {
    if (why) {
      *why = std::string("this Kokkos has no device backend (default space ") +
             Kokkos::DefaultExecutionSpace::name() + ")";
    }
    return nullptr;
  }
  return std::make_unique<Kernels<Kokkos::DefaultExecutionSpace>>(*k, rows, cols);
}

}  // namespace xdeep::profiler::kokkos
