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
// TFLOP/s, the dense convolution at 620). Other widths (RegNetY-1.6GF's and
// -3.2GF's 24): a kernel between cuDNN's layout transforms
// (tensorTransformGeneric took 30 of RegNetY-1.6GF's 97 ms at micro-batch
// 256), at 16.6 / 15.8 / 16.6 TFLOP/s whatever the shape (0.126 / 0.120 /
// 0.126 per SM).
constexpr Fit kGroupedAligned[3] = {
    {0.245, 0, 15e-6},
    {0.190, 0, 15e-6},
    {0.225, 0, 15e-6},
};
constexpr Fit kGroupedOther[3] = {
    {0, 0.126e12, 15e-6},
    {0, 0.120e12, 15e-6},
    {0, 0.126e12, 15e-6},
};

bool PowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

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
    const Fit& f = kGroupedOther[p];
    return f.floor_s + flops / (f.flops_per_sm * sms);
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

}  // namespace xdeep::tuner
