// Which form of the CUDA layer norm twin is the fastest for its access pattern, and why the
// probe's twin ran 4-6 % below the Kokkos layer norm at 1 GiB per array on H100 (issue 26,
// bench/kokkos/data/2026-11-27_h100x1_run9..12). Runs 10-12 ruled out the buffers, the
// clock, the size, the read-only path, plain loads without __restrict__ and Kokkos' kind of
// team reduction; the SASS of the two kernels (README.md) differs only in the load flavour
// (the twin's __ldca is LDG.E.128.STRONG.SM, Kokkos' plain load LDG.E.128), the reduction,
// Kokkos' block shape (1 x 256) and prologue, and the resident blocks per SM (5 against 6).
// This study tries each of those, and other shapes of the same access pattern (threads per
// row x 16-byte loads in flight per thread), and counts how many blocks each form really
// keeps resident per SM.
//   layer_norm_study [--row-length 4096] [--sizes 256,512,1024] [--rounds 3]
//                    [--forms name,name,...] > study.csv
// (--forms: only these forms, e.g. for a profiler run over a few kernels.)
// Forms (every twin form: one block per row, three passes, rows checked):
//   kokkos_probe      rows::LayerNorm in the form the Kokkos probe chooses on this device
//                     (profiler/kokkos_row_launch.h; the choice goes to stderr)
//   kokkos_grouped    the grouped form (nested TeamThreadRange reductions, 47 registers,
//                     5 per SM; the probe's kernel up to run 15)
//   kokkos_compact    the compact form (the same loads, team-rank loops and team_reduce,
//                     38 registers, 6 per SM); run 16's lean forms (kokkos_lean5..8) are
//                     in its data and in 65f81e3
//   cuda_twin         LaunchLayerNormRows, the CUDA probe's twin (profiler/cuda/kernels.cu;
//                     256 threads x 4 loads up to run 13, 512 x 2 from run 14)
//   twin_copy         the twin's code up to run 13 compiled here (256 x 4; matched cuda_twin)
//   twin_weak         plain weak loads (ld.global, Kokkos' LDG.E.128) instead of __ldca
//   twin_stcs         y written with streaming stores (st.global.cs)
//   twin_weak_stcs    both
//   twin_blocks5/4/3  at most 5 / 4 / 3 resident per SM, L1 kept (16 KiB carveout)
//   twin_as_kokkos    Kokkos' form in CUDA: weak loads, a 1 x 256 block, 32-bit indices, a
//                     shared tree reduction in 8 x (256 + 2) bytes of dynamic shared memory,
//                     a barrier at block start
//   twin_as_kokkos5   the same held to 5 per SM, as the Kokkos kernel's registers hold it
//   twin_as_kokkos_ca / _xblock / _int64 / _shuffle / _nostart   twin_as_kokkos less one
//                     part: __ldca loads, a T x 1 block, 64-bit indices, the twin's shuffle
//                     reduction, no start barrier
//   twin_t128u8 / t128u4 / t512u2 / t1024u1   other shapes: threads per block x loads in
//                     flight per thread (t1024u1: every packet of the row in one load each)
// Buffers: cuda_malloc (y, x, gamma, beta in that order, as the CUDA probe allocates
// them) and kokkos_view (Kokkos::Views, as the Kokkos probe allocates them).
// Timing: CUDA events around a batch of ~2 ms on Kokkos' stream (the CUDA probe's clock)
// and the host clock from before the first launch to after Kokkos::fence() (the Kokkos
// probe's clock), 11 batches, medians. Data check: rows 0, middle and last against a
// double-precision host layer norm. Residency: one more launch of each twin form built with
// counters (per SM, blocks entered minus left), outside the timed batches; the CSV gives
// the largest count over SMs and its mean over SMs.
// Built by bench/kokkos/build_studies.sh; run by bench/kokkos/run_device.sh.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "profiler/cuda/kernels.h"
#include "profiler/kokkos_row_kernels.h"

