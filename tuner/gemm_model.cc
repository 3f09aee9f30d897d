// The GEMM time model (gemm_model.h): tile and wave quantisation, split-k, a
// memory floor and misalignment, and its least-squares fit (Nelder-Mead on
// log time; a handful of parameters, a few hundred points).
#include "tuner/gemm_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace xdeep::tuner {
namespace {

// Output tiles of cuBLAS's Hopper kernels (CTA tile m x n; k steps of 128 bytes, KStep).
struct Tile {
  int m, n;
};
constexpr Tile kTiles[] = {{128, 256}, {256, 128}, {128, 128}, {64, 256}, {128, 64}, {64, 64}};

// Depth of one k step of a tile, in elements: a stage loads one 128-byte row of
// each operand (the TMA swizzle's width), 64 bf16 / fp16 elements, 32 tf32 ones.
// A tf32 layer of k = 24-32 input channels pays half a 64-deep step's work.
double KStep(int element_bytes) { return 128.0 / std::max(1, element_bytes); }

// Bytes a dimension's stride is aligned to (16 and above: the fast kernels').
int AlignmentBytes(double dim, int element_bytes) {
  const int64_t bytes = static_cast<int64_t>(dim) * element_bytes;
  if (bytes <= 0) return 16;
  const int64_t low = bytes & -bytes;
  return static_cast<int>(std::min<int64_t>(low, 16));
}

int ClassOf(int alignment) {
  if (alignment >= 16) return -1;
  return alignment <= 2 ? 0 : alignment == 4 ? 1 : 2;
}

// How misaligned a GEMM's operands are: the class (index into
// GemmFit::misaligned_*, -1: 16-byte aligned) of its inputs' leading
// dimensions, and of its output's. Forward: X and W lead with k, the output
// with n; dgrad: dY with k, W with n; wgrad: dY^T with m, X with n.
struct Misalignment {
  int input = -1, output = -1;
};
Misalignment MisalignmentOf(double m, double n, double k, GemmLayout layout, int element_bytes) {
  const int an = AlignmentBytes(n, element_bytes);
  int in = 16;
  switch (layout) {
    case GemmLayout::kForward:
      in = AlignmentBytes(k, element_bytes);
      break;
    case GemmLayout::kDgrad:
      in = std::min(AlignmentBytes(k, element_bytes), an);
      break;
    case GemmLayout::kWgrad:
      in = std::min(AlignmentBytes(m, element_bytes), an);
      break;
  }
  return {ClassOf(in), ClassOf(an)};
}

// Whether cuBLAS runs an element-wise kernel for the GEMM: a 16-bit GEMM with
// a leading dimension of an input or of the output aligned to 2 bytes (one
// element) runs cutlass's sm75 "align1" kernels, which stage every operand
// element through a register (cp.async copies 4 bytes at least) and store the
// result element by element: their rate is the SM's load / store instructions,
// the same on H100 and H200 (~3 elements loaded a clock an SM, first
// convolutions and 50257-wide heads alike, every committed seed). tf32's
// 4-byte rows do take cp.async (cutlass sm80 kernels): not element-wise here.
bool ElementWiseShape(double m, double n, double k, GemmLayout layout, int element_bytes) {
  if (element_bytes != 2) return false;
  int least = AlignmentBytes(n, element_bytes);
  if (layout == GemmLayout::kWgrad) {
    least = std::min(least, AlignmentBytes(m, element_bytes));
  } else {
    least = std::min(least, AlignmentBytes(k, element_bytes));
  }
  return least <= element_bytes;
}

// Element-wise timing where the fit measured such kernels (GemmFit::element_wise);
// elsewhere (a built-in profile, a fit without such points) the misaligned
// factors stand for them.
bool ElementWise(const GemmFit& f, double m, double n, double k, GemmLayout layout) {
  return f.element_wise && ElementWiseShape(m, n, k, layout, f.element_bytes);
}

// Depth of an element-wise kernel's k step: cutlass sm75 / sm80 align1 tiles
// stage 32 elements of k (bf16 / fp16 "128x128_32x2", tf32 "..._32x3").
constexpr double kElementWiseKStep = 32;

double RateFactor(const GemmFit& f, const Misalignment& a, GemmLayout layout) {
  const double l = f.layout_rate[static_cast<int>(layout)];
  if (a.input >= 0) return l * f.misaligned_input[a.input];
  if (a.output >= 0) return l * f.misaligned_output[a.output];
  return l;
}

// The tensor cores' rate factor of a GEMM's tiles: an element-wise kernel's
// misalignment is timed by its element loads and stores (TileGridSeconds), not
// by a factor on the rate.
double KernelRate(const GemmFit& f, double m, double n, double k, GemmLayout layout,
                  bool element_wise) {
  if (element_wise) return f.layout_rate[static_cast<int>(layout)];
  return RateFactor(f, MisalignmentOf(m, n, k, layout, f.element_bytes), layout);
}

// Slices of k that fill the SMs a grid of `tiles` tiles leaves idle, each at
// least 256 deep.
double FillingSplit(double sms, double tiles, double k) {
  return std::max(1.0, std::min(std::floor(sms / tiles), std::floor(k / 256)));
}

// Time of the tiles of one tile shape, k split into `split` slices: waves of
// tiles over the SMs, each its k loop at the tile's rate plus its prologue and
// epilogue, and split's fp32 partials written and read once. A kernel that
// splits k in its launch (`cuts_last_wave`: Hopper's tf32 segment-k) cuts the
// k loop of a partial last wave's tiles over the SMs that wave leaves idle, as
// it cuts a grid smaller than one wave (FillingSplit): 135 tiles of 256 x 128
// on 132 SMs run as one wave and 1/44 of a wave's k loop, not two waves (seed
// 9127's tf32 wgrad m=768 n=5760 k=23,328 was +68 %). A last wave of more than
// half the SMs' tiles has no SM to spare and stays a quantised wave.
double TileGridSeconds(const GemmFit& f, double m, double n, double k, double tm, double tn,
                       double split, double rate_factor, double kstep, bool cuts_last_wave = false,
                       bool element_wise = false) {
  const double sms = f.sms;
  const double tiles = std::ceil(m / tm) * std::ceil(n / tn);
  const double eff = 1.0 / (1.0 + f.small_tile * (256.0 / tm + 256.0 / tn - 3.0));
  const double per_sm = f.peak_flops * eff * rate_factor / sms;
  if (element_wise) kstep = kElementWiseKStep;
  const double epilogue = element_wise ? tm * tn / f.element_store_rate
                                       : tm * tn * f.element_bytes * sms / f.store_bandwidth;
  const double kk = std::ceil(k / split / kstep) * kstep;
  const double units = tiles * split / sms;
  double waves = units + f.wave_quantisation * (std::ceil(units) - units);
  if (cuts_last_wave && units > 1) {
    const double whole = std::floor(tiles / sms), last = tiles - whole * sms;
    const double cut = last > 0 ? FillingSplit(sms, last, k) : 1.0;
    if (cut > 1) waves = whole + 1.0 / cut;
  }
  // A tile's k loop runs at its tensor-core rate or at the rate its SM loads
  // the tile's operand panels (the rows of A and columns of B it covers; a
  // tile past the matrix's edge loads only what lies inside), whichever is
  // slower: across the grid A is read ceil(n / tn) times and B ceil(m / tm)
  // times, and a grid of few tiles draws on few SMs' loads.
  const double flops_s = 2.0 * tm * tn * kk / per_sm;
  const double load_s = element_wise ? (tm + tn) * kk / f.element_load_rate
                                     : (std::min(tm, m) + std::min(tn, n)) * kk * f.element_bytes /
                                           f.sm_load_bandwidth;
  double s = waves * (std::max(flops_s, load_s) + f.tile_fixed_s + epilogue);
  // fp32 partials out and in, and the reduction's (or the zeroing memset's)
  // own launch.
  if (split > 1) s += 8.0 * m * n * split / f.bandwidth + f.split_fixed_s;
  return s;
}

double ComputeSeconds(const GemmFit& f, double m, double n, double k, double rate_factor,
                      double kstep, bool element_wise = false) {
  double best = std::numeric_limits<double>::infinity();
  const double sms = f.sms;
  for (const Tile& t : kTiles) {
    const double tiles = std::ceil(m / t.m) * std::ceil(n / t.n);
    // Split k where the tiles leave SMs idle.
    const double most = FillingSplit(sms, tiles, k);
    for (double split : {1.0, most}) {
      best = std::min(best, TileGridSeconds(f, m, n, k, t.m, t.n, split, rate_factor, kstep, false,
                                            element_wise));
      if (most <= 1) break;
    }
  }
  // Stream-K is a family of 16-byte-aligned kernels: no element-wise one.
  if (element_wise) return best;
  // Stream-K: the k steps of all tiles of the largest shape dealt evenly to
  // the SMs, partial tiles summed at the end.
  const Tile& t = kTiles[0];
  const double steps = std::ceil(m / t.m) * std::ceil(n / t.n) * std::ceil(k / kstep);
  const double per_sm = f.peak_flops * rate_factor / sms;
  const double tiles = std::ceil(m / t.m) * std::ceil(n / t.n);
  const double sk = steps / sms;
  best = std::min(
      best, (sk + f.wave_quantisation * (std::ceil(sk) - sk)) * 2.0 * t.m * t.n * kstep / per_sm +
                std::ceil(tiles / sms) * t.m * t.n * f.element_bytes * sms / f.store_bandwidth +
                f.tile_fixed_s + f.stream_k_fixed_s);
  return best;
}

// Kernel family (algorithm, split or not) and class (also the tile) keys.
int64_t FamilyKey(const GemmKernel& kernel) {
  return (int64_t{kernel.algo} + 1) << 40 | int64_t{kernel.split_k > 1} << 32;
}
int64_t ClassKey(const GemmKernel& kernel) {
  return FamilyKey(kernel) | int64_t{kernel.tile_m & 0xffff} << 16 | (kernel.tile_n & 0xffff);
}

double ClassLogFactor(const GemmFit& f, int64_t key) {
  auto it = std::lower_bound(f.kernel_classes.begin(), f.kernel_classes.end(), key,
                             [](const KernelClassFactor& c, int64_t k) { return c.key < k; });
  return it != f.kernel_classes.end() && it->key == key ? it->log_factor : 0.0;
}

// Output tiles of `kernel`'s grid for an m x n result.
double KernelTiles(const GemmKernel& kernel, double m, double n) {
  return std::ceil(m / kernel.tile_m) * std::ceil(n / kernel.tile_n);
}

bool SplitsInKernel(const GemmFit& f, const GemmKernel& kernel) {
  return kernel.split_k <= 1 && std::binary_search(f.in_kernel_split_algos.begin(),
                                                   f.in_kernel_split_algos.end(), kernel.algo);
}

// The kernel's own tile grid, without the classes' factors.
double KernelGridSeconds(const GemmFit& f, double m, double n, double k, GemmLayout layout,
                         const GemmKernel& kernel) {
  m = std::max(1.0, m), n = std::max(1.0, n), k = std::max(1.0, k);
  const bool ew = ElementWise(f, m, n, k, layout);
  const double rate = KernelRate(f, m, n, k, layout, ew);
  double split = std::max(1, kernel.split_k);
  const bool in_kernel = SplitsInKernel(f, kernel);
  if (in_kernel) split = FillingSplit(f.sms, KernelTiles(kernel, m, n), k);
  return TileGridSeconds(f, m, n, k, kernel.tile_m, kernel.tile_n, split, rate,
                         KStep(f.element_bytes), in_kernel, ew);
}

double MemorySeconds(const GemmFit& f, double m, double n, double k) {
  const double bytes = f.element_bytes * (m * k + k * n + m * n);
  // Operands and result that fit in L2 stay there between back-to-back GEMMs.
  if (bytes <= f.l2_bytes) return bytes / (f.bandwidth * f.l2_speedup);
  return bytes / f.bandwidth;
}

// The roofline of compute and memory, plus the per-GEMM fixed time (launch,
// the first loads' latency) that a streaming GEMM pays as well: a memory-bound
// GEMM of 10-25 MB draws ~1.5 TB/s on H100 / H200, of > 300 MB 2.7 / 3.6.
double Floor(const GemmFit& f, double compute, double memory) {
  return std::max(compute, memory) + f.fixed_s;
}

// The parameters the fit moves, in log space (factors as logits).
// peak, small_tile, tile_fixed, fixed, bandwidth, stream_k_fixed,
// store_bandwidth, wave_quantisation; then the misaligned factors, inputs'
// and output's; the layouts' rates; an SM's load bandwidth, L2's speed-up,
// a split's launch.
constexpr int kShape = 8;

// Memory-bound points a precision's fit needs before it fits the bandwidth,
// and memory-bound points that fit in L2 before it fits L2's speed-up.
constexpr int kMemoryBoundPointsToFitBandwidth = 16;
constexpr int kL2PointsToFitSpeedup = 8;
// Element-wise (align1) points before their load and store rates are fitted.
constexpr int kElementWisePointsToFit = 8;

double Logit(double a) { return std::log(a / (1 - std::min(a, 0.999))); }

std::vector<double> ToVector(const GemmFit& f) {
  std::vector<double> x = {std::log(f.peak_flops),      std::log(f.small_tile),
                           std::log(f.tile_fixed_s),    std::log(f.fixed_s),
                           std::log(f.bandwidth),       std::log(f.stream_k_fixed_s),
                           std::log(f.store_bandwidth), Logit(f.wave_quantisation)};
  for (double a : f.misaligned_input) x.push_back(Logit(a));
  for (double a : f.misaligned_output) x.push_back(Logit(a));
  x.push_back(std::log(f.layout_rate[1]));
  x.push_back(std::log(f.layout_rate[2]));
  x.push_back(std::log(f.sm_load_bandwidth));
  x.push_back(std::log(f.l2_speedup));
  x.push_back(std::log(f.split_fixed_s));
  x.push_back(std::log(f.element_load_rate));
  x.push_back(std::log(f.element_store_rate));
  return x;
}

// The most a launch-like fixed time may take (a GEMM's, a wave's, a split's
// second launch): kLaunchCeiling x the probe's smallest measured GEMM, a whole
// launch of a tiny kernel (3.1-3.6 us on H100 / H200, every committed seed). A
// split k's second launch is a memset and/or a reduction kernel, each no
// longer than such a GEMM plus its queueing: ~13-14 us. Without it a best-tile
// fit whose points prefer no split drives the split's launch up without bound
// (seed 5309's H200 fp16 fit: 3.7 s), and a kernel-aware fit would add it to
// every split kernel's time. Stream-K's fixed time is left unbounded: it only
// enters the best of the candidate grids, so a large one turns stream-K off and
// never lengthens a prediction, and the fits use it so (39-103 us on seed 5309's
// H200 best-tile fits); held at this ceiling it cost seed 5309's H200 check
// 0.9 point of median (gemm_model_calibration.md, "Session 20 (h20b)").
constexpr double kLaunchCeiling = 4.0;

// No GEMM streams device memory faster than the probe's copy does (the fit's
// start), with room for the copy's own spread between runs.
constexpr double kCopyHeadroom = 1.2;

// Where the fit's parameters may go: physical ranges the points cannot leave.
struct FitBounds {
  double max_launch_s = std::numeric_limits<double>::infinity();
  double max_bandwidth = std::numeric_limits<double>::infinity();
};

void FromVector(const std::vector<double>& x, GemmFit* f, const FitBounds& bounds = {}) {
  auto launch = [&](double log_s) { return std::min(std::exp(log_s), bounds.max_launch_s); };
  f->peak_flops = std::exp(x[0]);
  f->small_tile = std::exp(x[1]);
  f->tile_fixed_s = launch(x[2]);
  f->fixed_s = launch(x[3]);
  f->bandwidth = std::min(std::exp(x[4]), bounds.max_bandwidth);
  f->stream_k_fixed_s = std::exp(x[5]);
  f->store_bandwidth = std::exp(x[6]);
  f->wave_quantisation = 1.0 / (1.0 + std::exp(-x[7]));
  for (int i = 0; i < 3; ++i) {
    f->misaligned_input[i] = 1.0 / (1.0 + std::exp(-x[kShape + i]));
    f->misaligned_output[i] = 1.0 / (1.0 + std::exp(-x[kShape + 3 + i]));
  }
  f->layout_rate[1] = std::exp(x[kShape + 6]);
  f->layout_rate[2] = std::exp(x[kShape + 7]);
  // Bounded where the points do not pin them: L2 serves 1 to 4x device
  // memory's rate; the SMs' loads together draw at least device memory's
  // (else they, not the streaming bandwidth, would take the memory-bound
  // points: the two are told apart by how many SMs a grid keeps busy), an SM
  // at most 1 TB/s.
  f->l2_speedup = std::clamp(std::exp(x[kShape + 9]), 1.0, 4.0);
  const double sm_floor = f->bandwidth * f->l2_speedup / std::max(1, f->sms);
  f->sm_load_bandwidth = std::clamp(std::exp(x[kShape + 8]), sm_floor, std::max(sm_floor, 1e12));
  f->split_fixed_s = launch(x[kShape + 10]);
  f->element_load_rate = std::exp(x[kShape + 11]);
  f->element_store_rate = std::exp(x[kShape + 12]);
}

// Whether `x` leaves `bounds`; `clamped` gets x with each stray coordinate on
// its bound (in the parameters' log space).
bool OutOfBounds(const std::vector<double>& x, const FitBounds& bounds,
                 std::vector<double>* clamped) {
  bool out = false;
  std::vector<double> c = x;
  for (auto [index, most] : {std::pair{2, bounds.max_launch_s},
                             {3, bounds.max_launch_s},
                             {kShape + 10, bounds.max_launch_s},
                             {4, bounds.max_bandwidth}}) {
    if (std::exp(c[index]) > most) c[index] = std::log(most), out = true;
  }
  *clamped = c;
  return out;
}

// Nelder-Mead over the coordinates in `free` (the others stay at x0's).
std::vector<double> Minimise(const std::function<double(const std::vector<double>&)>& cost,
                             std::vector<double> x0, const std::vector<int>& free, int max_evals) {
  const int d = static_cast<int>(free.size());
  std::vector<std::vector<double>> simplex(d + 1, x0);
  std::vector<double> value(d + 1);
  for (int i = 0; i < d; ++i) simplex[i + 1][free[i]] += 0.5;
  for (int i = 0; i <= d; ++i) value[i] = cost(simplex[i]);
  int evals = d + 1;
  auto along = [&](const std::vector<double>& from, const std::vector<double>& to, double t) {
    std::vector<double> out = from;
    for (int c : free) out[c] = from[c] + t * (to[c] - from[c]);
    return out;
  };
  while (evals < max_evals) {
    std::vector<int> order(d + 1);
    for (int i = 0; i <= d; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return value[a] < value[b]; });
    const int best = order[0], worst = order[d], second = order[d - 1];
    if (value[worst] - value[best] < 1e-10) break;
    std::vector<double> centroid = x0;
    for (int c : free) {
      double s = 0;
      for (int i = 0; i <= d; ++i) {
        if (i != worst) s += simplex[i][c];
      }
      centroid[c] = s / d;
    }
    const std::vector<double> reflected = along(centroid, simplex[worst], -1.0);
    const double fr = cost(reflected);
    ++evals;
    if (fr < value[best]) {
      const std::vector<double> expanded = along(centroid, simplex[worst], -2.0);
      const double fe = cost(expanded);
      ++evals;
      if (fe < fr) {
        simplex[worst] = expanded, value[worst] = fe;
      } else {
        simplex[worst] = reflected, value[worst] = fr;
      }
    } else if (fr < value[second]) {
      simplex[worst] = reflected, value[worst] = fr;
    } else {
      const std::vector<double> contracted = along(centroid, simplex[worst], 0.5);
      const double fc = cost(contracted);
      ++evals;
      if (fc < value[worst]) {
        simplex[worst] = contracted, value[worst] = fc;
      } else {
        for (int i = 0; i <= d; ++i) {
          if (i == best) continue;
          simplex[i] = along(simplex[best], simplex[i], 0.5);
          value[i] = cost(simplex[i]);
          ++evals;
        }
      }
    }
  }
  return simplex[std::min_element(value.begin(), value.end()) - value.begin()];
}

