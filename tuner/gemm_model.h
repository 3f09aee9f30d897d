// GEMM time on a GPU from how cuBLAS runs a GEMM, fitted to the probe's points.
//
// A GEMM C[m x n] = A[m x k] B[k x n] runs as output tiles, one thread block each,
// spread over the SMs in waves; the tiles' k loop runs at the tensor cores' rate,
// less for small tiles (more operand traffic per FLOP); a tile pays a fixed
// prologue and epilogue; few tiles and a long k split k over more blocks; no GEMM
// is faster than moving its operands through device memory (or L2, where they
// fit), plus its launch; a tile's k loop is no faster than its SM loads the
// tile's operand panels (A is re-read once per column of tiles, B once per
// row); a split k pays a second launch. cuBLAS's fast
// (TMA) kernels need every leading dimension 16-byte aligned: a 50257-word
// vocabulary head falls back to slower kernels, a 50304-word one does not. The
// model takes the best of a few tile shapes and split-k factors (as cuBLAS's
// heuristic picks a kernel), so it covers shapes no probe ran; its few
// parameters per precision (peak rate, small-tile loss, per-tile and per-GEMM
// fixed time, bandwidth, an SM's load rate, L2's speed-up, a split's launch,
// one rate factor per misaligned class, an element-wise kernel's load and store
// rates) are fitted to the probe's points by least squares on log time.
#ifndef XDEEP_TUNER_GEMM_MODEL_H_
#define XDEEP_TUNER_GEMM_MODEL_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace xdeep::tuner {

enum class DType { kFp32, kTf32, kBf16, kFp16 };

// How a GEMM's operands are stored, as nn.Linear training holds them (the
// probe's "pass"): which of m, n, k are leading dimensions. Forward (Y = X W^T)
// and dgrad (dX = dY W): n and k; wgrad (dW = dY^T X): m and n.
enum class GemmLayout { kForward, kDgrad, kWgrad };

// The kernel cuBLAS runs for a GEMM, as the probe read it from cuBLASLt's
// heuristic (profiler/report.h GemmKernel): its output tile in the GEMM's
// row-major terms, how many slices k is split into, and the algorithm (kernel
// family: TMA or not, stream-K or not) as this cuBLASLt numbers it.
struct GemmKernel {
  int algo = -1;  // < 0: not known
  int tile_m = 0, tile_n = 0;
  int split_k = 1;
  bool known() const { return algo >= 0 && tile_m > 0 && tile_n > 0; }
};

struct GemmPoint {
  int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::kBf16;
  double tflops = 0;  // achieved, 1e12 FLOP/s; 0: a heuristic's answer, not timed
  GemmLayout layout = GemmLayout::kDgrad;
  GemmKernel kernel;  // where the probe recorded it
};

// What a kernel class (algorithm, tile, split or not) runs at against the
// model's tile grid, fitted from the probe's points of that class: log of
// measured / modelled time, shrunk towards 0 for classes with few points.
struct KernelClassFactor {
  int64_t key = 0;
  double log_factor = 0;
  int points = 0;
};

