// Why the CUDA layer norm twin ran 5.8 % below the Kokkos layer norm at 1 GiB per array
// on H100 and 1.9 % at 256 MiB (issue 26, bench/kokkos/data/2026-11-27_h100x1_run9): the
// probe's two kernels and forms of the twin that each change one thing, on two kinds of
// buffer, at several sizes, in interleaved rounds, all timed the same two ways.
//   layer_norm_study [--row-length 4096] [--sizes 256,512,1024] [--rounds 3] > study.csv
// Forms:
//   kokkos_probe      rows::LayerNorm, the Kokkos probe's kernel (47 registers)
//   kokkos_bounds6    the same with LaunchBounds<256, 6> (6 teams per SM, as the twin)
//   cuda_twin         LaunchLayerNormRows, the CUDA probe's twin (39 registers, 6 blocks
//                     per SM; capped at 5 in run 11 only)
//   twin_copy         the twin's code compiled here, one block per row (must match cuda_twin)
//   twin_int32        the same with 32-bit packet indices, as the Kokkos kernel has
//   twin_resident4/5/6  the same with SMs x 4/5/6 blocks, each looping over rows: how
//                     many rows are resident per SM, at one register count
//   twin_l1_small     one block per row with 40 KiB of unused shared memory per block,
//                     which leaves 5 resident and little L1: do passes 2-3 need L1?
//   twin_blocks6/5/4  one block per row, at most 6 / 5 / 4 resident per SM with L1 kept
//                     (16 KiB carveout, ResidencySharedBytes; in run 11 cuda_twin was
//                     capped at 5 this way: no change)
//   twin_plain        no __restrict__ and plain loads (x, gamma, beta), as the Kokkos kernel
//   twin_tree         the twin's loads, Kokkos' kind of team reduction (shared tree)
//   twin_plain_tree   both
// Buffers: cuda_malloc (y, x, gamma, beta in that order, as the CUDA probe allocates
// them) and kokkos_view (Kokkos::Views, as the Kokkos probe allocates them).
// Timing: CUDA events around a batch of ~2 ms on Kokkos' stream (the CUDA probe's clock)
// and the host clock from before the first launch to after Kokkos::fence() (the Kokkos
// probe's clock), 11 batches, medians. Data check: rows 0, middle and last against a
// double-precision host layer norm.
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

namespace rows = xdeep::profiler::kokkos::rows;
using Exec = Kokkos::DefaultExecutionSpace;
constexpr float kEps = xdeep::profiler::kokkos::kLayerNormEps;
constexpr int kThreads = 256, U = 4;

// profiler/cuda/kernels.cu's BlockReduce (sum), for the twin forms below.
__device__ float BlockSum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : 0.f;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

// A block sum as Kokkos' team reduction does it for 256 single-lane members: a slot per
// thread in shared memory (Kokkos reserves team_size + 2 of them) and a tree with a
// barrier per level (the Kokkos layer norm's PTX has 20 bar.sync against the twin's 6).
__device__ float TreeSum(float v, float* tree) {
  tree[threadIdx.x] = v;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) tree[threadIdx.x] += tree[threadIdx.x + half];
    __syncthreads();
  }
  v = tree[0];
  __syncthreads();
  return v;
}

// The twin's row: profiler/cuda/kernels.cu's LayerNormRowsKernel body, with the index
// type as a parameter; kPlain: plain loads (no __ldca), as the Kokkos kernel's; kTree:
// TreeSum instead of the twin's shuffle reduction.
template <class Index, bool kPlain = false, bool kTree = false>
__device__ void TwinRow(float4* yr, const float4* xr, const float4* g4, const float4* b4,
                        Index n, float cols, float* shared) {
  const Index s = (n + U - 1) / U;
  auto load = [](const float4* p) { return kPlain ? *p : __ldca(p); };
  auto group = [&](Index k, float4 (&v)[U]) {
#pragma unroll
    for (int q = 0; q < U; ++q) v[q] = load(xr + (k + q * s < n ? k + q * s : k));
  };
  auto reduce = [&](float v) { return kTree ? TreeSum(v, shared) : BlockSum(v, shared); };
  float sum = 0.f;
  for (Index k = threadIdx.x; k < s; k += blockDim.x) {
    float4 v[U];
    group(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      if (k + q * s < n) sum += v[q].x + v[q].y + v[q].z + v[q].w;
    }
  }
  const float mean = reduce(sum) / cols;
  float sq = 0.f;
  for (Index k = threadIdx.x; k < s; k += blockDim.x) {
    float4 v[U];
    group(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const float a = v[q].x - mean, b = v[q].y - mean, c = v[q].z - mean, d = v[q].w - mean;
      if (k + q * s < n) sq += a * a + b * b + c * c + d * d;
    }
  }
  const float rstd = rsqrtf(reduce(sq) / cols + kEps);
  for (Index k = threadIdx.x; k < s; k += blockDim.x) {
    float4 v[U];
    group(k, v);
#pragma unroll
    for (int q = 0; q < U; ++q) {
      const Index j = k + q * s;
      if (j < n) {
        const float4 g = load(g4 + j), b = load(b4 + j);
        yr[j] = make_float4((v[q].x - mean) * rstd * g.x + b.x, (v[q].y - mean) * rstd * g.y + b.y,
                            (v[q].z - mean) * rstd * g.z + b.z, (v[q].w - mean) * rstd * g.w + b.w);
      }
    }
  }
}