namespace {

namespace rows = xdeep::profiler::kokkos::rows;
using Exec = Kokkos::DefaultExecutionSpace;
constexpr float kEps = xdeep::profiler::kokkos::kLayerNormEps;
constexpr int kMaxSms = 1024;  // counters per SM (H100 has 132, H200 132)

// profiler/cuda/kernels.cu's BlockReduce (sum) for a block of T threads ranked `rank`
// (run 13's twin_as_kokkos_shuffle read threadIdx.x in a 1 x T block: its check failed).
template <int T>
__device__ float BlockSum(float v, float* shared, int rank) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = rank / 32, lane = rank % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < T / 32 ? shared[lane] : 0.f;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

// A block sum as Kokkos' team reduction does it for single-lane members: a slot per
// thread in shared memory and a tree with a barrier per level.
template <int T>
__device__ float TreeSum(float v, float* tree, int rank) {
  tree[rank] = v;
  __syncthreads();
  for (int half = T / 2; half > 0; half /= 2) {
    if (rank < half) tree[rank] += tree[rank + half];
    __syncthreads();
  }
  v = tree[0];
  __syncthreads();
  return v;
}

// ld.global without a cache operator: the weak LDG.E.128 the Kokkos kernel's loads compile
// to (__ldca gives LDG.E.128.STRONG.SM, a const __restrict__ dereference LDG.E.128.CONSTANT).
__device__ __forceinline__ float4 LoadWeak(const float4* p) {
  float4 v;
  asm("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(p));
  return v;
}

enum class Load { kCa, kWeak };

// The parts of the Kokkos kernel's shape, each a bit of a form's `Shape`.
constexpr unsigned kYBlock = 1;  // a 1 x T block, the rank in threadIdx.y
constexpr unsigned kInt32 = 2;   // 32-bit packet indices
constexpr unsigned kTree = 4;    // tree reduction in 8 x (T + 2) bytes of dynamic shared memory
constexpr unsigned kStartBarrier = 8;  // a barrier before the first load (Kokkos' team start)
constexpr unsigned kKokkosShape = kYBlock | kInt32 | kTree | kStartBarrier;

__device__ __forceinline__ unsigned SmId() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// One block per row of a twin form: T threads, U 16-byte loads in flight per thread
// (thread k takes packets k, k + s, ... with s = ceil(packets / U), as the probe's twin),
// loads L, streaming stores or not, and the parts of the Kokkos kernel's shape in `Shape`.
// Non-null `counters`: count resident blocks per SM in counters[0, kMaxSms) and keep each
// SM's peak in counters[kMaxSms, 2 kMaxSms) (a run-time switch, so that the timed and the
// counted launch are one kernel with one register count: a compile-time one cost 15
// registers). The packet loops stride by the block's size read at run time, as the
// probe's twin does (a compile-time stride let nvcc peel a trip and doubled the loads).
// `Tag` makes a separate kernel (its carveout is its own).
template <int T, int U, Load L, bool kStream, unsigned Shape, int Tag>
__global__ void TwinRows(float* __restrict__ y, const float* __restrict__ x,
                         const float* __restrict__ gamma, const float* __restrict__ beta,
                         int64_t cols, int* counters) {
  using Index = std::conditional_t<(Shape & kInt32) != 0, int, int64_t>;
  extern __shared__ float tree[];
  __shared__ float warp_sums[32];
  constexpr bool kY = (Shape & kYBlock) != 0;
  const int rank = kY ? threadIdx.y : threadIdx.x;
  const int stride = kY ? blockDim.y : blockDim.x;
  if (counters && rank == 0) {
    const unsigned sm = SmId();
    atomicMax(&counters[kMaxSms + sm], atomicAdd(&counters[sm], 1) + 1);
  }
  if constexpr ((Shape & kStartBarrier) != 0) __syncthreads();
  const Index n = static_cast<Index>(cols / 4), s = (n + U - 1) / U;
  const auto* xr = reinterpret_cast<const float4*>(x) + blockIdx.x * (cols / 4);
  auto* yr = reinterpret_cast<float4*>(y) + blockIdx.x * (cols / 4);
  const auto* g4 = reinterpret_cast<const float4*>(gamma);
  const auto* b4 = reinterpret_cast<const float4*>(beta);
  auto load = [](const float4* p) {
    if constexpr (L == Load::kCa) {
      return __ldca(p);
    } else {
      return LoadWeak(p);
    }
  };
  auto group = [&](Index k, float4(&v)[U]) {
#pragma unroll
    for (int q = 0; q < U; ++q) v[q] = load(xr + (k + q * s < n ? k + q * s : k));
  };
  auto reduce = [&](float v) {
    if constexpr ((Shape & kTree) != 0) {
      return TreeSum<T>(v, tree, rank);
    } else {
      return BlockSum<T>(v, warp_sums, rank);
    }
  };
  float sum = 0.f;
  for (Index k = rank; k < s; k += stride) {
    float4 v[U];
    group(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      if (k + q * s < n) sum += v[q].x + v[q].y + v[q].z + v[q].w;
    }
  }
  const float mean = reduce(sum) / static_cast<float>(cols);
  float sq = 0.f;
  for (Index k = rank; k < s; k += stride) {
    float4 v[U];
    group(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const float a = v[q].x - mean, b = v[q].y - mean, c = v[q].z - mean, d = v[q].w - mean;
      if (k + q * s < n) sq += a * a + b * b + c * c + d * d;
    }
  }
  const float rstd = rsqrtf(reduce(sq) / static_cast<float>(cols) + kEps);
  for (Index k = rank; k < s; k += stride) {
    float4 v[U];
    group(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const Index j = k + q * s;
      if (j < n) {
        const float4 g = load(g4 + j), b = load(b4 + j);
        const float4 out =
            make_float4((v[q].x - mean) * rstd * g.x + b.x, (v[q].y - mean) * rstd * g.y + b.y,
                        (v[q].z - mean) * rstd * g.z + b.z, (v[q].w - mean) * rstd * g.w + b.w);
        if constexpr (kStream) {
          __stcs(yr + j, out);
        } else {
          yr[j] = out;
        }
      }
    }
  }
  if (counters) {  // a block stays on its SM: read the id again rather than keep it
    __syncthreads();
    if (rank == 0) atomicSub(&counters[SmId()], 1);
  }
}

// Caps `kernel` at `blocks_per_sm` resident blocks per SM without taking L1 away: sets
// its shared-memory carveout to 16 KiB and returns the dynamic shared memory (bytes,
// unused by the kernel beyond `needed`) each launch must ask for so that one block more
// does not fit; `needed` where the attributes cannot be read.
int ResidencySharedBytes(const void* kernel, int blocks_per_sm, int needed) {
  constexpr int kCarveoutBytes = 16 << 10, kGranule = 128;
  int dev = 0, per_sm = 0, reserved = 0;
  cudaFuncAttributes attr{};
  if (blocks_per_sm < 1 || cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev) !=
          cudaSuccess ||
      cudaFuncGetAttributes(&attr, kernel) != cudaSuccess || per_sm <= 0) {
    cudaGetLastError();  // leave no error behind for the launch to report
    return needed;
  }
  // Percent rounded down (the driver rounds up to a size it supports); the block's share
  // rounded down to the allocation granule, so `blocks_per_sm` fit either way.
  const int percent = std::max(1, 100 * kCarveoutBytes / per_sm);
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent) !=
      cudaSuccess) {
    cudaGetLastError();
    return needed;
  }
  const int share = kCarveoutBytes / blocks_per_sm / kGranule * kGranule;
  return std::max(needed, share - reserved - static_cast<int>(attr.sharedSizeBytes));
}