// Least squares on log time of `points` (one precision's) by `seconds(fit, point)`.
template <typename Seconds>
GemmFit FitWith(const std::vector<GemmPoint>& points, DType dtype, const GemmFit& start,
                Seconds seconds) {
  GemmFit fit = start;
  fit.element_bytes = ElementBytes(dtype);
  if (points.empty()) return fit;
  std::vector<double> log_s(points.size());
  double smallest_s = std::numeric_limits<double>::infinity();
  bool has_input[3] = {false, false, false}, has_output[3] = {false, false, false};
  double best_rate = 0;
  int element_wise_points = 0;
  for (const GemmPoint& p : points) {
    if (ElementWiseShape(p.m, p.n, p.k, p.layout, fit.element_bytes)) ++element_wise_points;
  }
  fit.element_wise = element_wise_points >= kElementWisePointsToFit;
  for (size_t i = 0; i < points.size(); ++i) {
    const GemmPoint& p = points[i];
    log_s[i] = std::log(2.0 * p.m * p.n * p.k / (p.tflops * 1e12));
    smallest_s = std::min(smallest_s, std::exp(log_s[i]));
    const Misalignment a = MisalignmentOf(p.m, p.n, p.k, p.layout, fit.element_bytes);
    if (ElementWise(fit, p.m, p.n, p.k, p.layout)) {
      // timed by its element loads and stores, not by a misaligned factor
    } else if (a.input >= 0) {
      has_input[a.input] = true;
    } else if (a.output >= 0) {
      has_output[a.output] = true;
    } else {
      best_rate = std::max(best_rate, p.tflops * 1e12);
    }
  }
  if (best_rate > 0) fit.peak_flops = 1.05 * best_rate;
  // Points whose operands at the copy's bandwidth take longer than their FLOPs
  // at the peak, and more than 5 us (not launch-bound).
  int memory_bound_points = 0, l2_points = 0;
  for (const GemmPoint& p : points) {
    const double bytes_s = fit.element_bytes * (p.m * p.k + p.k * p.n + p.m * p.n) / fit.bandwidth;
    const bool bound = bytes_s > 2.0 * p.m * p.n * p.k / fit.peak_flops;
    if (bytes_s > 5e-6 && bound) ++memory_bound_points;
    if (bytes_s > 2e-6 && bound && bytes_s * fit.bandwidth <= fit.l2_bytes) ++l2_points;
  }
  const FitBounds bounds = {kLaunchCeiling * smallest_s, kCopyHeadroom * start.bandwidth};
  // The fit runs unbounded first (where it stays inside the bounds they change
  // nothing, not even the simplex's path); only a fit that leaves them is
  // re-run with them, its strays put back on their bound.
  const FitBounds* active = nullptr;
  auto cost = [&](const std::vector<double>& x) {
    GemmFit f = fit;
    FromVector(x, &f, active ? *active : FitBounds{});
    double sum = 0;
    for (size_t i = 0; i < points.size(); ++i) {
      const GemmPoint& p = points[i];
      const double e = std::log(seconds(f, p)) - log_s[i];
      sum += e * e;
    }
    return sum / points.size();
  };
  std::vector<int> free = {0};
  if (points.size() >= 8) {
    free = {0, 1, 2, 3, 5, 6, 7};
    // The bandwidth starts at the probe's copy figure and is fitted where the
    // points measure it: a GEMM kernel streams its operands slower than a copy
    // (tiles' loads and their epilogue's stores take turns on each SM). Fitted
    // to the random-layer probes of every committed seed it lands at 0.7-0.85
    // of the copy (H100 2.1-2.5 TB/s against 3.0, H200 3.2-3.7 against 4.2);
    // with a handful of memory-bound points (GPT layers alone) it is not
    // pinned and drifts to 0.65 (gemm_model_calibration.md, "Session 19").
    if (memory_bound_points >= kMemoryBoundPointsToFitBandwidth) free.push_back(4);
    // The SMs' load rate and the split's launch: every fit with 8 points; the
    // L2's speed-up where 8 memory-bound points fit in L2 (else it stays 1).
    free.push_back(kShape + 8);
    // A split's launch only where points split: any best-tile point may, a
    // kernel's point where its kernel does (else the parameter is not pinned,
    // and a fit to unsplit points would make every split look slow).
    int split_points = 0;
    bool best_tile = false;
    for (const GemmPoint& p : points) {
      if (!p.kernel.known()) {
        best_tile = true;
      } else if (p.kernel.split_k > 1 || SplitsInKernel(fit, p.kernel)) {
        ++split_points;
      }
    }
    if (best_tile || split_points >= 4) free.push_back(kShape + 10);
    if (l2_points >= kL2PointsToFitSpeedup) free.push_back(kShape + 9);
    if (fit.element_wise) {
      free.push_back(kShape + 11);
      free.push_back(kShape + 12);
    }
    bool has_layout[3] = {false, false, false};
    for (const GemmPoint& p : points) has_layout[static_cast<int>(p.layout)] = true;
    // Layouts against forward's, where both were measured.
    for (int l = 1; l < 3; ++l) {
      if (has_layout[0] && has_layout[l]) free.push_back(kShape + 5 + l);
    }
    for (int c = 0; c < 3; ++c) {
      if (has_input[c]) free.push_back(kShape + c);
      if (has_output[c]) free.push_back(kShape + 3 + c);
    }
  }
  std::vector<double> x = ToVector(fit);
  // Restarts from the best point so far: the simplex collapses on the
  // plateaus that the ceilings (tiles, waves, k steps) make.
  for (int round = 0; round < 8; ++round) x = Minimise(cost, x, free, 2500);
  if (OutOfBounds(x, bounds, &x)) {
    active = &bounds;
    for (int round = 0; round < 8; ++round) x = Minimise(cost, x, free, 2500);
  }
  active = &bounds;
  FromVector(x, &fit, bounds);
  // A misaligned class not measured takes the next less aligned class's
  // factor, or the next better aligned one's; a class is never slower than a
  // less aligned one.
  for (auto [factor, has] : {std::pair{&fit.misaligned_input, has_input},
                             std::pair{&fit.misaligned_output, has_output}}) {
    for (int c = 1; c < 3; ++c) {
      if (!has[c] && has[c - 1]) (*factor)[c] = (*factor)[c - 1];
    }
    for (int c = 1; c >= 0; --c) {
      if (!has[c] && has[c + 1]) (*factor)[c] = (*factor)[c + 1];
    }
    for (int c = 1; c < 3; ++c) (*factor)[c] = std::max((*factor)[c], (*factor)[c - 1]);
  }
  fit.valid = true;
  fit.points = static_cast<int>(points.size());
  fit.rms_log_error = std::sqrt(cost(x));
  fit.note = absl::StrFormat(
      "fitted to %d points: %.0f TFLOP/s peak, %.2f TB/s streaming (x%.2f in L2), %.0f GB/s an "
      "SM's loads, %.1f us a split's launch, %.2f / %.2f G elements/s an SM's element-wise "
      "loads / stores, rms error %.1f %%",
      fit.points, fit.peak_flops / 1e12, fit.bandwidth / 1e12, fit.l2_speedup,
      fit.sm_load_bandwidth / 1e9, 1e6 * fit.split_fixed_s, fit.element_load_rate / 1e9,
      fit.element_store_rate / 1e9, 100 * fit.rms_log_error);
  return fit;
}