// Block b takes rows b, b + gridDim.x, ...: one row with a grid of `rows` blocks. `Tag`
// makes a separate kernel, whose shared-memory carveout is its own.
template <class Index, int Tag = 0>
__global__ void TwinRows(float* __restrict__ y, const float* __restrict__ x,
                         const float* __restrict__ gamma, const float* __restrict__ beta,
                         int64_t rows, int64_t cols) {
  __shared__ float shared[32];
  const int64_t n = cols / 4;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    TwinRow<Index>(reinterpret_cast<float4*>(y) + r * n, reinterpret_cast<const float4*>(x) + r * n,
                   reinterpret_cast<const float4*>(gamma), reinterpret_cast<const float4*>(beta),
                   static_cast<Index>(n), static_cast<float>(cols), shared);
  }
}

// One block per row with pointers as the Kokkos kernel has them (no __restrict__) and
// the choices of TwinRow; 256 threads.
template <bool kPlain, bool kTree>
__global__ void TwinRowsAsKokkos(float* y, const float* x, const float* gamma, const float* beta,
                                 int64_t cols) {
  __shared__ float shared[256];
  const int64_t n = cols / 4;
  TwinRow<int64_t, kPlain, kTree>(
      reinterpret_cast<float4*>(y) + blockIdx.x * n, reinterpret_cast<const float4*>(x) + blockIdx.x * n,
      reinterpret_cast<const float4*>(gamma), reinterpret_cast<const float4*>(beta), n,
      static_cast<float>(cols), shared);
}

enum class Form {
  kKokkos,
  kKokkosBounds6,
  kCudaTwin,
  kTwinCopy,
  kTwinInt32,
  kTwinResident4,
  kTwinResident5,
  kTwinResident6,
  kTwinL1Small,
  kTwinBlocks6,
  kTwinBlocks5,
  kTwinBlocks4,
  kTwinPlain,
  kTwinTree,
  kTwinPlainTree
};
constexpr Form kForms[] = {Form::kKokkos,        Form::kKokkosBounds6, Form::kCudaTwin,
                           Form::kTwinCopy,      Form::kTwinInt32,     Form::kTwinResident4,
                           Form::kTwinResident5, Form::kTwinResident6, Form::kTwinL1Small,
                           Form::kTwinBlocks6,   Form::kTwinBlocks5,   Form::kTwinBlocks4,
                           Form::kTwinPlain,     Form::kTwinTree,      Form::kTwinPlainTree};
const char* Name(Form f) {
  switch (f) {
    case Form::kKokkos: return "kokkos_probe";
    case Form::kKokkosBounds6: return "kokkos_bounds6";
    case Form::kCudaTwin: return "cuda_twin";
    case Form::kTwinCopy: return "twin_copy";
    case Form::kTwinInt32: return "twin_int32";
    case Form::kTwinResident4: return "twin_resident4";
    case Form::kTwinResident5: return "twin_resident5";
    case Form::kTwinResident6: return "twin_resident6";
    case Form::kTwinL1Small: return "twin_l1_small";
    case Form::kTwinBlocks6: return "twin_blocks6";
    case Form::kTwinBlocks5: return "twin_blocks5";
    case Form::kTwinBlocks4: return "twin_blocks4";
    case Form::kTwinPlain: return "twin_plain";
    case Form::kTwinTree: return "twin_tree";
    case Form::kTwinPlainTree: return "twin_plain_tree";
  }
  return "?";
}
constexpr int kL1SmallShared = 40 << 10;