struct Buffers {
  float *y, *x, *g, *b;
};

// A twin form: its kernel, launch shape and residency cap (0: none).
template <int T, int U, Load L, bool kStream, unsigned Shape = 0, int Cap = 0>
struct Twin {
  static constexpr auto kKernel = &TwinRows<T, U, L, kStream, Shape, Cap>;
  // Dynamic shared memory per launch: Kokkos' reduction space (8 bytes per member + 2, as
  // Kokkos' team ParallelFor reserves), raised to hold the cap where there is one.
  static int Shared() {
    constexpr int kNeeded = (Shape & kTree) != 0 ? 8 * (T + 2) : 0;
    static const int bytes =
        Cap ? ResidencySharedBytes(reinterpret_cast<const void*>(kKernel), Cap, kNeeded) : kNeeded;
    return bytes;
  }
  static void Launch(const Buffers& b, int64_t nrows, int64_t cols, cudaStream_t stream,
                     int* counters) {
    const dim3 block = (Shape & kYBlock) != 0 ? dim3(1, T) : dim3(T);
    kKernel<<<static_cast<unsigned>(nrows), block, Shared(), stream>>>(b.y, b.x, b.g, b.b, cols,
                                                                       counters);
  }
  // Registers and resident blocks per SM by the occupancy API.
  static void Occupancy(int* regs, int* blocks) {
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kKernel)) == cudaSuccess) {
      *regs = a.numRegs;
    }
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kKernel, T, Shared());
  }
};

