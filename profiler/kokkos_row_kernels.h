// The Kokkos row kernels (layer norm, softmax: one team per row), templated on the
// execution space, in three forms (kokkos_row_launch.h says which runs where). Included by
// kokkos_kernels.cc, the probe's one Kokkos translation unit, and by the studies
// bench/kokkos/{layer_norm,softmax}_study.cc, which time these very kernels beside forms
// of their CUDA twins; nothing else includes it (it brings in Kokkos).
#ifndef XDEEP_PROFILER_KOKKOS_ROW_KERNELS_H_
#define XDEEP_PROFILER_KOKKOS_ROW_KERNELS_H_

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

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
#endif
  return d;
}

// Row kernels: one team per row, `team_size` threads on a device, whatever the host
// backend likes on a host.
template <class Exec>
Kokkos::TeamPolicy<Exec> RowPolicy(int64_t rows, int team_size) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Exec::memory_space>::accessible) {
    return Kokkos::TeamPolicy<Exec>(rows, Kokkos::AUTO);
  } else {
    return Kokkos::TeamPolicy<Exec>(rows, team_size);
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
// (bench/kokkos/data/2026-11-27_h100x1_run6 study.csv, run7). Both forms load so.
constexpr int kPacketsInFlight = 4;
// The wide form's teams are half as wide with twice the loads in flight per thread, the
// same 16 KiB of a row in flight per team (kokkos_row_launch.h).
template <RowForm kForm>
constexpr int kFormPackets = kForm == RowForm::kWide ? kWidePacketsInFlight : kPacketsInFlight;

// Packet q of thread k's group, or packet k again where the group runs past the row
// (the caller skips those).
KOKKOS_INLINE_FUNCTION int GroupPacket(int k, int q, int s, int n) {
  return k + q * s < n ? k + q * s : k;
}

// Thread k's U packets of a row of n (group stride s), all issued before any is used.
template <int U>
KOKKOS_INLINE_FUNCTION void LoadGroup(const F4* row, int k, int s, int n, F4 (&v)[U]) {
  for (int q = 0; q < U; ++q) v[q] = row[GroupPacket(k, q, s, n)];
}

// The compact form's team reduction: each thread folds f over its groups k = rank, rank +
// team size, ... (from the reducer's identity), then the team joins the values
// (team_reduce); every thread gets the result. The grouped form does the same through a
// nested TeamThreadRange parallel_reduce, which costs 7-8 registers more (kokkos_row_launch.h).
template <class M, class F, class Reducer>
KOKKOS_INLINE_FUNCTION void RankLoopReduce(const M& t, int s, const F& f, const Reducer& r) {
  r.init(r.reference());
  for (int k = t.team_rank(); k < s; k += t.team_size()) f(k, r.reference());
  t.team_reduce(r);
}

// The lanes form's team reduction (kLanesPerMember vector lanes per member): lane l of
// member m folds f over its groups k = m x lanes + l, + team size x lanes, ...; the
// lanes join by shuffles (ThreadVectorRange), the members through `slots` (one per
// member, read by every thread after one team barrier). Kokkos' team_reduce over 256
// single-lane members takes 4 barriers after its shuffles, with the warps' values joined
// 4 at a time in shared memory (kokkos_row_launch.h); this takes one.
template <class M, class F, class Reducer>
KOKKOS_INLINE_FUNCTION void LanesReduce(const M& t, int s, float* slots, const F& f,
                                        const Reducer& r) {
  float member = 0;
  Kokkos::parallel_reduce(
      Kokkos::ThreadVectorRange(t, kLanesPerMember),
      [&](const int lane, float& acc) {
        for (int k = t.team_rank() * kLanesPerMember + lane; k < s;
             k += t.team_size() * kLanesPerMember) {
          f(k, acc);
        }
      },
      Reducer(member));
  Kokkos::single(Kokkos::PerThread(t), [&] { slots[t.team_rank()] = member; });
  t.team_barrier();
  r.reference() = slots[0];
  for (int m = 1; m < t.team_size(); ++m) r.join(r.reference(), slots[m]);
}

// Thread (m, l)'s share of a pass in the lanes form, as LanesReduce takes them.
template <class M, class F>
KOKKOS_INLINE_FUNCTION void LanesFor(const M& t, int s, const F& f) {
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, kLanesPerMember), [&](const int lane) {
    for (int k = t.team_rank() * kLanesPerMember + lane; k < s;
         k += t.team_size() * kLanesPerMember) {
      f(k);
    }
  });
}

