// Why the Kokkos softmax trailed its CUDA twin at 256 MiB (issue 26): the row softmax in
// several forms, on two kinds of buffer, at several sizes, all timed the same way (CUDA
// events on Kokkos' stream), so a form, a buffer or the timing can each be told apart.
//   softmax_study [--row-length 4096] [--sizes 64,128,256,512,1024] [--forms a,b] > study.csv
// Forms: the CUDA twin (profiler/cuda/kernels.cu); Kokkos with 256 single-lane members
// reducing through TeamThreadRange, one load per loop trip (the probe's kernel up to
// run 4); the same with 2 or 4 loads in flight per thread (team_ilp2_nobounds is the
// probe's kernel from run 6); Kokkos with 8 members of 32 vector lanes reducing through
// ThreadVectorRange and team scratch (run 5's), with and without launch bounds; and (from
// run 16) the probe's kernel (profiler/kokkos_row_kernels.h) in the form the probe chooses
// on this device (kokkos_probe), in the grouped form (kokkos_grouped: nested TeamThreadRange
// reductions, 46 registers, the probe's up to run 15) and in the compact form
// (kokkos_compact: team-rank loops and team_reduce, 40 registers; run 16 had lean forms);
// from run 18 the lanes form (kokkos_lanes: 8 members x 32 vector lanes, lane shuffles and
// one team barrier per reduction through team scratch), from run 19 the wide form
// (kokkos_wide: compact's loops in teams of 128 with 8 loads in flight, 56 registers, 9
// per SM), and copies of the twin that take
// one of Kokkos' differences each: twin_copy (the twin as it is, compiled here),
// twin_shmem (with the 2064 bytes of dynamic shared memory Kokkos' team policy asks for
// its team_reduce, which moves the driver's L1 / shared split) and twin_kokkos_reduce
// (that, and Kokkos' team_reduce as it runs for 256 single-lane members: 5 shuffle-down
// trips, then 4 barriers with the warps' values joined 4 at a time in shared memory).
// From run 20, the resident algorithm (the row read once into registers, each exponential
// taken once; profiler/kokkos_row_kernels.h's SoftmaxResident): kokkos_resident (256 x 4,
// the max and sum joined through team scratch: the probe's form on the H200),
// kokkos_resident_wide (128 x 8), kokkos_resident_team_reduce (256 x 4 with Kokkos'
// team_reduce), and its CUDA twins twin_resident (256 x 4) and twin_resident_wide (128 x 8)
// (profiler/cuda/kernels.cu's LaunchSoftmaxRowsResident).
//   --forms a,b,...: only these forms.
// Buffers: cudaMalloc's (2 MiB aligned, as the CUDA probe has) and a Kokkos::View's (data
// 128 bytes past its allocation's start, as the Kokkos probe has).
// Built by bench/kokkos/build_studies.sh; run by bench/kokkos/run_device.sh.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "profiler/cuda/kernels.h"
#include "profiler/kokkos_row_kernels.h"

namespace {

struct alignas(16) F4 {
  float x, y, z, w;
};

using Exec = Kokkos::DefaultExecutionSpace;

// The probe's kernel up to run 4.
void SoftmaxTeamReduce(F4* p, int64_t rows, int64_t c4) {
  using Policy = Kokkos::TeamPolicy<Exec, Kokkos::LaunchBounds<256, 8>>;
  Kokkos::parallel_for(
      "study::team_reduce", Policy(rows, 256), KOKKOS_LAMBDA(const Policy::member_type& t) {
        F4* row = p + t.league_rank() * c4;
        float mx = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, c4),
            [&](const int64_t j, float& m) {
              const F4 v = row[j];
              const float a = v.x > v.y ? v.x : v.y, b = v.z > v.w ? v.z : v.w;
              const float c = a > b ? a : b;
              if (c > m) m = c;
            },
            Kokkos::Max<float>(mx));
        float sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, c4),
            [&](const int64_t j, float& s) {
              const F4 v = row[j];
              s += Kokkos::exp(v.x - mx) + Kokkos::exp(v.y - mx) + Kokkos::exp(v.z - mx) +
                   Kokkos::exp(v.w - mx);
            },
            sum);
        const float inv = 1.f / sum;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, c4), [&](const int64_t j) {
          const F4 v = row[j];
          row[j] = F4{Kokkos::exp(v.x - mx) * inv, Kokkos::exp(v.y - mx) * inv,
                      Kokkos::exp(v.z - mx) * inv, Kokkos::exp(v.w - mx) * inv};
        });
      });
}

