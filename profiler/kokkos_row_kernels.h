// The Kokkos row kernels (layer norm, softmax: one team per row), templated on the
// execution space, in two forms (kokkos_row_launch.h says which runs where). Included by
// kokkos_kernels.cc, the probe's one Kokkos translation unit, and by the studies
// bench/kokkos/{layer_norm,softmax}_study.cc, which time these very kernels beside forms
// of their CUDA twins; nothing else includes it (it brings in Kokkos).
#ifndef XDEEP_PROFILER_KOKKOS_ROW_KERNELS_H_
#define XDEEP_PROFILER_KOKKOS_ROW_KERNELS_H_

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "profiler/kokkos_kernels.h"
#include "profiler/kokkos_row_launch.h"

namespace xdeep::profiler::kokkos::rows {

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

// What kokkos_row_launch.h needs to know of Kokkos' default device: CUDA's figures;
// zeros on other backends (they keep the grouped form). Kokkos must be initialised.
inline DeviceProperties QueryDevice() {
  DeviceProperties d;
#if defined(KOKKOS_ENABLE_CUDA)
  const int device = Kokkos::Cuda().cuda_device();
  auto attribute = [device](cudaDeviceAttr a) {
    int v = 0;
    return cudaDeviceGetAttribute(&v, a, device) == cudaSuccess ? v : 0;
  };
  d.multiprocessors = attribute(cudaDevAttrMultiProcessorCount);
  // DRAM moves data on both clock edges: 2 x clock (kHz) x bus width (bytes).
  d.peak_bytes_per_second = 2.0 * attribute(cudaDevAttrMemoryClockRate) * 1e3 *
                            attribute(cudaDevAttrGlobalMemoryBusWidth) / 8;
  d.max_threads_per_multiprocessor = attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  d.registers_per_multiprocessor = attribute(cudaDevAttrMaxRegistersPerMultiprocessor);
  d.warp_size = attribute(cudaDevAttrWarpSize);
#endif
  return d;
}

// Row kernels: one team per row, `team_size` threads on a device (kokkos_row_launch.h
// chooses it with the form), whatever the host backend likes on a host.
template <class Exec, class... Traits>
Kokkos::TeamPolicy<Exec, Traits...> RowPolicy(int64_t rows, int team_size) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Exec::memory_space>::accessible) {
    return Kokkos::TeamPolicy<Exec, Traits...>(rows, Kokkos::AUTO);
  } else {
    return Kokkos::TeamPolicy<Exec, Traits...>(rows, team_size);
  }
}
template <class Exec, class... Traits>
using Member = typename Kokkos::TeamPolicy<Exec, Traits...>::member_type;

// The lean form's launch bounds: teams of at most kLeanMaxTeamSize threads, at least
// kLeanMinTeams of them per SM, so at most kLeanRegisters registers per thread.
using LeanBounds = Kokkos::LaunchBounds<kLeanMaxTeamSize, kLeanMinTeams>;

// The row kernels wait on DRAM between team barriers: each thread keeps
// kPacketsInFlight 16-byte loads in flight instead of one per loop trip. Thread k of a
// team takes packets k, k + s, ... (s = ceil(packets / kPacketsInFlight)), so with 256
// threads and 4096-float rows it reads what the CUDA twin's thread k reads. One load per
// trip left the softmax 8-11 % behind the twin up to 256 MiB on H100 whatever the
// reduction form, two loads 7 %; with four (46-47 registers, 5 teams per multiprocessor;
// launch bounds for 8 made it spill) softmax and layer norm run at copy's bandwidth
// (bench/kokkos/data/2026-11-27_h100x1_run6 study.csv, run7). That is the grouped form; the
// lean form keeps the four only in the first pass, the one that waits on DRAM.
constexpr int kPacketsInFlight = 4;

// Packet q of thread k's group, or packet k again where the group runs past the row
// (the caller skips those).
KOKKOS_INLINE_FUNCTION int GroupPacket(int k, int q, int s, int n) {
  return k + q * s < n ? k + q * s : k;
}

// Thread k's kPacketsInFlight packets of a row of n (group stride s), all issued
// before any is used.
KOKKOS_INLINE_FUNCTION void LoadGroup(const F4* row, int k, int s, int n,
                                      F4 (&v)[kPacketsInFlight]) {
  for (int q = 0; q < kPacketsInFlight; ++q) v[q] = row[GroupPacket(k, q, s, n)];
}

