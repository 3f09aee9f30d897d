// Depthwise and grouped convolution time (cnn_conv_model.h).
#include "tuner/cnn_conv_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace xdeep::tuner {
namespace {

// Fitted to one H200 (132 SMs; cuDNN 9.19 under torch 2.11, channels_last
// bf16) by bench/validate/cnn_conv_fit.py on the check's 40 convolutions
// alone (bench/validate/data/checks/2026-11-28_h200x1_cnn_arch_check,
// calibration), against that card's streaming bandwidth (4,197 GB/s).
// Depthwise, per pass: the fraction of the bandwidth its kernel reaches, its
// multiply-add rate per SM where the window makes it the bound (7x7: 10-13
// TFLOP/s forward; the input gradient runs at half that), and one kernel's
// floor. The input gradient's FLOPs are counted over the input's pixels:
// it convolves the output's gradient into every input pixel, whatever the
// stride (stride-2 input gradients took 3x their forward). Median errors 6,
// 4 and 14 % (forward, dgrad, wgrad); wgrad's kernel choice is irregular
// (one 5x5 stride-2 wgrad took 15x its forward).
struct Fit {
  double efficiency;    // of ConvDevice::bandwidth
  double flops_per_sm;  // FLOP/s per SM
  double floor_s;
};
constexpr Fit kDepthwise[3] = {
    {0.74, 0.092e12, 20e-6},  // forward
    {0.31, 0.046e12, 25e-6},  // dgrad
    {0.42, 0.094e12, 25e-6},  // wgrad
};
// Grouped, group width a power of two (4-32 measured; ResNeXt's, RegNetY-
// 400MF / 800MF's): cuDNN's grouped implicit-GEMM kernels, bound by the bytes
// they move at about a quarter of the bandwidth (1,028 / 797 / 944 GB/s), or
// by the same multiply-adds at the dense GEMM's rate (width 128 ran at 490
// TFLOP/s, the dense convolution at 620).
constexpr Fit kGroupedAligned[3] = {
    {0.245, 0, 15e-6},
    {0.190, 0, 15e-6},
    {0.225, 0, 15e-6},
};

// Other group widths: cuDNN (9.19, NHWC bf16, its heuristics) runs them one
// of two ways, seen in RegNetY's profiled steps
// (bench/validate/data/checks/2026-11-28_h200x1_regnet_y_8gf_check) and in
// convolutions of widths 24-120 alone (.../2026-11-28_h200x1_grouped_sweep;
// both calibration since session 26):
// * sliced: each group's channels copied out (nhwcSliceCKernel: 1,336
//   launches in RegNetY-8GF's step at micro-batch 256, 29 ms) and convolved
//   as a dense convolution of one group's width (cutlass fprop / dgrad /
//   split-K wgrad kernels, one a group), the result copied back: a kernel
//   chain per group, the copies' bytes, and the dense kernels' FLOPs.
//   RegNetY-8GF's width 56 ran so, forward at 50-90 TFLOP/s where the
//   transformed path reaches 17. Per pass: floor + groups x floor per group
//   + bytes / (bandwidth x efficiency) + FLOPs / (rate per SM x SMs), the
//   input gradient's FLOPs over the input's pixels (stride-2 backward
//   passes took 2.3-2.5x their stride-1 twins of the same output); fitted by
//   bench/validate/cnn_conv_fit.py --grouped to the kernel time of the
//   checks' network ops (alone, a call's time is its host's: below).
// * transformed: the tensors transformed to NCHW and back
//   (tensorTransformGeneric) around a grouped kernel: RegNetY-1.6GF's width
//   24, and most widths 24-120 alone.
struct PathFit {
  double floor_s;
  double floor_per_group_s;
  double efficiency;    // of ConvDevice::bandwidth, over input + output bytes
  double flops_per_sm;  // FLOP/s per SM
};
constexpr PathFit kSliced[3] = {
    {20e-6, 6e-6, 0.12, 2.4e12},  // forward
    {15e-6, 4e-6, 0.08, 1.6e12},  // dgrad
    {15e-6, 4e-6, 0.08, 1.2e12},  // wgrad
};
// Transformed: bound by the transforms' bytes alone, whatever the width and
// pass (cnn_grouped_sweep.py: widths 24-120 at 2-36 groups alone, batch >=
// 16: medians 151 / 140 / 153 GB/s over input + output bytes, fitted 0.04 of
// the bandwidth, 168 GB/s; the forward at widths 24 and 120 took the same
// time a byte), above the 30 us
// a pass RegNetY-1.6GF's ops took in its steps at micro-batch 1 (alone,
// each call's floor is its host's).
constexpr PathFit kTransformed[3] = {
    {30e-6, 0, 0.04, 0},
    {30e-6, 0, 0.04, 0},
    {30e-6, 0, 0.04, 0},
};

bool PowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Which way cuDNN 9.19's heuristics run a grouped convolution whose group
// width is not a power of two, as measured across widths 24-120 (multiples
// of 8) at 2-36 groups, batch 1-256 (cnn_grouped_sweep.py,
// bench/validate/data/checks/2026-11-28_h200x1_grouped_sweep, calibration):
// sliced at 2 groups of width <= 40 and at width 56 with 4-36 groups (the
// only multiple of 8 strictly between 48 and 64); every other one through
// the transforms. The choice is per pass and shape, and this rule matches
// 133 of the sweep's 162 passes at batch >= 16 (the rule first tried,
// "sliced where a group is >= 32 wide and the groups <= 16", 74).
bool SlicedPerGroup(int64_t width, int64_t groups) {
  if (width % 8 != 0) return false;
  if (groups <= 2) return width <= 40;
  return width > 48 && width < 64;
}

}  // namespace