// The team form with U loads in flight per thread: thread k of the team takes packets
// k, k + s, ..., k + (U - 1) s (s = ceil(packets / U)), so with 1024 packets and 256
// threads it reads what the CUDA twin's thread k reads, but issues the U loads together
// instead of one per loop trip. Out-of-row slots reload packet k and are left out.
template <int U, class Bounds>
void SoftmaxTeamIlp(F4* p, int64_t rows, int64_t c4) {
  using Policy = Kokkos::TeamPolicy<Exec, Bounds>;
  Kokkos::parallel_for(
      "study::team_ilp", Policy(rows, 256), KOKKOS_LAMBDA(const typename Policy::member_type& t) {
        F4* row = p + t.league_rank() * c4;
        const int n = static_cast<int>(c4), s = (n + U - 1) / U;
        float mx = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, s),
            [&](const int k, float& m) {
              F4 v[U];
              for (int q = 0; q < U; ++q) v[q] = row[k + q * s < n ? k + q * s : k];
              for (int q = 0; q < U; ++q) {
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
              for (int q = 0; q < U; ++q) v[q] = row[k + q * s < n ? k + q * s : k];
              for (int q = 0; q < U; ++q) {
                if (k + q * s < n) {
                  acc += Kokkos::exp(v[q].x - mx) + Kokkos::exp(v[q].y - mx) +
                         Kokkos::exp(v[q].z - mx) + Kokkos::exp(v[q].w - mx);
                }
              }
            },
            sum);
        const float inv = 1.f / sum;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s), [&](const int k) {
          F4 v[U];
          for (int q = 0; q < U; ++q) v[q] = row[k + q * s < n ? k + q * s : k];
          for (int q = 0; q < U; ++q) {
            if (k + q * s < n) {
              row[k + q * s] = F4{Kokkos::exp(v[q].x - mx) * inv, Kokkos::exp(v[q].y - mx) * inv,
                                  Kokkos::exp(v[q].z - mx) * inv, Kokkos::exp(v[q].w - mx) * inv};
            }
          }
        });
      });
}

// The probe's kernel in run 5, `Bounds` aside.
template <class Bounds>
void SoftmaxLaneReduce(F4* p, int64_t rows, int64_t c4) {
  using Policy = Kokkos::TeamPolicy<Exec, Bounds>;
  constexpr int kMembers = 8;
  Policy policy(rows, kMembers, 32);
  policy.set_scratch_size(0, Kokkos::PerTeam(2 * kMembers * sizeof(float)));
  Kokkos::parallel_for(
      "study::lane_reduce", policy, KOKKOS_LAMBDA(const typename Policy::member_type& t) {
        F4* row = p + t.league_rank() * c4;
        const int n = static_cast<int>(c4), members = t.team_size(), me = t.team_rank();
        const int share = (n + members - 1) / members;
        const int begin = me * share < n ? me * share : n;
        const int end = begin + share < n ? begin + share : n;
        float* partial = static_cast<float*>(t.team_shmem().get_shmem(2 * members * sizeof(float)));
        float mx = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(t, begin, end),
            [&](const int j, float& m) {
              const F4 v = row[j];
              const float a = v.x > v.y ? v.x : v.y, b = v.z > v.w ? v.z : v.w;
              const float c = a > b ? a : b;
              if (c > m) m = c;
            },
            Kokkos::Max<float>(mx));
        Kokkos::single(Kokkos::PerThread(t), [&] { partial[me] = mx; });
        t.team_barrier();
        mx = partial[0];
        for (int i = 1; i < members; ++i) mx = partial[i] > mx ? partial[i] : mx;
        float sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::ThreadVectorRange(t, begin, end),
            [&](const int j, float& s) {
              const F4 v = row[j];
              s += Kokkos::exp(v.x - mx) + Kokkos::exp(v.y - mx) + Kokkos::exp(v.z - mx) +
                   Kokkos::exp(v.w - mx);
            },
            sum);
        Kokkos::single(Kokkos::PerThread(t), [&] { partial[members + me] = sum; });
        t.team_barrier();
        sum = 0;
        for (int i = 0; i < members; ++i) sum += partial[members + i];
        const float inv = 1.f / sum;
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, begin, end), [&](const int j) {
          const F4 v = row[j];
          row[j] = F4{Kokkos::exp(v.x - mx) * inv, Kokkos::exp(v.y - mx) * inv,
                      Kokkos::exp(v.z - mx) * inv, Kokkos::exp(v.w - mx) * inv};
        });
      });
}