// The probe's kernel in the form the probe chooses on this device (kForm -1) or in the
// grouped (0) or compact (1) form (profiler/kokkos_row_launch.h).
template <int kForm>
xdeep::profiler::kokkos::RowForm KokkosForm() {
  namespace k = xdeep::profiler::kokkos;
  if (kForm < 0) return k::ChooseRowLaunch(rows::QueryDevice()).form;
  return kForm == 0 ? k::RowForm::kGrouped : k::RowForm::kCompact;
}
template <int kForm>
void LaunchKokkos(const Buffers& b, int64_t nrows, int64_t cols, cudaStream_t, int*) {
  using F4 = rows::F4;
  static const xdeep::profiler::kokkos::RowForm form = KokkosForm<kForm>();
  rows::LayerNorm<Exec>(reinterpret_cast<F4*>(b.y), reinterpret_cast<const F4*>(b.x),
                        reinterpret_cast<const F4*>(b.g), reinterpret_cast<const F4*>(b.b), nrows,
                        cols / 4, form);
}

void LaunchCudaTwin(const Buffers& b, int64_t nrows, int64_t cols, cudaStream_t stream, int*) {
  xdeep::profiler::cuda::LaunchLayerNormRows(b.y, b.x, b.g, b.b, nrows, cols, kEps, stream);
}

struct Form {
  const char* name;
  void (*launch)(const Buffers&, int64_t, int64_t, cudaStream_t, int*);
  void (*occupancy)(int*, int*);  // null: not known here (the probe's own kernels)
  bool counted;                   // has a counting build (the twin forms compiled here)
};

constexpr Load kCa = Load::kCa, kWeak = Load::kWeak;
template <class F>
constexpr Form TwinForm(const char* name) {
  return {name, &F::Launch, &F::Occupancy, true};
}
const Form kForms[] = {
    {"kokkos_probe", &LaunchKokkos<-1>, nullptr, false},
    {"kokkos_grouped", &LaunchKokkos<0>, nullptr, false},
    {"kokkos_compact", &LaunchKokkos<1>, nullptr, false},
    {"cuda_twin", &LaunchCudaTwin, nullptr, false},
    TwinForm<Twin<256, 4, kCa, false, false>>("twin_copy"),
    TwinForm<Twin<256, 4, kWeak, false, false>>("twin_weak"),
    TwinForm<Twin<256, 4, kCa, true, false>>("twin_stcs"),
    TwinForm<Twin<256, 4, kWeak, true, false>>("twin_weak_stcs"),
    TwinForm<Twin<256, 4, kCa, false, false, 5>>("twin_blocks5"),
    TwinForm<Twin<256, 4, kCa, false, false, 4>>("twin_blocks4"),
    TwinForm<Twin<256, 4, kCa, false, false, 3>>("twin_blocks3"),
    TwinForm<Twin<256, 4, kWeak, false, kKokkosShape>>("twin_as_kokkos"),
    TwinForm<Twin<256, 4, kWeak, false, kKokkosShape, 5>>("twin_as_kokkos5"),
    TwinForm<Twin<256, 4, kCa, false, kKokkosShape>>("twin_as_kokkos_ca"),
    TwinForm<Twin<256, 4, kWeak, false, kKokkosShape & ~kYBlock>>("twin_as_kokkos_xblock"),
    TwinForm<Twin<256, 4, kWeak, false, kKokkosShape & ~kInt32>>("twin_as_kokkos_int64"),
    TwinForm<Twin<256, 4, kWeak, false, kKokkosShape & ~kTree>>("twin_as_kokkos_shuffle"),
    TwinForm<Twin<256, 4, kWeak, false, kKokkosShape & ~kStartBarrier>>("twin_as_kokkos_nostart"),
    TwinForm<Twin<128, 8, kCa, false, false>>("twin_t128u8"),
    TwinForm<Twin<128, 4, kCa, false, false>>("twin_t128u4"),
    TwinForm<Twin<512, 2, kCa, false, false>>("twin_t512u2"),
    TwinForm<Twin<1024, 1, kCa, false, false>>("twin_t1024u1"),
};