double GroupedConvSeconds(const GroupedConv& g, double mb, ConvPass pass, const ConvDevice& dev,
                          const GemmTimeFn& gemm) {
  const int p = static_cast<int>(pass);
  const double in_bytes = g.in_pixels * double(g.in_channels) * mb * dev.bytes;
  const double out_bytes = g.out_pixels * double(g.out_channels) * mb * dev.bytes;
  const double bytes = in_bytes + out_bytes;
  const double bw = std::max(1.0, dev.bandwidth);
  const double sms = std::max(1, dev.sm_count);
  if (g.Depthwise()) {
    const Fit& f = kDepthwise[p];
    const double pixels = pass == ConvPass::kDgrad ? g.in_pixels : g.out_pixels;
    const double flops = 2.0 * pixels * double(g.out_channels) * g.kernel * g.kernel * mb;
    return f.floor_s + std::max(bytes / (bw * f.efficiency), flops / (f.flops_per_sm * sms));
  }
  const int64_t width = g.in_channels / std::max<int64_t>(1, g.groups);
  const double flops = g.Flops() * mb;
  if (!PowerOfTwo(width) || width < 4) {
    const PathFit& f =
        SlicedPerGroup(width, g.groups) ? kSliced[p] : kTransformed[p];
    const double pass_flops =
        pass == ConvPass::kDgrad ? flops * g.in_pixels / std::max(1.0, g.out_pixels) : flops;
    return f.floor_s + double(g.groups) * f.floor_per_group_s + bytes / (bw * f.efficiency) +
           (f.flops_per_sm > 0 ? pass_flops / (f.flops_per_sm * sms) : 0.0);
  }
  // The dense GEMM of the same multiply-adds: the convolution's implicit GEMM
  // with every group's products side by side, at the rate the dense shape runs.
  const double m = g.out_pixels * mb, n = double(g.out_channels),
               k = double(g.in_channels) * g.kernel * g.kernel;
  const double dense = pass == ConvPass::kForward ? gemm(m, n, k, GemmLayout::kForward)
                       : pass == ConvPass::kDgrad ? gemm(m, k, n, GemmLayout::kDgrad)
                                                  : gemm(n, k, m, GemmLayout::kWgrad);
  const Fit& f = kGroupedAligned[p];
  return f.floor_s + std::max(bytes / (bw * f.efficiency), dense / double(g.groups));
}

double GroupedConvHostOps(const GroupedConv& g) {
  if (g.Depthwise()) return 0;
  const int64_t width = g.in_channels / std::max<int64_t>(1, g.groups);
  if (PowerOfTwo(width) && width >= 4) return 0;
  // Sliced: alone at batch 1 each pass took 33 us more a group (width 56,
  // 4-36 groups, forward and dgrad; cnn_grouped_sweep.py), host-bound time
  // of one H200 host where the probe reads ~32 us a counted CNN op-pass
  // (run 18's profile): one op a group for the forward and the dgrad, which
  // the sweep sliced at batch 1 (the wgrad mostly went through the
  // transforms there).
  return SlicedPerGroup(width, g.groups) ? 2.0 * double(g.groups) : 0.0;
}

}  // namespace xdeep::tuner