// The twin's reduction (profiler/cuda/kernels.cu: 2 shuffle trees, 3 barriers) or Kokkos'
// team_reduce for 256 single-lane members (Kokkos_Cuda_ReduceScan.hpp's
// cuda_intra_block_reduction as it runs with blockDim.x == 1, written out here).
template <bool kKokkos, bool kMax>
__device__ float TwinReduce(float v, float* shared) {
  const auto join = [](float a, float b) { return kMax ? fmaxf(a, b) : a + b; };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if constexpr (!kKokkos) {
    for (int o = 16; o > 0; o >>= 1) v = join(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < blockDim.x / 32 ? shared[lane] : (kMax ? -INFINITY : 0.f);
    if (warp == 0) {
      for (int o = 16; o > 0; o >>= 1) v = join(v, __shfl_xor_sync(0xffffffffu, v, o));
      if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    v = shared[0];
    __syncthreads();
    return v;
  } else {
    for (int shift = 1; shift < 32; shift *= 2) {
      const float other = __shfl_down_sync(0xffffffffu, v, shift);
      if (static_cast<int>(threadIdx.x) + shift < static_cast<int>(blockDim.x)) v = join(v, other);
    }
    v = __shfl_sync(0xffffffffu, v, 0);
    constexpr int kStep = 4;
    const int id = lane == 0 ? warp : 65000, warps = blockDim.x / 32;
    if (id < kStep) shared[id] = v;
    __syncthreads();
    for (int shift = kStep; shift <= warps; shift += kStep) {
      if (shift <= id && id < shift + kStep) shared[id % kStep] = join(shared[id % kStep], v);
      __syncthreads();
    }
    v = shared[0];
    for (int i = 1; i < warps && i < kStep; ++i) v = join(v, shared[i]);
    __syncthreads();
    return v;
  }
}

// A copy of the softmax twin (SoftmaxRowsF32Kernel, scale 1), its reduction as above;
// held to the twin's 6 blocks per SM (40 registers) by launch bounds.
template <bool kKokkosReduce>
__global__ void __launch_bounds__(256, 6) TwinSoftmax(float4* __restrict__ p, int64_t n) {
  constexpr int U = 4;
  __shared__ float shared[32];
  const int64_t s = (n + U - 1) / U;
  float4* row = p + blockIdx.x * n;
  const auto load = [&](int64_t k, float4(&v)[U]) {
#pragma unroll
    for (int q = 0; q < U; ++q) v[q] = __ldca(row + (k + q * s < n ? k + q * s : k));
  };
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < s; k += blockDim.x) {
    float4 v[U];
    load(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) m = fmaxf(m, fmaxf(fmaxf(v[q].x, v[q].y), fmaxf(v[q].z, v[q].w)));
  }
  m = TwinReduce<kKokkosReduce, true>(m, shared);
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < s; k += blockDim.x) {
    float4 v[U];
    load(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      if (k + q * s < n)
        sum += expf(v[q].x - m) + expf(v[q].y - m) + expf(v[q].z - m) + expf(v[q].w - m);
    }
  }
  const float inv = 1.f / TwinReduce<kKokkosReduce, false>(sum, shared);
  for (int64_t k = threadIdx.x; k < s; k += blockDim.x) {
    float4 v[U];
    load(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      if (k + q * s < n) {
        row[k + q * s] = make_float4(expf(v[q].x - m) * inv, expf(v[q].y - m) * inv,
                                     expf(v[q].z - m) * inv, expf(v[q].w - m) * inv);
      }
    }
  }
}

// The dynamic shared memory Kokkos' CUDA team policy asks for 256 single-lane members:
// sizeof(double) x (team size + 2) for team_reduce (Kokkos_Cuda_Parallel_Team.hpp).
constexpr int kKokkosTeamShared = 8 * (256 + 2);