// Caps `kernel` at `blocks_per_sm` resident blocks per SM without taking L1 away: sets
// its shared-memory carveout to 16 KiB and returns the dynamic shared memory (bytes,
// unused by the kernel) each launch must ask for so that one block more does not fit;
// 0 where the attributes cannot be read. (The probe's twin had this cap in run 11 only:
// it changed nothing.)
int ResidencySharedBytes(const void* kernel, int blocks_per_sm) {
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
    return 0;
  }
  // Percent rounded down (the driver rounds up to a size it supports); the block's share
  // rounded down to the allocation granule, so `blocks_per_sm` fit either way.
  const int percent = std::max(1, 100 * kCarveoutBytes / per_sm);
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent) !=
      cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const int share = kCarveoutBytes / blocks_per_sm / kGranule * kGranule;
  return std::max(0, share - reserved - static_cast<int>(attr.sharedSizeBytes));
}

// twin_blocks6 / 5 / 4: one block per row, capped at 6 / 5 / 4 per SM with a 16 KiB
// carveout (ResidencySharedBytes, as the probe's twin in run 11), each its own kernel.
template <int Blocks>
int BlocksShared() {
  static const int shared = ResidencySharedBytes(
      reinterpret_cast<const void*>(&TwinRows<int64_t, Blocks>), Blocks);
  return shared;
}
template <int Blocks>
void LaunchBlocks(float* y, const float* x, const float* g, const float* b, int64_t nrows,
                  int64_t cols, cudaStream_t stream) {
  TwinRows<int64_t, Blocks><<<static_cast<unsigned>(nrows), kThreads, BlocksShared<Blocks>(),
                              stream>>>(y, x, g, b, nrows, cols);
}

int Sms() {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  return sms;
}

// Registers and resident blocks per SM of the forms compiled here (-1: not known here;
// the Kokkos kernels' registers come from -Xptxas -v at build time).
void Occupancy(Form f, int* regs, int* blocks) {
  *regs = *blocks = -1;
  const void* k = nullptr;
  int smem = 0;
  switch (f) {
    case Form::kTwinInt32: k = reinterpret_cast<const void*>(&TwinRows<int>); break;
    case Form::kTwinL1Small: smem = kL1SmallShared; [[fallthrough]];
    case Form::kTwinCopy:
    case Form::kTwinResident4:
    case Form::kTwinResident5:
    case Form::kTwinResident6: k = reinterpret_cast<const void*>(&TwinRows<int64_t>); break;
    case Form::kTwinBlocks6:
      k = reinterpret_cast<const void*>(&TwinRows<int64_t, 6>);
      smem = BlocksShared<6>();
      break;
    case Form::kTwinBlocks5:
      k = reinterpret_cast<const void*>(&TwinRows<int64_t, 5>);
      smem = BlocksShared<5>();
      break;
    case Form::kTwinBlocks4:
      k = reinterpret_cast<const void*>(&TwinRows<int64_t, 4>);
      smem = BlocksShared<4>();
      break;
    case Form::kTwinPlain: k = reinterpret_cast<const void*>(&TwinRowsAsKokkos<true, false>); break;
    case Form::kTwinTree: k = reinterpret_cast<const void*>(&TwinRowsAsKokkos<false, true>); break;
    case Form::kTwinPlainTree:
      k = reinterpret_cast<const void*>(&TwinRowsAsKokkos<true, true>);
      break;
    default: return;
  }
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, k) == cudaSuccess) *regs = a.numRegs;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, k, kThreads, smem);
}