// Whether a point's grid differs between its kernel as reported (split_k 1)
// and the same kernel splitting k to fill the SMs.
bool SplitIsAmbiguous(const GemmFit& fit, const GemmPoint& p) {
  if (p.kernel.split_k > 1) return false;
  return FillingSplit(fit.sms, KernelTiles(p.kernel, p.m, p.n), p.k) > 1;
}

// The algorithms that split k inside their launch: over an algorithm's points
// whose grid that choice changes, the grid split to fill the SMs fits them
// better than the grid as cuBLASLt reports it (split_k 1). Needs two such
// points of an algorithm; judged with `fit`'s parameters.
std::vector<int> InKernelSplitAlgos(const GemmFit& fit, const std::vector<GemmPoint>& points) {
  struct Score {
    double as_reported = 0, split = 0;
    int points = 0;
  };
  std::map<int, Score> scores;
  GemmFit splitting = fit;
  for (const GemmPoint& p : points) {
    if (!SplitIsAmbiguous(fit, p)) continue;
    splitting.in_kernel_split_algos = {p.kernel.algo};
    const double measured = std::log(2.0 * p.m * p.n * p.k / (p.tflops * 1e12));
    auto error = [&](const GemmFit& f) {
      const double e = std::log(GemmKernelSeconds(f, p.m, p.n, p.k, p.layout, p.kernel)) - measured;
      return e * e;
    };
    Score& s = scores[p.kernel.algo];
    s.as_reported += error(fit);
    s.split += error(splitting);
    ++s.points;
  }
  std::vector<int> algos;
  for (const auto& [algo, s] : scores) {
    if (s.points >= 2 && s.split < s.as_reported) algos.push_back(algo);
  }
  return algos;  // std::map's order: sorted
}

}  // namespace