// A pass's reduction over the groups 0 .. s-1 and its writing pass, in form kForm:
// nested TeamThreadRange (grouped), team-rank loops and team_reduce (compact, wide), or
// lanes.
template <RowForm kForm, class M, class F, class Reducer>
KOKKOS_INLINE_FUNCTION void RowReduce(const M& t, int s, float* slots, const F& f,
                                      const Reducer& r) {
  if constexpr (kForm == RowForm::kCompact || kForm == RowForm::kWide) {
    RankLoopReduce(t, s, f, r);
  } else if constexpr (kForm == RowForm::kLanes) {
    LanesReduce(t, s, slots, f, r);
  } else if constexpr (std::is_same_v<Reducer, Kokkos::Sum<float>>) {
    // A sum as a plain result, as the grouped form had it: through a Sum reducer the
    // same reduction compiles to other code (the softmax 48 registers instead of 46).
    Kokkos::parallel_reduce(Kokkos::TeamThreadRange(t, s), f, r.reference());
  } else {
    Kokkos::parallel_reduce(Kokkos::TeamThreadRange(t, s), f, r);
  }
}
template <RowForm kForm, class M, class F>
KOKKOS_INLINE_FUNCTION void RowFor(const M& t, int s, const F& f) {
  if constexpr (kForm == RowForm::kCompact || kForm == RowForm::kWide) {
    for (int k = t.team_rank(); k < s; k += t.team_size()) f(k);
  } else if constexpr (kForm == RowForm::kLanes) {
    LanesFor(t, s, f);
  } else {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s), f);
  }
}

// The policy of a form: teams of RowTeamSize(kForm) threads on a device (the lanes form as
// members of kLanesPerMember vector lanes, with two slots per member of team scratch),
// whatever the host backend likes on a host.
template <class Exec, RowForm kForm>
Kokkos::TeamPolicy<Exec> FormPolicy(int64_t rows) {
  if constexpr (kForm != RowForm::kLanes) {
    return RowPolicy<Exec>(rows, RowTeamSize(kForm));
  } else {
    Kokkos::TeamPolicy<Exec> policy =
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible
            ? Kokkos::TeamPolicy<Exec>(rows, Kokkos::AUTO)
            : Kokkos::TeamPolicy<Exec>(rows, kRowTeamSize / kLanesPerMember, kLanesPerMember);
    return policy.set_scratch_size(0, Kokkos::PerTeam(2 * policy.team_size() * sizeof(float)));
  }
}
// The lanes form's slots (2 x team size floats): max or sum first, then sum of squares.
template <RowForm kForm, class M>
KOKKOS_INLINE_FUNCTION float* RowSlots(const M& t) {
  if constexpr (kForm == RowForm::kLanes) {
    return static_cast<float*>(t.team_scratch(0).get_shmem(2 * t.team_size() * sizeof(float)));
  } else {
    return nullptr;
  }
}