void Launch(Form f, float* y, const float* x, const float* g, const float* b, int64_t nrows,
            int64_t cols, cudaStream_t stream) {
  using F4 = rows::F4;
  static const int sms = Sms();
  const auto grid = static_cast<unsigned>(nrows);
  switch (f) {
    case Form::kKokkos:
      rows::LayerNorm<Exec>(reinterpret_cast<F4*>(y), reinterpret_cast<const F4*>(x),
                            reinterpret_cast<const F4*>(g), reinterpret_cast<const F4*>(b), nrows,
                            cols / 4);
      break;
    case Form::kKokkosBounds6:
      rows::LayerNorm<Exec, Kokkos::LaunchBounds<256, 6>>(
          reinterpret_cast<F4*>(y), reinterpret_cast<const F4*>(x), reinterpret_cast<const F4*>(g),
          reinterpret_cast<const F4*>(b), nrows, cols / 4);
      break;
    case Form::kCudaTwin:
      xdeep::profiler::cuda::LaunchLayerNormRows(y, x, g, b, nrows, cols, kEps, stream);
      break;
    case Form::kTwinCopy:
      TwinRows<int64_t><<<grid, kThreads, 0, stream>>>(y, x, g, b, nrows, cols);
      break;
    case Form::kTwinInt32:
      TwinRows<int><<<grid, kThreads, 0, stream>>>(y, x, g, b, nrows, cols);
      break;
    case Form::kTwinResident4:
    case Form::kTwinResident5:
    case Form::kTwinResident6: {
      const int per_sm = f == Form::kTwinResident4 ? 4 : f == Form::kTwinResident5 ? 5 : 6;
      TwinRows<int64_t><<<sms * per_sm, kThreads, 0, stream>>>(y, x, g, b, nrows, cols);
      break;
    }
    case Form::kTwinL1Small:
      TwinRows<int64_t><<<grid, kThreads, kL1SmallShared, stream>>>(y, x, g, b, nrows, cols);
      break;
    case Form::kTwinBlocks6: LaunchBlocks<6>(y, x, g, b, nrows, cols, stream); break;
    case Form::kTwinBlocks5: LaunchBlocks<5>(y, x, g, b, nrows, cols, stream); break;
    case Form::kTwinBlocks4: LaunchBlocks<4>(y, x, g, b, nrows, cols, stream); break;
    case Form::kTwinPlain:
      TwinRowsAsKokkos<true, false><<<grid, kThreads, 0, stream>>>(y, x, g, b, cols);
      break;
    case Form::kTwinTree:
      TwinRowsAsKokkos<false, true><<<grid, kThreads, 0, stream>>>(y, x, g, b, cols);
      break;
    case Form::kTwinPlainTree:
      TwinRowsAsKokkos<true, true><<<grid, kThreads, 0, stream>>>(y, x, g, b, cols);
      break;
  }
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
      if (!std::isfinite(hy[j]) || std::abs(hy[j] - want) > 1e-4 * (std::abs(want) + 1)) return false;
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

struct Buffers {
  float *y, *x, *g, *b;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t cols = 4096;
  int rounds = 3;
  std::vector<int64_t> sizes_mib = {256, 512, 1024};
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
    } else {
      std::fprintf(stderr, "unknown option %s (--row-length N, --sizes MiB,MiB,..., --rounds N)\n",
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
  const cudaStream_t stream = Exec().cuda_stream();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf(
      "size_mib,buffer,form,round,rows,regs,blocks_per_sm,gpu_us_per_op,gbps,host_us_per_op,"
      "host_gbps,reps,check\n");
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
        for (const Form f : kForms) {
          cudaMemset(buf.y, 0, n * sizeof(float));  // the check then sees this form's output
          cudaDeviceSynchronize();
          for (int w = 0; w < 3; ++w) Launch(f, buf.y, buf.x, buf.g, buf.b, nrows, cols, stream);
          cudaEventRecord(start, stream);
          Launch(f, buf.y, buf.x, buf.g, buf.b, nrows, cols, stream);
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
            for (int r = 0; r < reps; ++r) Launch(f, buf.y, buf.x, buf.g, buf.b, nrows, cols, stream);
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
          int regs = 0, blocks = 0;
          Occupancy(f, &regs, &blocks);
          const double us = Median(gpu), hus = Median(host);
          std::printf("%lld,%s,%s,%d,%lld,%d,%d,%.2f,%.1f,%.2f,%.1f,%d,%s\n",
                      static_cast<long long>(mib), use_view ? "kokkos_view" : "cuda_malloc",
                      Name(f), round, static_cast<long long>(nrows), regs, blocks, us,
                      bytes / (us * 1e3), hus, bytes / (hus * 1e3), reps, ok ? "ok" : "FAILED");
          std::fflush(stdout);
        }
      }
    }
    for (float* p : {raw.y, raw.x, raw.g, raw.b}) cudaFree(p);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 0;
}