int ElementBytes(DType dtype) { return dtype == DType::kBf16 || dtype == DType::kFp16 ? 2 : 4; }

double GemmSeconds(const GemmFit& f, double m, double n, double k, GemmLayout layout) {
  m = std::max(1.0, m), n = std::max(1.0, n), k = std::max(1.0, k);
  if (f.peak_flops <= 0) return 2.0 * m * n * k / 1e12;  // no fit: 1 TFLOP/s keeps a model finite
  const bool element_wise = ElementWise(f, m, n, k, layout);
  const double compute =
      f.roofline_only ? 2.0 * m * n * k / f.peak_flops
                      : ComputeSeconds(f, m, n, k, KernelRate(f, m, n, k, layout, element_wise),
                                       KStep(f.element_bytes), element_wise);
  const double memory = MemorySeconds(f, m, n, k);
  // A streaming GEMM overlaps its launch with its reads: the floor is the
  // bytes alone.
  return Floor(f, compute, memory);
}

GemmFit FitGemm(const std::vector<GemmPoint>& all, DType dtype, const GemmFit& start) {
  std::vector<GemmPoint> points;
  for (const GemmPoint& p : all) {
    if (p.dtype == dtype && p.m > 0 && p.n > 0 && p.k > 0 && p.tflops > 0) points.push_back(p);
  }
  return FitWith(points, dtype, start, [](const GemmFit& f, const GemmPoint& p) {
    return GemmSeconds(f, p.m, p.n, p.k, p.layout);
  });
}