// Mean, then variance about it (two reductions over a row that stays in cache), then
// the normalised row: what torch's layer_norm computes, fp32 throughout. Packets grouped
// as in the softmax below; every form loads the same groups (RowReduce, RowFor).
template <class Exec, RowForm kForm>
void LayerNormForm(F4* y, const F4* x, const F4* gamma, const F4* beta, int64_t rows, int64_t c4) {
  constexpr int U = kFormPackets<kForm>;
  const float inv_cols = 1.f / static_cast<float>(c4 * 4);
  Kokkos::parallel_for(
      "xdeep::layer_norm", FormPolicy<Exec, kForm>(rows), KOKKOS_LAMBDA(const Member<Exec>& t) {
        float* slots = RowSlots<kForm>(t);
        const F4* xr = x + t.league_rank() * c4;
        F4* yr = y + t.league_rank() * c4;
        const int n = static_cast<int>(c4), s = (n + U - 1) / U;
        const auto add = [&](const int k, float& acc) {
          F4 v[U];
          LoadGroup(xr, k, s, n, v);
          for (int q = 0; q < U; ++q) {
            if (k + q * s < n) acc += v[q].x + v[q].y + v[q].z + v[q].w;
          }
        };
        float sum = 0;
        RowReduce<kForm>(t, s, slots, add, Kokkos::Sum<float>(sum));
        const float mean = sum * inv_cols;
        const auto add_squares = [&](const int k, float& acc) {
          F4 v[U];
          LoadGroup(xr, k, s, n, v);
          for (int q = 0; q < U; ++q) {
            const float a = v[q].x - mean, b = v[q].y - mean, c = v[q].z - mean, d = v[q].w - mean;
            if (k + q * s < n) acc += a * a + b * b + c * c + d * d;
          }
        };
        float sq = 0;
        RowReduce<kForm>(t, s, slots ? slots + t.team_size() : nullptr, add_squares,
                         Kokkos::Sum<float>(sq));
        const float rstd = 1.f / kmath::sqrt(sq * inv_cols + kLayerNormEps);
        const auto normalise = [&](const int k) {
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
        };
        RowFor<kForm>(t, s, normalise);
      });
}

template <class Exec>
void LayerNorm(F4* y, const F4* x, const F4* gamma, const F4* beta, int64_t rows, int64_t c4,
               RowForm form) {
  switch (form) {
    case RowForm::kCompact:
      LayerNormForm<Exec, RowForm::kCompact>(y, x, gamma, beta, rows, c4);
      break;
    case RowForm::kLanes:
      LayerNormForm<Exec, RowForm::kLanes>(y, x, gamma, beta, rows, c4);
      break;
    case RowForm::kWide:
      LayerNormForm<Exec, RowForm::kWide>(y, x, gamma, beta, rows, c4);
      break;
    case RowForm::kResident:  // a softmax form only: the layer norm keeps the compact one
      LayerNormForm<Exec, RowForm::kCompact>(y, x, gamma, beta, rows, c4);
      break;
    case RowForm::kGrouped:
      LayerNormForm<Exec, RowForm::kGrouped>(y, x, gamma, beta, rows, c4);
      break;
  }
}