// Peak resident blocks per SM of one counted launch: the largest over SMs and the mean
// over the SMs that ran a block.
void Residency(const Form& f, const Buffers& b, int64_t nrows, int64_t cols, cudaStream_t stream,
               int* counters, int* peak_max, double* peak_mean) {
  *peak_max = -1;
  *peak_mean = -1;
  if (!f.counted) return;
  cudaMemsetAsync(counters, 0, 2 * kMaxSms * sizeof(int), stream);
  f.launch(b, nrows, cols, stream, counters);
  std::vector<int> host(2 * kMaxSms);
  cudaStreamSynchronize(stream);
  if (cudaMemcpy(host.data(), counters, host.size() * sizeof(int), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    return;
  }
  int used = 0, total = 0;
  *peak_max = 0;
  for (int sm = 0; sm < kMaxSms; ++sm) {
    const int p = host[kMaxSms + sm];
    if (p > 0) ++used, total += p;
    *peak_max = std::max(*peak_max, p);
  }
  *peak_mean = used ? static_cast<double>(total) / used : 0;
}

void FillPattern(float* p, int64_t n, int salt) {
  Kokkos::parallel_for(
      "study::fill", Kokkos::RangePolicy<Exec, Kokkos::IndexType<int64_t>>(0, n),
      KOKKOS_LAMBDA(const int64_t i) {
        p[i] = 0.5f + static_cast<float>((i * 2654435761LL + salt * 97) % 1000) / 1000.0f;
      });
}

// Rows 0, middle and last against a double-precision layer norm of the same inputs.
bool RowsMatch(const float* y, const float* x, const float* g, const float* b, int64_t nrows,
               int64_t cols) {
  std::vector<float> hy(cols), hx(cols), hg(cols), hb(cols);
  cudaMemcpy(hg.data(), g, cols * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(hb.data(), b, cols * 4, cudaMemcpyDeviceToHost);
  for (int64_t r : {int64_t{0}, nrows / 2, nrows - 1}) {
    cudaMemcpy(hx.data(), x + r * cols, cols * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(hy.data(), y + r * cols, cols * 4, cudaMemcpyDeviceToHost);
    double mean = 0, var = 0;
    for (float v : hx) mean += v;
    mean /= cols;
    for (float v : hx) var += (v - mean) * (v - mean);
    const double rstd = 1 / std::sqrt(var / cols + kEps);
    for (int64_t j = 0; j < cols; ++j) {
      const double want = (hx[j] - mean) * rstd * hg[j] + hb[j];
      if (!std::isfinite(hy[j]) || std::abs(hy[j] - want) > 1e-4 * (std::abs(want) + 1))
        return false;
    }
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
    if (end == c) return {};
    c = *end == ',' ? end + 1 : end;
  }
  return out;
}

// The forms named in a comma-separated list; empty (after a message) if one is unknown.
std::vector<const Form*> ParseForms(const std::string& list) {
  std::vector<const Form*> out;
  for (size_t begin = 0; begin <= list.size();) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string name = list.substr(begin, end - begin);
    const auto it = std::find_if(std::begin(kForms), std::end(kForms),
                                 [&](const Form& f) { return name == f.name; });
    if (it == std::end(kForms)) {
      std::fprintf(stderr, "unknown form '%s'; forms:", name.c_str());
      for (const Form& f : kForms) std::fprintf(stderr, " %s", f.name);
      std::fprintf(stderr, "\n");
      return {};
    }
    out.push_back(&*it);
    begin = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t cols = 4096;
  int rounds = 3;
  std::vector<int64_t> sizes_mib = {256, 512, 1024};
  std::vector<const Form*> forms;
  for (const Form& f : kForms) forms.push_back(&f);
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "option %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--row-length") {
      cols = std::atoll(argv[i + 1]);
    } else if (a == "--sizes") {
      sizes_mib = ParseSizes(argv[i + 1]);
    } else if (a == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else if (a == "--forms") {
      forms = ParseForms(argv[i + 1]);
      if (forms.empty()) return 2;
    } else {
      std::fprintf(stderr,
                   "unknown option %s (--row-length N, --sizes MiB,MiB,..., --rounds N, "
                   "--forms name,...)\n",
                   a.c_str());
      return 2;
    }
  }
  if (cols <= 0 || cols % 4 != 0 || sizes_mib.empty() || rounds < 1) {
    std::fprintf(stderr,
                 "--row-length must be a positive multiple of 4, --sizes a list of MiB, "
                 "--rounds at least 1\n");
    return 2;
  }
  Kokkos::ScopeGuard guard;
  std::fprintf(stderr, "kokkos_probe: %s\n",
               xdeep::profiler::kokkos::Describe(
                   xdeep::profiler::kokkos::ChooseRowLaunch(rows::QueryDevice()))
                   .c_str());
  const cudaStream_t stream = Exec().cuda_stream();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf(
      "size_mib,buffer,form,round,rows,regs,blocks_per_sm,gpu_us_per_op,gbps,host_us_per_op,"
      "host_gbps,reps,check,peak_blocks_per_sm,mean_peak_blocks_per_sm\n");
  int* counters = nullptr;
  if (cudaMalloc(&counters, 2 * kMaxSms * sizeof(int)) != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc of the residency counters failed\n");
    return 1;
  }
  for (const int64_t mib : sizes_mib) {
    const int64_t n = mib * 1024 * 1024 / 4 / cols * cols, nrows = n / cols;
    const double bytes = (2.0 * n + 2.0 * cols) * 4;  // profiler/bandwidth_kernels.h
    Buffers raw{};
    float** order[] = {&raw.y, &raw.x, &raw.g, &raw.b};
    for (int i = 0; i < 4; ++i) {
      if (cudaMalloc(order[i], (i < 2 ? n : cols) * sizeof(float)) != cudaSuccess) {
        std::fprintf(stderr, "cudaMalloc of %lld MiB failed\n", static_cast<long long>(mib));
        return 1;
      }
    }
    using View = Kokkos::View<float*, Exec::memory_space>;
    const auto alloc = [](const char* name) {
      return Kokkos::view_alloc(std::string(name), Kokkos::WithoutInitializing);
    };
    View vy(alloc("study::y"), n), vx(alloc("study::x"), n), vg(alloc("study::gamma"), cols),
        vb(alloc("study::beta"), cols);
    const Buffers view{vy.data(), vx.data(), vg.data(), vb.data()};
    for (const Buffers& buf : {raw, view}) {
      FillPattern(buf.x, n, 2);
      FillPattern(buf.g, cols, 3);
      FillPattern(buf.b, cols, 4);
      Kokkos::fence();
    }
    // Forms interleaved within a round, so drift (clocks, temperature) spreads over all.
    for (int round = 1; round <= rounds; ++round) {
      for (const bool use_view : {false, true}) {
        const Buffers& buf = use_view ? view : raw;
        for (const Form* form : forms) {
          const Form& f = *form;
          cudaMemset(buf.y, 0, n * sizeof(float));  // the check then sees this form's output
          cudaDeviceSynchronize();
          for (int w = 0; w < 3; ++w) f.launch(buf, nrows, cols, stream, nullptr);
          cudaEventRecord(start, stream);
          f.launch(buf, nrows, cols, stream, nullptr);
          cudaEventRecord(stop, stream);
          cudaEventSynchronize(stop);
          float ms = 0;
          cudaEventElapsedTime(&ms, start, stop);
          const int reps = std::max(3, static_cast<int>(2.0 / std::max(ms, 1e-3f)));
          std::vector<double> gpu, host;
          for (int s = 0; s < 11; ++s) {
            Kokkos::fence();
            const auto t0 = std::chrono::steady_clock::now();
            cudaEventRecord(start, stream);
            for (int r = 0; r < reps; ++r) f.launch(buf, nrows, cols, stream, nullptr);
            cudaEventRecord(stop, stream);
            Kokkos::fence();
            const auto t1 = std::chrono::steady_clock::now();
            cudaEventSynchronize(stop);
            cudaEventElapsedTime(&ms, start, stop);
            gpu.push_back(ms * 1e3 / reps);
            host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / reps);
          }
          const bool ok = cudaGetLastError() == cudaSuccess &&
                          RowsMatch(buf.y, buf.x, buf.g, buf.b, nrows, cols);
          int regs = -1, blocks = -1, peak = -1;
          double mean_peak = -1;
          if (f.occupancy) f.occupancy(&regs, &blocks);
          Residency(f, buf, nrows, cols, stream, counters, &peak, &mean_peak);
          const double us = Median(gpu), hus = Median(host);
          std::printf("%lld,%s,%s,%d,%lld,%d,%d,%.2f,%.1f,%.2f,%.1f,%d,%s,%d,%.2f\n",
                      static_cast<long long>(mib), use_view ? "kokkos_view" : "cuda_malloc", f.name,
                      round, static_cast<long long>(nrows), regs, blocks, us, bytes / (us * 1e3),
                      hus, bytes / (hus * 1e3), reps, ok ? "ok" : "FAILED", peak, mean_peak);
          std::fflush(stdout);
        }
      }
    }
    for (float* p : {raw.y, raw.x, raw.g, raw.b}) cudaFree(p);
  }
  cudaFree(counters);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