GemmFit FitGemmKernels(const std::vector<GemmPoint>& all, DType dtype, const GemmFit& start) {
  std::vector<GemmPoint> points;
  for (const GemmPoint& p : all) {
    if (p.dtype == dtype && p.m > 0 && p.n > 0 && p.k > 0 && p.tflops > 0 && p.kernel.known()) {
      points.push_back(p);
    }
  }
  GemmFit fit = start;
  fit.kernel_classes.clear();
  fit.in_kernel_split_algos.clear();
  if (points.size() < 8) {
    fit.valid = false;
    return fit;
  }
  auto kernel_seconds = [](const GemmFit& f, const GemmPoint& p) {
    return GemmKernelSeconds(f, p.m, p.n, p.k, p.layout, p.kernel);
  };
  // Which algorithms split k in their launch is judged with parameters fitted
  // to the points that choice does not touch (else the fit bends to it).
  std::vector<GemmPoint> unambiguous;
  for (const GemmPoint& p : points) {
    if (!SplitIsAmbiguous(fit, p)) unambiguous.push_back(p);
  }
  const GemmFit judge =
      FitWith(unambiguous.size() >= 8 ? unambiguous : points, dtype, fit, kernel_seconds);
  fit.in_kernel_split_algos = InKernelSplitAlgos(judge, points);
  fit = FitWith(points, dtype, fit, kernel_seconds);
  // What each family, then each class within it, runs at against its tile grid:
  // the mean log residual, shrunk by kPrior pseudo-points at 0 so a class seen
  // once moves its shapes by half its one residual.
  constexpr double kPrior = 1.0;
  struct Sum {
    double residual = 0;
    int points = 0;
  };
  std::vector<double> residual(points.size());
  std::map<int64_t, Sum> families, classes;
  for (size_t i = 0; i < points.size(); ++i) {
    const GemmPoint& p = points[i];
    residual[i] = std::log(2.0 * p.m * p.n * p.k / (p.tflops * 1e12)) -
                  std::log(GemmKernelSeconds(fit, p.m, p.n, p.k, p.layout, p.kernel));
    Sum& s = families[FamilyKey(p.kernel)];
    s.residual += residual[i];
    ++s.points;
  }
  auto shrunk = [](const Sum& s) { return s.residual / (s.points + kPrior); };
  for (size_t i = 0; i < points.size(); ++i) {
    const GemmKernel& kernel = points[i].kernel;
    Sum& s = classes[ClassKey(kernel)];
    s.residual += residual[i] - shrunk(families[FamilyKey(kernel)]);
    ++s.points;
  }
  for (const auto* table : {&families, &classes}) {
    for (const auto& [key, sum] : *table) {
      fit.kernel_classes.push_back({key, shrunk(sum), sum.points});
    }
  }
  std::sort(fit.kernel_classes.begin(), fit.kernel_classes.end(),
            [](const KernelClassFactor& a, const KernelClassFactor& b) { return a.key < b.key; });
  double sum = 0;
  for (const GemmPoint& p : points) {
    const double e = std::log(GemmKernelSeconds(fit, p.m, p.n, p.k, p.layout, p.kernel)) -
                     std::log(2.0 * p.m * p.n * p.k / (p.tflops * 1e12));
    sum += e * e;
  }
  fit.rms_log_error = std::sqrt(sum / points.size());
  fit.note = absl::StrFormat(
      "fitted to %d points with their cuBLASLt kernels (%zu families and classes): %.0f "
      "TFLOP/s peak, k split in the launch by algorithms [%s], rms error %.1f %%",
      fit.points, fit.kernel_classes.size(), fit.peak_flops / 1e12,
      absl::StrJoin(fit.in_kernel_split_algos, ","), 100 * fit.rms_log_error);
  return fit;
}

double GemmKernelSeconds(const GemmFit& f, double m, double n, double k, GemmLayout layout,
                         const GemmKernel& kernel) {
  if (!kernel.known() || f.peak_flops <= 0 || f.roofline_only) {
    return GemmSeconds(f, m, n, k, layout);
  }
  m = std::max(1.0, m), n = std::max(1.0, n), k = std::max(1.0, k);
  double compute = KernelGridSeconds(f, m, n, k, layout, kernel);
  if (!f.kernel_classes.empty()) {
    compute *= std::exp(ClassLogFactor(f, FamilyKey(kernel)) + ClassLogFactor(f, ClassKey(kernel)));
  }
  return Floor(f, compute, MemorySeconds(f, m, n, k));
}

GemmFit ScaledGemmFit(const GemmFit& from, DType dtype) {
  GemmFit f = from;
  const double scale = dtype == DType::kTf32 ? 0.5 : dtype == DType::kFp32 ? 1.0 / 16 : 1.0;
  f.peak_flops *= scale;
  f.element_bytes = ElementBytes(dtype);
  f.points = 0;
  f.note = absl::StrFormat("scaled from another precision's fit (x%.3g)", scale);
  return f;
}

}  // namespace xdeep::tuner