// Row max, sum of exponentials, normalise in place: the softmax of attention scores.
// Forms as in the layer norm.
template <class Exec, RowForm kForm>
void SoftmaxForm(F4* p, int64_t rows, int64_t c4) {
  constexpr int U = kFormPackets<kForm>;
  Kokkos::parallel_for(
      "xdeep::softmax", FormPolicy<Exec, kForm>(rows), KOKKOS_LAMBDA(const Member<Exec>& t) {
        float* slots = RowSlots<kForm>(t);
        F4* row = p + t.league_rank() * c4;
        const int n = static_cast<int>(c4), s = (n + U - 1) / U;
        const auto max_of = [&](const int k, float& m) {
          F4 v[U];
          LoadGroup(row, k, s, n, v);
          for (int q = 0; q < U; ++q) {  // a repeated packet k changes no maximum
            const float a = v[q].x > v[q].y ? v[q].x : v[q].y;
            const float b = v[q].z > v[q].w ? v[q].z : v[q].w;
            const float c = a > b ? a : b;
            if (c > m) m = c;
          }
        };
        float mx = 0;
        RowReduce<kForm>(t, s, slots, max_of, Kokkos::Max<float>(mx));
        const auto add_exp = [&](const int k, float& acc) {
          F4 v[U];
          LoadGroup(row, k, s, n, v);
          for (int q = 0; q < U; ++q) {
            if (k + q * s < n) {
              acc += kmath::exp(v[q].x - mx) + kmath::exp(v[q].y - mx) + kmath::exp(v[q].z - mx) +
                     kmath::exp(v[q].w - mx);
            }
          }
        };
        float sum = 0;
        RowReduce<kForm>(t, s, slots ? slots + t.team_size() : nullptr, add_exp,
                         Kokkos::Sum<float>(sum));
        const float inv = 1.f / sum;
        // Each thread rewrites only the packets it reads: in place is safe.
        const auto normalise = [&](const int k) {
          F4 v[U];
          LoadGroup(row, k, s, n, v);
          for (int q = 0; q < U; ++q) {
            if (k + q * s < n) {
              row[k + q * s] = F4{kmath::exp(v[q].x - mx) * inv, kmath::exp(v[q].y - mx) * inv,
                                  kmath::exp(v[q].z - mx) * inv, kmath::exp(v[q].w - mx) * inv};
            }
          }
        };
        RowFor<kForm>(t, s, normalise);
      });
}

// The resident form's team reduction through team scratch (kTeam + kResidentGroups floats),
// two barriers and no team_reduce: every thread writes its value to its slot; threads 0 ..
// G-1 each fold the slots g, g + G, ... into slot kTeam + g; every thread folds those G.
// Kokkos' team_reduce for 256 single-lane members (shuffle loops, then 4 barriers joining
// the warps' values 4 at a time, kokkos_row_launch.h) compiles to about 200 sm_90
// instructions per reduction against this one's 40-70; in time the two differ by under
// 0.5 % in the resident form (run 20's kokkos_resident_team_reduce). A second call may
// follow at once: its first writes touch slots the first call's last reads do not.
inline constexpr int kResidentGroups = 16;
KOKKOS_INLINE_FUNCTION constexpr int ResidentSlotBytes(int team) {
  return (team + kResidentGroups) * static_cast<int>(sizeof(float));
}
template <int kTeam, class M, class Join>
KOKKOS_INLINE_FUNCTION float ScratchReduce(const M& t, float* slots, float v, const Join& join) {
  static_assert(kTeam % kResidentGroups == 0, "the team splits into kResidentGroups groups");
  const int k = t.team_rank();
  slots[k] = v;
  t.team_barrier();
  if (k < kResidentGroups) {
    float acc = slots[k];
    for (int i = 1; i < kTeam / kResidentGroups; ++i) acc = join(acc, slots[k + i * kResidentGroups]);
    slots[kTeam + k] = acc;
  }
  t.team_barrier();
  // Read 4 at a time (slots is 16-byte aligned); the same order in every thread.
  const F4* groups = reinterpret_cast<const F4*>(slots + kTeam);
  F4 w = groups[0];
  float out = join(join(w.x, w.y), join(w.z, w.w));
  for (int g = 1; g < kResidentGroups / 4; ++g) {
    w = groups[g];
    out = join(out, join(join(w.x, w.y), join(w.z, w.w)));
  }
  return out;
}