enum class Form {
  kCuda,
  kTeamReduce,
  kTeamIlp2,
  kTeamIlp4,
  kTeamIlp2NoBounds,
  kTeamIlp4NoBounds,
  kLaneReduce,
  kLaneReduceNoBounds,
  kProbe,
  kGrouped,
  kCompact,
  kLanes,
  kWide,
  kTwinCopy,
  kTwinShmem,
  kTwinKokkosReduce,
  kResident,
  kResidentWide,
  kResidentTeamReduce,
  kTwinResident,
  kTwinResidentWide,
};
constexpr Form kForms[] = {Form::kCuda,       Form::kTeamReduce,         Form::kTeamIlp2,
                           Form::kTeamIlp4,   Form::kTeamIlp2NoBounds,   Form::kTeamIlp4NoBounds,
                           Form::kLaneReduce, Form::kLaneReduceNoBounds, Form::kProbe,
                           Form::kGrouped,    Form::kCompact,            Form::kLanes,
                           Form::kWide,       Form::kTwinCopy,           Form::kTwinShmem,
                           Form::kTwinKokkosReduce, Form::kResident, Form::kResidentWide,
                           Form::kResidentTeamReduce, Form::kTwinResident,
                           Form::kTwinResidentWide};
const char* Name(Form f) {
  switch (f) {
    case Form::kCuda: return "cuda_twin";
    case Form::kTeamReduce: return "kokkos_team_reduce";
    case Form::kTeamIlp2: return "kokkos_team_ilp2";
    case Form::kTeamIlp4: return "kokkos_team_ilp4";
    case Form::kTeamIlp2NoBounds: return "kokkos_team_ilp2_nobounds";
    case Form::kTeamIlp4NoBounds: return "kokkos_team_ilp4_nobounds";
    case Form::kLaneReduce: return "kokkos_lane_reduce";
    case Form::kLaneReduceNoBounds: return "kokkos_lane_reduce_nobounds";
    case Form::kProbe: return "kokkos_probe";
    case Form::kGrouped: return "kokkos_grouped";
    case Form::kCompact: return "kokkos_compact";
    case Form::kLanes: return "kokkos_lanes";
    case Form::kWide: return "kokkos_wide";
    case Form::kTwinCopy: return "twin_copy";
    case Form::kTwinShmem: return "twin_shmem";
    case Form::kTwinKokkosReduce: return "twin_kokkos_reduce";
    case Form::kResident: return "kokkos_resident";
    case Form::kResidentWide: return "kokkos_resident_wide";
    case Form::kResidentTeamReduce: return "kokkos_resident_team_reduce";
    case Form::kTwinResident: return "twin_resident";
    case Form::kTwinResidentWide: return "twin_resident_wide";
  }
  return "?";
}

// The probe's softmax (profiler/kokkos_row_kernels.h) in a form.
void ProbeSoftmax(float* p, int64_t rows, int64_t cols, xdeep::profiler::kokkos::RowForm form) {
  namespace r = xdeep::profiler::kokkos::rows;
  r::Softmax<Exec>(reinterpret_cast<r::F4*>(p), rows, cols / 4, form);
}
xdeep::profiler::kokkos::RowLaunch ProbeLaunch() {
  return xdeep::profiler::kokkos::ChooseRowLaunch(xdeep::profiler::kokkos::rows::QueryDevice());
}

