// Depthwise and grouped convolution time (cnn_conv_model.h).
#include "tuner/cnn_conv_model.h"

#include <algorithm>
#include <cmath>

namespace xdeep::tuner {
namespace {

// Fitted to one H200 (132 SMs), cuDNN 9.19 under torch 2.11, channels_last
// bf16 (bench/validate/cnn_conv_fit.py on the check's "convs"):
// the fraction of the streaming bandwidth each pass of a depthwise
// convolution reaches, its multiply-add rate per SM where the window is
// large, and the floor of one kernel.
struct DepthwiseFit {
  double efficiency;    // of ConvDevice::bandwidth
  double flops_per_sm;  // FLOP/s per SM (CUDA cores)
};
constexpr DepthwiseFit kDepthwise[3] = {
    {0.60, 0.25e12},  // forward
    {0.60, 0.25e12},  // dgrad
    {0.40, 0.15e12},  // wgrad
};
constexpr double kKernelFloorS = 6e-6;

}  // namespace

double GroupedConvSeconds(const GroupedConv& g, double mb, ConvPass pass, const ConvDevice& dev,
                          const GemmTimeFn& gemm) {
  const int p = static_cast<int>(pass);
  const double in_bytes = g.in_pixels * double(g.in_channels) * mb * dev.bytes;
  const double out_bytes = g.out_pixels * double(g.out_channels) * mb * dev.bytes;
  const double bytes = in_bytes + out_bytes;
  const double bw = std::max(1.0, dev.bandwidth);
  if (g.Depthwise()) {
    const DepthwiseFit& f = kDepthwise[p];
    const double flops = g.Flops() * mb;
    return kKernelFloorS + std::max(bytes / (bw * f.efficiency),
                                    flops / (f.flops_per_sm * std::max(1, dev.sm_count)));
  }
  // One implicit GEMM over the groups: each group's product (output pixels
  // x its output channels x its input channels times the window), stacked.
  const double groups = double(g.groups);
  const double m = g.out_pixels * mb;
  const double n = double(g.out_channels) / groups;
  const double k = double(g.in_channels) / groups * g.kernel * g.kernel;
  double t = 0;
  switch (pass) {
    case ConvPass::kForward:
      t = gemm(m * groups, n, k, GemmLayout::kForward);
      break;
    case ConvPass::kDgrad:
      t = gemm(m * groups, k, n, GemmLayout::kDgrad);
      break;
    case ConvPass::kWgrad:
      t = gemm(n * groups, k, m, GemmLayout::kWgrad);
      break;
  }
  return std::max(t, kKernelFloorS + bytes / bw);
}

}  // namespace xdeep::tuner