// The resident form of the softmax (from run 20): rows of at most kTeam x U packets, each
// thread holding packets rank, rank + kTeam, ... in registers from one read, so the row is
// read once instead of three times (the other forms re-read it from L1 in their second and
// third passes) and each element's exponential is taken once instead of twice; the max and
// the sum join through ScratchReduce (kScratchReduce) or Kokkos' team_reduce. Slots past
// the row hold the lowest float (exponential 0) and are not written. Its CUDA twin is
// LaunchSoftmaxRowsResident (profiler/cuda/kernels.cu). Returns false, running nothing, for
// longer rows and on host backends (whose teams are too narrow to hold a row).
template <class Exec, int kTeam, int U, bool kScratchReduce = true>
bool SoftmaxResident(F4* p, int64_t rows, int64_t c4) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace,
                                           typename Exec::memory_space>::accessible) {
    return false;
  } else {
    if (c4 > int64_t{kTeam} * U) return false;
    Kokkos::TeamPolicy<Exec> policy(rows, kTeam);
    // 16 bytes more than the slots: room to align them for the 16-byte reads.
    if (kScratchReduce) policy.set_scratch_size(0, Kokkos::PerTeam(ResidentSlotBytes(kTeam) + 16));
    Kokkos::parallel_for(
        "xdeep::softmax_resident", policy, KOKKOS_LAMBDA(const Member<Exec>& t) {
          F4* row = p + t.league_rank() * c4;
          const int n = static_cast<int>(c4), k = t.team_rank();
          constexpr float kLowest = -3.402823466e+38f;
          F4 v[U];
          for (int q = 0; q < U; ++q) {
            v[q] = k + q * kTeam < n ? row[k + q * kTeam] : F4{kLowest, kLowest, kLowest, kLowest};
          }
          float mx = kLowest;
          for (int q = 0; q < U; ++q) {
            mx = kmath::fmax(mx, kmath::fmax(kmath::fmax(v[q].x, v[q].y), kmath::fmax(v[q].z, v[q].w)));
          }
          float* slots = nullptr;
          if constexpr (kScratchReduce) {
            slots = static_cast<float*>(t.team_scratch(0).get_shmem_aligned(ResidentSlotBytes(kTeam), 16));
            mx = ScratchReduce<kTeam>(t, slots, mx, [](float a, float b) { return kmath::fmax(a, b); });
          } else {
            t.team_reduce(Kokkos::Max<float>(mx));
          }
          float sum = 0;
          for (int q = 0; q < U; ++q) {
            v[q] = F4{kmath::exp(v[q].x - mx), kmath::exp(v[q].y - mx), kmath::exp(v[q].z - mx),
                      kmath::exp(v[q].w - mx)};
            sum += v[q].x + v[q].y + v[q].z + v[q].w;
          }
          if constexpr (kScratchReduce) {
            sum = ScratchReduce<kTeam>(t, slots, sum, [](float a, float b) { return a + b; });
          } else {
            t.team_reduce(Kokkos::Sum<float>(sum));
          }
          const float inv = 1.f / sum;
          for (int q = 0; q < U; ++q) {
            if (k + q * kTeam < n) {
              row[k + q * kTeam] = F4{v[q].x * inv, v[q].y * inv, v[q].z * inv, v[q].w * inv};
            }
          }
        });
    return true;
  }
}

template <class Exec>
void Softmax(F4* p, int64_t rows, int64_t c4, RowForm form) {
  switch (form) {
    case RowForm::kCompact:
      SoftmaxForm<Exec, RowForm::kCompact>(p, rows, c4);
      break;
    case RowForm::kLanes:
      SoftmaxForm<Exec, RowForm::kLanes>(p, rows, c4);
      break;
    case RowForm::kWide:
      SoftmaxForm<Exec, RowForm::kWide>(p, rows, c4);
      break;
    case RowForm::kResident:
      // Rows it cannot hold (and host backends) take the lanes form.
      if (!SoftmaxResident<Exec, kRowTeamSize, kPacketsInFlight>(p, rows, c4)) {
        SoftmaxForm<Exec, RowForm::kLanes>(p, rows, c4);
      }
      break;
    case RowForm::kGrouped:
      SoftmaxForm<Exec, RowForm::kGrouped>(p, rows, c4);
      break;
  }
}

}  // namespace xdeep::profiler::kokkos::rows

#endif  // XDEEP_PROFILER_KOKKOS_ROW_KERNELS_H_