void Launch(Form f, float* p, int64_t rows, int64_t cols, cudaStream_t stream) {
  F4* p4 = reinterpret_cast<F4*>(p);
  switch (f) {
    case Form::kCuda:
      xdeep::profiler::cuda::LaunchSoftmaxRows(p, rows, cols,
                                               xdeep::profiler::cuda::ElemKind::kFp32, 1.f,
                                               false, stream);
      break;
    case Form::kTeamReduce: SoftmaxTeamReduce(p4, rows, cols / 4); break;
    case Form::kTeamIlp2: SoftmaxTeamIlp<2, Kokkos::LaunchBounds<256, 8>>(p4, rows, cols / 4); break;
    case Form::kTeamIlp4: SoftmaxTeamIlp<4, Kokkos::LaunchBounds<256, 8>>(p4, rows, cols / 4); break;
    case Form::kTeamIlp2NoBounds: SoftmaxTeamIlp<2, Kokkos::LaunchBounds<>>(p4, rows, cols / 4); break;
    case Form::kTeamIlp4NoBounds: SoftmaxTeamIlp<4, Kokkos::LaunchBounds<>>(p4, rows, cols / 4); break;
    case Form::kLaneReduce: SoftmaxLaneReduce<Kokkos::LaunchBounds<256, 8>>(p4, rows, cols / 4); break;
    case Form::kLaneReduceNoBounds: SoftmaxLaneReduce<Kokkos::LaunchBounds<>>(p4, rows, cols / 4); break;
    case Form::kProbe: {
      static const xdeep::profiler::kokkos::RowForm chosen = ProbeLaunch().softmax_form;
      ProbeSoftmax(p, rows, cols, chosen);
      break;
    }
    case Form::kGrouped: ProbeSoftmax(p, rows, cols, xdeep::profiler::kokkos::RowForm::kGrouped); break;
    case Form::kCompact: ProbeSoftmax(p, rows, cols, xdeep::profiler::kokkos::RowForm::kCompact); break;
    case Form::kLanes: ProbeSoftmax(p, rows, cols, xdeep::profiler::kokkos::RowForm::kLanes); break;
    case Form::kWide: ProbeSoftmax(p, rows, cols, xdeep::profiler::kokkos::RowForm::kWide); break;
    case Form::kTwinCopy:
      TwinSoftmax<false><<<static_cast<unsigned>(rows), 256, 0, stream>>>(
          reinterpret_cast<float4*>(p), cols / 4);
      break;
    case Form::kTwinShmem:
      TwinSoftmax<false><<<static_cast<unsigned>(rows), 256, kKokkosTeamShared, stream>>>(
          reinterpret_cast<float4*>(p), cols / 4);
      break;
    case Form::kTwinKokkosReduce:
      TwinSoftmax<true><<<static_cast<unsigned>(rows), 256, kKokkosTeamShared, stream>>>(
          reinterpret_cast<float4*>(p), cols / 4);
      break;
    case Form::kResident:
      ProbeSoftmax(p, rows, cols, xdeep::profiler::kokkos::RowForm::kResident);
      break;
    case Form::kResidentWide:
    case Form::kResidentTeamReduce: {
      namespace r = xdeep::profiler::kokkos::rows;
      r::F4* q = reinterpret_cast<r::F4*>(p);
      if (!(f == Form::kResidentWide ? r::SoftmaxResident<Exec, 128, 8>(q, rows, cols / 4)
                                     : r::SoftmaxResident<Exec, 256, 4, false>(q, rows, cols / 4))) {
        std::fprintf(stderr, "%s: rows of %lld floats are too long\n", Name(f),
                     static_cast<long long>(cols));
        std::exit(2);
      }
      break;
    }
    case Form::kTwinResident:
    case Form::kTwinResidentWide:
      xdeep::profiler::cuda::LaunchSoftmaxRowsResident(p, rows, cols, 1.f,
                                                       f == Form::kTwinResident ? 256 : 128, stream);
      break;
  }
}

void Fill(float* p, int64_t n) {
  Kokkos::parallel_for(
      "study::fill", Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>(0, n),
      KOKKOS_LAMBDA(const int64_t i) {
        p[i] = 0.5f + static_cast<float>((i * 2654435761LL + 97) % 1000) / 1000.0f;
      });
  Kokkos::fence();
}