// Mean, then variance about it (two reductions over a row that stays in cache), then
// the normalised row: what torch's layer_norm computes, fp32 throughout. Packets grouped
// as in the softmax below; the lean form (kLean) groups only the first pass, which reads
// from DRAM, and takes the row again from L1 one packet per trip.
template <class Exec, bool kLean, class... Traits>
void LayerNormForm(F4* y, const F4* x, const F4* gamma, const F4* beta, int64_t rows, int64_t c4,
                   int team_size) {
  constexpr int U = kPacketsInFlight;
  const float inv_cols = 1.f / static_cast<float>(c4 * 4);
  Kokkos::parallel_for(
      "xdeep::layer_norm", RowPolicy<Exec, Traits...>(rows, team_size),
      KOKKOS_LAMBDA(const Member<Exec, Traits...>& t) {
        const F4* xr = x + t.league_rank() * c4;
        F4* yr = y + t.league_rank() * c4;
        const int n = static_cast<int>(c4), s = (n + U - 1) / U;
        float sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, s),
            [&](const int k, float& acc) {
              F4 v[U];
              LoadGroup(xr, k, s, n, v);
              for (int q = 0; q < U; ++q) {
                if (k + q * s < n) acc += v[q].x + v[q].y + v[q].z + v[q].w;
              }
            },
            sum);
        const float mean = sum * inv_cols;
        float sq = 0;
        if (kLean) {  // a constant: the other form is compiled out
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(t, n),
              [&](const int j, float& acc) {
                const F4 v = xr[j];
                const float a = v.x - mean, b = v.y - mean, c = v.z - mean, d = v.w - mean;
                acc += a * a + b * b + c * c + d * d;
              },
              sq);
        } else {
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(t, s),
              [&](const int k, float& acc) {
                F4 v[U];
                LoadGroup(xr, k, s, n, v);
                for (int q = 0; q < U; ++q) {
                  const float a = v[q].x - mean, b = v[q].y - mean, c = v[q].z - mean,
                              d = v[q].w - mean;
                  if (k + q * s < n) acc += a * a + b * b + c * c + d * d;
                }
              },
              sq);
        }
        const float rstd = 1.f / kmath::sqrt(sq * inv_cols + kLayerNormEps);
        if (kLean) {  // a constant: the other form is compiled out
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, n), [&](const int j) {
            const F4 v = xr[j], g = gamma[j], b = beta[j];
            yr[j] = F4{(v.x - mean) * rstd * g.x + b.x, (v.y - mean) * rstd * g.y + b.y,
                       (v.z - mean) * rstd * g.z + b.z, (v.w - mean) * rstd * g.w + b.w};
          });
        } else {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s), [&](const int k) {
            F4 v[U];
            LoadGroup(xr, k, s, n, v);
            for (int q = 0; q < U; ++q) {
              const int j = k + q * s;
              if (j < n) {
                const F4 g = gamma[j], b = beta[j];
                yr[j] = F4{(v[q].x - mean) * rstd * g.x + b.x, (v[q].y - mean) * rstd * g.y + b.y,
                           (v[q].z - mean) * rstd * g.z + b.z, (v[q].w - mean) * rstd * g.w + b.w};
              }
            }
          });
        }
      });
}

template <class Exec>
void LayerNorm(F4* y, const F4* x, const F4* gamma, const F4* beta, int64_t rows, int64_t c4,
               const RowLaunch& launch) {
  if (launch.form == RowForm::kLean) {
    LayerNormForm<Exec, true, LeanBounds>(y, x, gamma, beta, rows, c4, launch.team_size);
  } else {
    LayerNormForm<Exec, false>(y, x, gamma, beta, rows, c4, launch.team_size);
  }
}

// Row max, sum of exponentials, normalise in place: the softmax of attention scores.
// Forms as in the layer norm.
template <class Exec, bool kLean, class... Traits>
void SoftmaxForm(F4* p, int64_t rows, int64_t c4, int team_size) {
  constexpr int U = kPacketsInFlight;
  Kokkos::parallel_for(
      "xdeep::softmax", RowPolicy<Exec, Traits...>(rows, team_size),
      KOKKOS_LAMBDA(const Member<Exec, Traits...>& t) {
        F4* row = p + t.league_rank() * c4;
        const int n = static_cast<int>(c4), s = (n + U - 1) / U;
        float mx = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, s),
            [&](const int k, float& m) {
              F4 v[U];
              LoadGroup(row, k, s, n, v);
              for (int q = 0; q < U; ++q) {  // a repeated packet k changes no maximum
                const float a = v[q].x > v[q].y ? v[q].x : v[q].y;
                const float b = v[q].z > v[q].w ? v[q].z : v[q].w;
                const float c = a > b ? a : b;
                if (c > m) m = c;
              }
            },
            Kokkos::Max<float>(mx));
        float sum = 0;
        if (kLean) {  // a constant: the other form is compiled out
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(t, n),
              [&](const int j, float& acc) {
                const F4 v = row[j];
                acc += kmath::exp(v.x - mx) + kmath::exp(v.y - mx) + kmath::exp(v.z - mx) +
                       kmath::exp(v.w - mx);
              },
              sum);
        } else {
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(t, s),
              [&](const int k, float& acc) {
                F4 v[U];
                LoadGroup(row, k, s, n, v);
                for (int q = 0; q < U; ++q) {
                  if (k + q * s < n) {
                    acc += kmath::exp(v[q].x - mx) + kmath::exp(v[q].y - mx) +
                           kmath::exp(v[q].z - mx) + kmath::exp(v[q].w - mx);
                  }
                }
              },
              sum);
        }
        const float inv = 1.f / sum;
        // Each thread rewrites only the packets it reads: in place is safe.
        if (kLean) {  // a constant: the other form is compiled out
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, n), [&](const int j) {
            const F4 v = row[j];
            row[j] = F4{kmath::exp(v.x - mx) * inv, kmath::exp(v.y - mx) * inv,
                        kmath::exp(v.z - mx) * inv, kmath::exp(v.w - mx) * inv};
          });
        } else {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s), [&](const int k) {
            F4 v[U];
            LoadGroup(row, k, s, n, v);
            for (int q = 0; q < U; ++q) {
              if (k + q * s < n) {
                row[k + q * s] = F4{kmath::exp(v[q].x - mx) * inv, kmath::exp(v[q].y - mx) * inv,
                                    kmath::exp(v[q].z - mx) * inv, kmath::exp(v[q].w - mx) * inv};
              }
            }
          });
        }
      });
}

template <class Exec>
void Softmax(F4* p, int64_t rows, int64_t c4, const RowLaunch& launch) {
  if (launch.form == RowForm::kLean) {
    SoftmaxForm<Exec, true, LeanBounds>(p, rows, c4, launch.team_size);
  } else {
    SoftmaxForm<Exec, false>(p, rows, c4, launch.team_size);
  }
}

}  // namespace xdeep::profiler::kokkos::rows

#endif  // XDEEP_PROFILER_KOKKOS_ROW_KERNELS_H_
