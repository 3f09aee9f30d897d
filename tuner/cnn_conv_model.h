// Time of the convolutions a GEMM does not describe: depthwise (one channel
// a group: MobileNet, EfficientNet, ConvNeXt) and grouped (a few channels a
// group: ResNeXt, RegNet). cuDNN runs a depthwise convolution with kernels of
// its own: its time is the bytes it moves at a fraction of the bandwidth
// streaming kernels reach, or its multiply-adds on the CUDA cores where a
// large window makes them the bound, above a per-kernel floor. A grouped
// convolution whose group width is a power of two runs cuDNN's grouped
// implicit GEMM, bound by its bytes (or by the dense GEMM's rate for wide
// groups); other widths either copy each group's channels out around a dense
// kernel per group (RegNetY-8GF's 56) or run between layout transforms, bound
// by the transforms' bytes (most others), as cuDNN 9.19's heuristics chose.
// The constants are fitted to one H200's measurements
// (bench/validate/data/checks/2026-11-28_h200x1_cnn_arch_check,
// 2026-11-28_h200x1_regnet_y_8gf_check, 2026-11-28_h200x1_grouped_sweep;
// calibration).
#ifndef XDEEP_TUNER_CNN_CONV_MODEL_H_
#define XDEEP_TUNER_CNN_CONV_MODEL_H_

#include <functional>

#include "tuner/gemm_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

enum class ConvPass { kForward, kDgrad, kWgrad };

// Seconds of a GEMM of this shape and layout (the step-time model's memoised
// GemmModel).
using GemmTimeFn = std::function<double(double m, double n, double k, GemmLayout layout)>;

struct ConvDevice {
  double bandwidth = 0;  // B/s that streaming elementwise kernels reach (the probe's)
  int sm_count = 132;
  int bytes = 2;  // of an activation value
};

// One pass of `g` over `mb` samples.
double GroupedConvSeconds(const GroupedConv& g, double mb, ConvPass pass, const ConvDevice& dev,
                          const GemmTimeFn& gemm);

// Host work cuDNN itself does in one training step of `g` (forward, dgrad,
// wgrad), in counted framework op-passes: on its sliced path, each group's
// channel copies and dense kernels are issued one group after another.
double GroupedConvHostOps(const GroupedConv& g);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_CNN_CONV_MODEL_H_