// Rows 0, middle and last sum to 1 after a softmax.
bool RowsSumToOne(const float* p, int64_t rows, int64_t cols) {
  std::vector<float> h(cols);
  for (int64_t r : {int64_t{0}, rows / 2, rows - 1}) {
    cudaMemcpy(h.data(), p + r * cols, cols * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (float v : h) {
      if (!std::isfinite(v) || v < 0) return false;
      s += v;
    }
    if (std::abs(s - 1) > 1e-3) return false;
  }
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int64_t> ParseSizes(const char* s) {
  std::vector<int64_t> out;
  for (const char* c = s; *c;) {
    char* end = nullptr;
    out.push_back(std::strtoll(c, &end, 10));
    c = *end == ',' ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t cols = 4096;
  std::vector<int64_t> sizes_mib = {64, 128, 256, 512, 1024};
  std::vector<Form> forms(std::begin(kForms), std::end(kForms));
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--row-length") {
      cols = std::atoll(argv[i + 1]);
    } else if (a == "--sizes") {
      sizes_mib = ParseSizes(argv[i + 1]);
    } else if (a == "--forms") {
      forms.clear();
      const std::string list = argv[i + 1];
      for (size_t begin = 0; begin <= list.size();) {
        const size_t end = std::min(list.find(',', begin), list.size());
        const std::string name = list.substr(begin, end - begin);
        const Form* f = std::find_if(std::begin(kForms), std::end(kForms),
                                     [&](Form g) { return name == Name(g); });
        if (f == std::end(kForms)) {
          std::fprintf(stderr, "unknown form '%s'\n", name.c_str());
          return 2;
        }
        forms.push_back(*f);
        begin = end + 1;
      }
    } else {
      std::fprintf(stderr,
                   "unknown option %s (--row-length N, --sizes MiB,MiB,..., --forms a,b,...)\n",
                   a.c_str());
      return 2;
    }
  }
  if (cols <= 0 || cols % 4 != 0) {
    std::fprintf(stderr, "--row-length must be a positive multiple of 4\n");
    return 2;
  }
  Kokkos::ScopeGuard guard;
  std::fprintf(stderr, "kokkos_probe: %s\n",
               xdeep::profiler::kokkos::Describe(ProbeLaunch()).c_str());
  const cudaStream_t stream = Exec().cuda_stream();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf(
      "size_mib,buffer,form,rows,offset_bytes,gpu_us_per_op,gbps,enqueue_us_per_op,"
      "host_us_per_op,reps,check\n");
  for (const int64_t mib : sizes_mib) {
    const int64_t n = mib * 1024 * 1024 / 4 / cols * cols, rows = n / cols;
    float* raw = nullptr;
    if (cudaMalloc(&raw, n * sizeof(float)) != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc of %lld MiB failed\n", static_cast<long long>(mib));
      return 1;
    }
    Kokkos::View<float*, Exec::memory_space> view(
        Kokkos::view_alloc("study::view", Kokkos::WithoutInitializing), n);
    for (const bool use_view : {false, true}) {
      float* p = use_view ? view.data() : raw;
      for (const Form f : forms) {
        Fill(p, n);
        for (int w = 0; w < 3; ++w) Launch(f, p, rows, cols, stream);
        cudaEventRecord(start, stream);
        Launch(f, p, rows, cols, stream);
        cudaEventRecord(stop, stream);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        // Batches of about 2 ms, 11 of them; GPU time from events, enqueue and host
        // (enqueue + wait) time from the host clock.
        const int reps = std::max(3, static_cast<int>(2.0 / std::max(ms, 1e-3f)));
        std::vector<double> gpu, enqueue, host;
        for (int s = 0; s < 11; ++s) {
          Kokkos::fence();
          const auto t0 = std::chrono::steady_clock::now();
          cudaEventRecord(start, stream);
          for (int r = 0; r < reps; ++r) Launch(f, p, rows, cols, stream);
          cudaEventRecord(stop, stream);
          const auto t1 = std::chrono::steady_clock::now();
          cudaEventSynchronize(stop);
          Kokkos::fence();
          const auto t2 = std::chrono::steady_clock::now();
          cudaEventElapsedTime(&ms, start, stop);
          gpu.push_back(ms * 1e3 / reps);
          enqueue.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / reps);
          host.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count() / reps);
        }
        Fill(p, n);
        Launch(f, p, rows, cols, stream);
        Kokkos::fence();
        const bool ok = cudaGetLastError() == cudaSuccess && RowsSumToOne(p, rows, cols);
        const double us = Median(gpu);
        std::printf("%lld,%s,%s,%lld,%lld,%.2f,%.1f,%.2f,%.2f,%d,%s\n",
                    static_cast<long long>(mib), use_view ? "kokkos_view" : "cuda_malloc",
                    Name(f), static_cast<long long>(rows),
                    static_cast<long long>(reinterpret_cast<uintptr_t>(p) % (2 << 20)), us,
                    2.0 * n * sizeof(float) / (us * 1e3), Median(enqueue), Median(host), reps,
                    ok ? "ok" : "FAILED");
        std::fflush(stdout);
      }
    }
    cudaFree(raw);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 0;
}