// The fitted parameters of one precision.
struct GemmFit {
  bool valid = false;
  int element_bytes = 2;
  int sms = 132;
  double peak_flops = 0;      // FLOP/s of the whole GPU with the largest tiles
  double small_tile = 0.1;    // rate loss of a tile edge of 128 against 256
  double tile_fixed_s = 1e-6; // per wave of tiles: prologue, epilogue
  double fixed_s = 3e-6;      // per GEMM
  // B/s, operands read once and the result written once: the probe's copy
  // bandwidth to start, fitted where the fit has 8 points or more.
  double bandwidth = 2.5e12;
  // B/s at which tiles store their results (the epilogue, not overlapped with
  // the k loop): bounds large outputs over a short k.
  double store_bandwidth = 2e12;
  // How much a partial last wave of tiles costs as a whole one (1: all, 0:
  // only its share; persistent kernels and cuBLAS's choice among tile shapes
  // soften the quantisation).
  double wave_quantisation = 0.7;
  // B/s at which one SM's tiles load their operand panels (from L2 or device
  // memory): a tile's k loop moves (tile_m + tile_n) x k elements, so the grid
  // as a whole moves A ceil(n / tile_n) times and B ceil(m / tile_m) times, and
  // a grid of few tiles cannot draw the device's bandwidth. Fitted.
  double sm_load_bandwidth = 1.0e11;
  // Bytes of L2 (50 MB on H100 and H200): a GEMM whose operands and result fit
  // are re-read from L2 by back-to-back launches (the probe's timing loop, a
  // training step's small layers), at l2_speedup x the streaming bandwidth.
  double l2_bytes = 50e6;
  double l2_speedup = 1.0;
  // A GEMM that splits k pays a second launch: cuBLAS's split-k kernels sum
  // their fp32 slices in a separate reduction kernel (or zero the output with
  // a memset first). Fitted.
  double split_fixed_s = 2e-6;
  // Stream-K (work split evenly over the SMs, partial tiles fixed up): its
  // extra fixed time.
  double stream_k_fixed_s = 2e-6;
  // Rate factor where the least aligned leading dimension of an input operand
  // is 2, 4 or 8 bytes aligned (16: 1), and where only the output's is.
  std::array<double, 3> misaligned_input = {0.2, 0.4, 0.7};
  std::array<double, 3> misaligned_output = {0.5, 0.7, 0.9};
  // Rate factor per layout against forward's (indexed by GemmLayout): which
  // operands are k-major decides whether the kernel transposes one on its
  // way to the tensor cores (tf32 kernels most of all).
  std::array<double, 3> layout_rate = {1.0, 1.0, 1.0};
  // Element-wise kernels: where a leading dimension of A, B or C of a bf16 /
  // fp16 GEMM is aligned to one element only (2-byte rows: a first
  // convolution's k = 27, a 50257-wide head), cuBLAS runs cutlass's sm75
  // "align1" kernels, which move every element of their operand panels and of
  // their result through one thread's scalar load or store. Their tiles are
  // bound by those instructions, per SM in elements/s, not by the tensor cores
  // or the bytes: the same times on H100 and H200. A tile loads its whole
  // (tile_m + tile_n) x 32-deep panels per k step (predicated-off rows still
  // issue) and stores its whole tile. Fitted where the fit has 8 such points.
  double element_load_rate = 6e9;
  double element_store_rate = 1.2e10;
  // Whether element-wise kernels are timed by those rates: set by a fit with
  // 8 such points or more; elsewhere (a built-in profile, a fit without such
  // points) the misaligned factors below stand for them.
  bool element_wise = false;
  // Time = max(FLOPs / peak, bytes / bandwidth) + fixed, no tiles: a
  // profile described by its rates alone (hand-derived figures in tests).
  bool roofline_only = false;
  // Kernel-aware fits (FitGemmKernels) only, sorted by key: per kernel family
  // (algorithm, split or not) and per class (also the tile).
  std::vector<KernelClassFactor> kernel_classes;
  // Kernel-aware fits only, sorted: algorithms that split k inside one launch
  // where their tiles leave SMs idle although cuBLASLt reports split_k 1
  // (Hopper's tf32 "segment-k" kernels accumulate k slices into a zeroed
  // output), as the fit's points of each algorithm say.
  std::vector<int> in_kernel_split_algos;
  int points = 0;             // fitted to; 0: not fitted (a built-in or scaled fit)
  double rms_log_error = 0;   // of the fit on its points
  std::string note;           // how it was obtained
};

// Fits the model to one precision's points (those of other precisions are
// ignored). With fewer than 8 points only the peak rate is fitted; the shape
// parameters keep `start`'s values.
GemmFit FitGemm(const std::vector<GemmPoint>& points, DType dtype, const GemmFit& start);

// The model fitted to the points of one precision whose kernel the probe
// recorded, each timed as the tile grid of its own kernel (GemmKernelSeconds),
// then the residual of each kernel family and class. Invalid where fewer than
// 8 such points exist.
GemmFit FitGemmKernels(const std::vector<GemmPoint>& points, DType dtype, const GemmFit& start);

// A fit for a precision the probe did not measure, from another's: fp16 as
// bf16, tf32 half of it, fp32 a sixteenth, at the precision's element size.
GemmFit ScaledGemmFit(const GemmFit& from, DType dtype);

int ElementBytes(DType dtype);

// Seconds of one GEMM; cheap (no allocation), safe to call from any thread.
double GemmSeconds(const GemmFit& fit, double m, double n, double k,
                   GemmLayout layout = GemmLayout::kForward);

// Seconds of one GEMM run by a known kernel (a fit from FitGemmKernels): the
// kernel's tiles in waves over the SMs, its split of k, the class's factor, the
// memory floor. Cheap (no allocation), safe from any thread.
double GemmKernelSeconds(const GemmFit& fit, double m, double n, double k, GemmLayout layout,
                         const GemmKernel& kernel);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_GEMM_MODEL_H_
