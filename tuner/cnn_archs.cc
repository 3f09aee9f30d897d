// Layer tables of ConvNeXt, EfficientNet, MobileNetV3 and RegNet as
// torchvision builds them (torchvision.models.convnext / efficientnet /
// mobilenetv3 / regnet): channels, strides and groups per layer, the blocks'
// elementwise kernels and what autograd keeps of each for backward, counted
// for PyTorch's eager training under autocast (16-bit convolutions and
// GEMMs; LayerNorm in fp32, so ConvNeXt's residual stream is fp32).
//
// Conventions (as CnnBuilder in workload.cc): a row's saved bytes count each
// tensor it creates that backward needs, once; its extra traffic counts each
// elementwise kernel's reads and writes, forward and backward (BatchNorm 3 and
// 5 passes over its output, as calibrated for the ResNets; an in-place SiLU or
// Hardswish clones its input first, since its gradient needs it: 4 passes
// forward, 3 backward); its kernels count the forward pass's launches.
#include "tuner/cnn_archs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace xdeep::tuner {
namespace {

enum class Act { kNone, kRelu, kSilu, kHardswish };

// Two kinds of elementwise kernel these blocks run that stream slower than
// the bandwidth the model charges elementwise traffic at (measured on one
// H200, bench/validate/data/checks/2026-11-28_h200x1_cnn_arch_check,
// calibration), counted as that many more passes:
// * a product broadcasting a per-channel or per-sample factor over an NHWC
//   tensor (squeeze-excitation's scale, ConvNeXt's layer scale, stochastic
//   depth's mask) runs PyTorch's non-vectorised elementwise kernel: the scale
//   alone moved 1.3 TB/s, 0.31 of the 4.2 TB/s streaming kernels reach;
// * a bias gradient, the output's gradient summed over every pixel
//   (reduce_kernel over rows of C values): ConvNeXt-T's 58 took 4.65 ms for
//   6.6 GB at micro-batch 256, 1.42 TB/s, 0.34.
constexpr double kBroadcastPasses = 1 / 0.31;
constexpr double kReducePasses = 1 / 0.34;

// torchvision's _make_divisible (from TensorFlow's MobileNet code): the
// nearest multiple of 8, not below 90 % of v.
int64_t MakeDivisible(double v, int64_t divisor = 8) {
  int64_t n =
      std::max<int64_t>(divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (n < 0.9 * v) n += divisor;
  return n;
}

struct Net {
  int a = 2;  // bytes of a 16-bit (autocast) activation
  int r = 4;  // bytes of an fp32 one (LayerNorm under autocast)
  bool nhwc = true;
  int image = 224;
  int hw = 224;
  int64_t c = 3;
  std::vector<LayerCost> layers;
  std::string unit;  // FSDP unit of the rows opened next (empty: the root)

  LayerCost& Open(const std::string& name) {
    LayerCost l;
    l.name = name;
    l.unit = unit;
    l.elementwise_fwd_passes = l.elementwise_bwd_passes = 0;
    layers.push_back(std::move(l));
    return layers.back();
  }
  double Elements() const { return double(c) * hw * hw; }
  // The row's output as a pipeline stage would send it (`bytes` a value).
  void Close(LayerCost& l, int bytes) {
    l.output_bytes = Elements() * bytes;
    l.recompute_saved_bytes = l.output_bytes;
  }

  // The network's first convolution reads the images: autocast casts them
  // to 16 bits (read 4, write 2 a value), the copy is what the convolution
  // keeps, and no gradient of the images is computed.
  void Stem(LayerCost& l) {
    const double px = 3.0 * image * image;
    l.extra_traffic_fwd_bytes += px * (4 + a);
    l.saved_activation_bytes += px * a;
    l.input_gradient = false;
    l.kernels += 1;
  }

  // Convolution (+ bias) (+ BatchNorm) (+ activation) on the current tensor.
  // `groups` > 1 goes to grouped_convs (depthwise when groups == channels).
  // `output_saved`: the next op keeps this output for backward (a
  // convolution's input, a squeeze-excitation's product); an in-place ReLU
  // keeps it anyway.
  void Conv(LayerCost& l, int64_t cout, int k, int stride, int64_t groups, bool bn, Act act,
            bool bias, bool output_saved, int pad = -1) {
    const int p = pad < 0 ? k / 2 : pad;
    const int out_hw = (hw + 2 * p - k) / stride + 1;
    const double in = Elements(), out = double(cout) * out_hw * out_hw;
    const int64_t weights = c / groups * cout * k * k;
    l.params += weights + (bias ? cout : 0) + (bn ? 2 * cout : 0);
    l.matmul_params += weights;
    if (groups == 1) {
      l.gemms.push_back({double(out_hw) * out_hw, cout, c * k * k});
    } else {
      l.grouped_convs.push_back({double(hw) * hw, double(out_hw) * out_hw, c, cout, k, groups});
    }
    l.fwd_flops += 2.0 * out * double(c / groups) * k * k;
    const bool clones = act == Act::kSilu || act == Act::kHardswish;
    l.saved_activation_bytes +=
        out * a * ((bn ? 1 : 0) + (clones ? 1 : 0) + (act == Act::kRelu || output_saved ? 1 : 0));
    double f = 0, b = 0;
    int kernels = 2;  // the weight's 16-bit cast, the convolution
    int fused = 2;
    if (bias) {  // added after cuDNN's call, in place; backward reduces the gradient
      f += 2 * out * a;
      b += out * a * kReducePasses;
      kernels += 2;  // the bias's cast, the add
      fused += 1;
    }
    if (bn) {
      f += 3 * out * a;
      b += 5 * out * a;
      l.batch_norm_statistics_elements += out;
      kernels += 1;
      fused += act == Act::kNone ? 2 : 1;
    }
    if (act == Act::kRelu) {
      f += 2 * out * a;
      b += 3 * out * a;
    } else if (clones) {
      f += 4 * out * a;
      b += 3 * out * a;
      kernels += 1;  // the clone
    }
    if (act != Act::kNone) {
      kernels += 1;
      fused += 1;
    }
    if (!nhwc) {  // cuDNN's layout transforms around a 16-bit NCHW convolution
      f += 2 * (in + out) * a;
      b += 4 * (in + out) * a;
      kernels += 2;
      l.library_kernels += 2;
    }
    l.extra_traffic_fwd_bytes += f;
    l.extra_traffic_bwd_bytes += b;
    l.kernels += kernels;
    l.fused_kernels += fused;
    l.param_tensors += 1 + (bias ? 1 : 0) + (bn ? 2 : 0);
    l.buffer_tensors += bn ? 3 : 0;
    hw = out_hw;
    c = cout;
  }

  // Squeeze-excitation (Hu et al. 2018; torchvision.ops.SqueezeExcitation):
  // global average pool, 1x1 conv to `squeeze` channels, activation, 1x1
  // conv back, gate (sigmoid or hardsigmoid), the input scaled by it. The
  // product is a new tensor the next convolution keeps; backward writes the
  // pool's gradient over the whole input and adds it to the product's,
  // and the gate's gradient is a full-size product reduced over the pixels.
  void SqueezeExcite(LayerCost& l, int64_t squeeze, Act inner) {
    const double x = Elements();
    const double small = double(c);
    l.params += 2 * c * squeeze + squeeze + c;
    l.matmul_params += 2 * c * squeeze;
    l.gemms.push_back({1.0, squeeze, c});
    l.gemms.push_back({1.0, c, squeeze});
    l.fwd_flops += 4.0 * double(c) * squeeze;
    l.saved_activation_bytes += x * a + 4 * small * a;
    l.extra_traffic_fwd_bytes += x * a + 2 * x * a * kBroadcastPasses;
    l.extra_traffic_bwd_bytes += x * a + 3 * x * a + 2 * x * a + 4 * x * a;
    // pool; two convs with their weight and bias casts and bias adds; the
    // inner activation (an in-place SiLU clones first); gate; product.
    l.kernels += 1 + 2 * 4 + (inner == Act::kSilu ? 2 : 1) + 1 + 1;
    l.fused_kernels += 1 + 2 * 2 + 1 + 1;
    l.param_tensors += 4;
  }

  // Stochastic depth on the block's output (torchvision's StochasticDepth,
  // "row": a Bernoulli mask per sample, divided by the survival rate, the
  // output multiplied by it: a new tensor) and the residual add in place;
  // backward multiplies the gradient by the mask and sums the block input's
  // two gradients. `bytes`: of the stream (fp32 in ConvNeXt).
  void Residual(LayerCost& l, bool drop, int bytes) {
    const double o = Elements() * bytes;
    if (drop) {
      l.extra_traffic_fwd_bytes += 2 * o * kBroadcastPasses;
      l.extra_traffic_bwd_bytes += 2 * o * kBroadcastPasses;
      l.kernels += 3;  // bernoulli_, div_, mul
      l.fused_kernels += 1;
    }
    l.extra_traffic_fwd_bytes += 3 * o;
    l.extra_traffic_bwd_bytes += 3 * o;
    l.kernels += 1;
  }

  // LayerNorm over the channels of an NHWC tensor in fp32 (autocast's list):
  // a 16-bit input is cast first (read 2, write 4); the norm reads and
  // writes fp32 and keeps its fp32 input and a mean and rstd per pixel.
  // Backward: the input's gradient (read the gradient and the input, write)
  // and the scale's and shift's (read both again), the cast's back.
  void LayerNorm(LayerCost& l, bool cast_in) {
    const double x = Elements(), px = double(hw) * hw;
    if (cast_in) {
      l.extra_traffic_fwd_bytes += x * (a + r);
      l.extra_traffic_bwd_bytes += x * (r + a);
      l.kernels += 1;
    }
    // The norm's own kernels: by rows (LayerCost::layer_norm_rows), mixed
    // rows of two widths not expected in one row of the table.
    l.layer_norm_rows += px;
    l.layer_norm_width = static_cast<int>(c);
    l.saved_activation_bytes += x * r + 8 * px;
    l.params += 2 * c;
    l.param_tensors += 2;
    l.kernels += 1;
    l.fused_kernels += 1;
  }

  // A Linear on a per-sample vector (the classifier), with its bias.
  void Classifier(LayerCost& l, int64_t out) {
    l.params += c * out + out;
    l.matmul_params += c * out;
    l.gemms.push_back({1.0, out, c});
    l.fwd_flops += 2.0 * double(c) * out;
    l.saved_activation_bytes += double(c) * a;
    l.kernels += 4;  // input, weight and bias casts, GEMM
    l.fused_kernels += 2;
    l.param_tensors += 2;
    c = out;
  }

  // Global average pool to one value a channel (reads the tensor; backward
  // writes its gradient over it).
  void Pool(LayerCost& l, int bytes) {
    const double x = Elements() * bytes;
    l.extra_traffic_fwd_bytes += x;
    l.extra_traffic_bwd_bytes += x;
    l.kernels += 1;
    l.fused_kernels += 1;
    hw = 1;
  }
};

// ---------------------------------------------------------------- ConvNeXt
// Liu et al., "A ConvNet for the 2020s" (2022); torchvision.models.convnext:
// a 4x4 stride-4 stem with LayerNorm2d; per stage, blocks of 7x7 depthwise
// conv (biased), LayerNorm over channels (NHWC), Linear d -> 4d, GELU,
// Linear 4d -> d, layer scale, stochastic depth, residual add; between
// stages LayerNorm2d and a 2x2 stride-2 conv; head: pool, LayerNorm2d, Linear.
std::vector<LayerCost> ConvNeXt(Net& n, const int (&depths)[4], const int (&dims)[4], int classes,
                                double sd) {
  const int total = depths[0] + depths[1] + depths[2] + depths[3];
  {
    LayerCost& l = n.Open("stem");
    n.Stem(l);
    n.Conv(l, dims[0], 4, 4, 1, false, Act::kNone, true, false, 0);
    n.LayerNorm(l, true);
    n.Close(l, n.r);
  }
  int id = 0;
  bool stream_fp32 = true;
  for (int s = 0; s < 4; ++s) {
    n.unit = absl::StrCat("stage", s + 1);
    if (s > 0) {
      LayerCost& l = n.Open(absl::StrCat("stage", s + 1, ".downsample"));
      n.LayerNorm(l, false);
      // autocast's cast of the fp32 norm output for the convolution, which keeps it
      const double x = n.Elements();
      l.extra_traffic_fwd_bytes += x * (n.r + n.a);
      l.extra_traffic_bwd_bytes += x * (n.a + n.r);
      l.saved_activation_bytes += x * n.a;
      l.kernels += 1;
      n.Conv(l, dims[s], 2, 2, 1, false, Act::kNone, true, true, 0);
      n.Close(l, n.a);
      stream_fp32 = false;
    }
    for (int i = 0; i < depths[s]; ++i, ++id) {
      LayerCost& l = n.Open(absl::StrCat("stage", s + 1, ".", i));
      const int64_t d = dims[s];
      const double px = double(n.hw) * n.hw, x = d * px;
      if (stream_fp32) {  // autocast casts the fp32 stream for the depthwise conv
        l.extra_traffic_fwd_bytes += x * (n.r + n.a);
        l.extra_traffic_bwd_bytes += x * (n.a + n.r);
        l.kernels += 1;
      }
      l.saved_activation_bytes += x * n.a;  // the conv's input
      n.Conv(l, d, 7, 1, d, false, Act::kNone, true, false);
      n.LayerNorm(l, true);
      // Linear d -> 4d on the norm's output cast to 16 bits (kept), bias in
      // the GEMM's epilogue; backward reduces the bias gradient.
      l.extra_traffic_fwd_bytes += x * (n.r + n.a);
      l.saved_activation_bytes += x * n.a;
      l.gemms.push_back({px, 4 * d, d});
      l.params += 4 * d * d + 4 * d;
      l.matmul_params += 4 * d * d;
      l.extra_traffic_bwd_bytes += 4 * x * n.a * kReducePasses;
      // GELU over 4d (keeps its input), Linear 4d -> d (keeps its input).
      l.extra_traffic_fwd_bytes += 2 * 4 * x * n.a;
      l.extra_traffic_bwd_bytes += 3 * 4 * x * n.a;
      l.saved_activation_bytes += 2 * 4 * x * n.a;
      l.gemms.push_back({px, d, 4 * d});
      l.params += 4 * d * d + d;
      l.matmul_params += 4 * d * d;
      l.extra_traffic_bwd_bytes += x * n.a * kReducePasses;
      l.fwd_flops += 2.0 * 2 * px * 4 * d * d;
      // Layer scale: an fp32 (d, 1, 1) parameter times the 16-bit output
      // gives fp32 (kept: the 16-bit factor). Backward: the input's gradient
      // (product, cast to 16 bits) and the scale's (full-size product reduced).
      l.extra_traffic_fwd_bytes += x * (n.a + n.r) * kBroadcastPasses;
      l.saved_activation_bytes += x * n.a;
      l.extra_traffic_bwd_bytes += x * (3 * n.r + n.a) * kBroadcastPasses + x * (3 * n.r + n.a);
      l.params += d;
      // input cast, weight and bias casts, GEMM (x2), GELU, layer scale
      l.kernels += 4 + 3 + 1 + 1;
      l.fused_kernels += 2 + 2 + 1;
      l.param_tensors += 4 + 1;
      // torchvision: stochastic_depth_prob x block / (blocks - 1); 0 for the first.
      n.Residual(l, sd > 0 && id > 0 && total > 1, n.r);
      n.Close(l, n.r);
      stream_fp32 = true;
    }
  }
  n.unit.clear();
  LayerCost& l = n.Open("head");
  n.Pool(l, n.r);
  n.LayerNorm(l, false);
  n.Classifier(l, classes);
  n.Close(l, n.a);
  return std::move(n.layers);
}

// ------------------------------------------------------- EfficientNet, MobileNetV3

// Tan & Le, "EfficientNet" (2019) and Sandler et al., "MobileNetV2" (2018):
// the inverted residual (MBConv) as torchvision builds it: 1x1 expansion
// (when the ratio is not 1), kxk depthwise, squeeze-excitation, 1x1
// projection (BatchNorm, no activation), a residual add where stride 1
// keeps the channels.
struct MbConv {
  int64_t expanded;
  int kernel;
  int stride;
  int64_t out;
  int64_t squeeze;  // 0: no squeeze-excitation
  Act act;
  Act se_inner;
};

void InvertedResidual(Net& n, const std::string& name, const MbConv& m, bool drop) {
  LayerCost& l = n.Open(name);
  const int64_t in = n.c;
  const bool residual = m.stride == 1 && in == m.out;
  if (m.expanded != in) n.Conv(l, m.expanded, 1, 1, 1, true, m.act, false, true);
  n.Conv(l, m.expanded, m.kernel, m.stride, m.expanded, true, m.act, false, true);
  if (m.squeeze > 0) n.SqueezeExcite(l, m.squeeze, m.se_inner);
  n.Conv(l, m.out, 1, 1, 1, true, Act::kNone, false, true);
  if (residual) n.Residual(l, drop, n.a);
  n.Close(l, n.a);
}

// torchvision's efficientnet_b0..b3: width and depth multipliers, dropout.
std::vector<LayerCost> EfficientNet(Net& n, double width, double depth, int classes, double sd) {
  struct Stage {
    int ratio, kernel, stride, in, out, layers;
  };
  const Stage stages[] = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},  {6, 5, 2, 24, 40, 2},
                          {6, 3, 2, 40, 80, 3},  {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4},
                          {6, 3, 1, 192, 320, 1}};
  auto adjust = [&](int ch) { return MakeDivisible(ch * width); };
  {
    LayerCost& l = n.Open("stem");
    n.Stem(l);
    n.Conv(l, adjust(stages[0].in), 3, 2, 1, true, Act::kSilu, false, true);
    n.Close(l, n.a);
  }
  int id = 0;
  for (int s = 0; s < 7; ++s) {
    n.unit = absl::StrCat("features.", s + 1);
    const int layers = static_cast<int>(std::ceil(stages[s].layers * depth));
    for (int i = 0; i < layers; ++i, ++id) {
      const int64_t in = n.c;
      const MbConv m{MakeDivisible(double(in) * stages[s].ratio),
                     stages[s].kernel,
                     i == 0 ? stages[s].stride : 1,
                     adjust(stages[s].out),
                     std::max<int64_t>(1, in / 4),
                     Act::kSilu,
                     Act::kSilu};
      // torchvision: stochastic_depth_prob x block / blocks.
      InvertedResidual(n, absl::StrCat("features.", s + 1, ".", i), m, sd > 0 && id > 0);
    }
  }
  n.unit.clear();
  LayerCost& l = n.Open("head");
  n.Conv(l, 4 * n.c, 1, 1, 1, true, Act::kSilu, false, false);
  n.Pool(l, n.a);
  l.saved_activation_bytes += double(n.c) * 1;  // dropout's mask
  l.kernels += 1;
  n.Classifier(l, classes);
  n.Close(l, n.a);
  return std::move(n.layers);
}

// Howard et al., "Searching for MobileNetV3" (2019), table 1 / 2, as
// torchvision's mobilenet_v3_large / _small build them (squeeze channels
// _make_divisible(expanded / 4), ReLU inside, hardsigmoid gate).
std::vector<LayerCost> MobileNetV3(Net& n, bool large, int classes) {
  struct Row {
    int in, kernel, expanded, out;
    bool se, hs;
    int stride;
  };
  static const Row kLarge[] = {{16, 3, 16, 16, false, false, 1},  {16, 3, 64, 24, false, false, 2},
                               {24, 3, 72, 24, false, false, 1},  {24, 5, 72, 40, true, false, 2},
                               {40, 5, 120, 40, true, false, 1},  {40, 5, 120, 40, true, false, 1},
                               {40, 3, 240, 80, false, true, 2},  {80, 3, 200, 80, false, true, 1},
                               {80, 3, 184, 80, false, true, 1},  {80, 3, 184, 80, false, true, 1},
                               {80, 3, 480, 112, true, true, 1},  {112, 3, 672, 112, true, true, 1},
                               {112, 5, 672, 160, true, true, 2}, {160, 5, 960, 160, true, true, 1},
                               {160, 5, 960, 160, true, true, 1}};
  static const Row kSmall[] = {{16, 3, 16, 16, true, false, 2},  {16, 3, 72, 24, false, false, 2},
                               {24, 3, 88, 24, false, false, 1}, {24, 5, 96, 40, true, true, 2},
                               {40, 5, 240, 40, true, true, 1},  {40, 5, 240, 40, true, true, 1},
                               {40, 5, 120, 48, true, true, 1},  {48, 5, 144, 48, true, true, 1},
                               {48, 5, 288, 96, true, true, 2},  {96, 5, 576, 96, true, true, 1},
                               {96, 5, 576, 96, true, true, 1}};
  const Row* rows = large ? kLarge : kSmall;
  const int count = large ? 15 : 11;
  {
    LayerCost& l = n.Open("stem");
    n.Stem(l);
    n.Conv(l, 16, 3, 2, 1, true, Act::kHardswish, false, true);
    n.Close(l, n.a);
  }
  n.unit = "features";
  for (int i = 0; i < count; ++i) {
    const Row& r = rows[i];
    const Act act = r.hs ? Act::kHardswish : Act::kRelu;
    const MbConv m{r.expanded, r.kernel,  r.stride, r.out, r.se ? MakeDivisible(r.expanded / 4) : 0,
                   act,        Act::kRelu};
    InvertedResidual(n, absl::StrCat("features.", i + 1), m, false);
  }
  n.unit.clear();
  LayerCost& l = n.Open("head");
  n.Conv(l, 6 * n.c, 1, 1, 1, true, Act::kHardswish, false, false);
  n.Pool(l, n.a);
  n.Classifier(l, large ? 1280 : 1024);
  // Hardswish (in place: clones its input) and dropout on the vector.
  l.saved_activation_bytes += double(n.c) * (2 * n.a + 1);
  l.kernels += 3;
  l.fused_kernels += 1;
  n.Classifier(l, classes);
  n.Close(l, n.a);
  return std::move(n.layers);
}

// ---------------------------------------------------------------- RegNet
// Radosavovic et al., "Designing Network Design Spaces" (2020), as
// torchvision.models.regnet builds it: a 3x3 stride-2 stem to 32 channels;
// per block a 1x1 conv, a 3x3 grouped conv (group width g; stride on the
// first block of a stage), squeeze-excitation on the block's input width x
// 0.25 (RegNetY), a 1x1 conv with BatchNorm only, a 1x1 projection where the
// shape changes, the sum (a new tensor) and an in-place ReLU.
struct RegNetStage {
  int depth;
  int64_t width;
  int64_t group_width;
};

std::vector<LayerCost> RegNet(Net& n, const RegNetStage (&stages)[4], bool se, int classes) {
  {
    LayerCost& l = n.Open("stem");
    n.Stem(l);
    n.Conv(l, 32, 3, 2, 1, true, Act::kRelu, false, true);
    n.Close(l, n.a);
  }
  for (int s = 0; s < 4; ++s) {
    n.unit = absl::StrCat("trunk_output.block", s + 1);
    for (int i = 0; i < stages[s].depth; ++i) {
      LayerCost& l = n.Open(absl::StrCat("trunk_output.block", s + 1, ".", i));
      const int64_t w_in = n.c, w = stages[s].width;
      const int hw_in = n.hw, stride = i == 0 ? 2 : 1;
      const double in_elems = n.Elements();
      if (w_in != w || stride != 1) {  // projection, from the block input
        n.Conv(l, w, 1, stride, 1, true, Act::kNone, false, false);
        n.hw = hw_in;
        n.c = w_in;
      }
      n.Conv(l, w, 1, 1, 1, true, Act::kRelu, false, true);
      n.Conv(l, w, 3, stride, w / stages[s].group_width, true, Act::kRelu, false, true);
      if (se) {
        const int64_t squeeze = static_cast<int64_t>(std::lround(0.25 * double(w_in)));
        n.SqueezeExcite(l, squeeze, Act::kRelu);
      }
      n.Conv(l, w, 1, 1, 1, true, Act::kNone, false, false);
      // The sum (read both, write it) and the in-place ReLU, which keeps it;
      // backward: ReLU's gradient, and the block input's two gradients summed.
      const double o = n.Elements();
      l.extra_traffic_fwd_bytes += 3 * o * n.a + 2 * o * n.a;
      l.extra_traffic_bwd_bytes += 3 * o * n.a + 3 * in_elems * n.a;
      l.saved_activation_bytes += o * n.a;
      l.kernels += 2;
      l.fused_kernels += 1;
      n.Close(l, n.a);
    }
  }
  n.unit.clear();
  LayerCost& l = n.Open("head");
  n.Pool(l, n.a);
  n.Classifier(l, classes);
  n.Close(l, n.a);
  return std::move(n.layers);
}

// torchvision's RegNet settings, resolved: BlockParams.from_init_params's
// quantised widths, depths and group widths per stage (regnet_y_400mf:
// depth 16, w_0 48, w_a 27.89, w_m 2.09, group width 8, and so on).
struct RegNetPreset {
  const char* name;
  bool se;
  RegNetStage stages[4];
};
const RegNetPreset kRegNets[] = {
    {"regnet_y_400mf", true, {{1, 48, 8}, {3, 104, 8}, {6, 208, 8}, {6, 440, 8}}},
    {"regnet_y_800mf", true, {{1, 64, 16}, {3, 144, 16}, {8, 320, 16}, {2, 784, 16}}},
    {"regnet_y_1_6gf", true, {{2, 48, 24}, {6, 120, 24}, {17, 336, 24}, {2, 888, 24}}},
    {"regnet_y_3_2gf", true, {{2, 72, 24}, {5, 216, 24}, {13, 576, 24}, {1, 1512, 24}}},
    {"regnet_y_8gf", true, {{2, 224, 56}, {4, 448, 56}, {10, 896, 56}, {1, 2016, 56}}},
    {"regnet_x_400mf", false, {{1, 32, 16}, {2, 64, 16}, {7, 160, 16}, {12, 400, 16}}},
    {"regnet_x_800mf", false, {{1, 64, 16}, {3, 128, 16}, {7, 288, 16}, {5, 672, 16}}},
    {"regnet_x_1_6gf", false, {{2, 72, 24}, {4, 168, 24}, {10, 408, 24}, {2, 912, 24}}},
};

struct ConvNeXtPreset {
  const char* name;
  int depths[4];
  int dims[4];
  double stochastic_depth;  // torchvision's default stochastic_depth_prob
};
const ConvNeXtPreset kConvNeXts[] = {
    {"convnext_tiny", {3, 3, 9, 3}, {96, 192, 384, 768}, 0.1},
    {"convnext_small", {3, 3, 27, 3}, {96, 192, 384, 768}, 0.4},
    {"convnext_base", {3, 3, 27, 3}, {128, 256, 512, 1024}, 0.5},
};

struct EfficientNetPreset {
  const char* name;
  double width, depth;
};
const EfficientNetPreset kEfficientNets[] = {{"efficientnet_b0", 1.0, 1.0},
                                             {"efficientnet_b1", 1.0, 1.1},
                                             {"efficientnet_b2", 1.1, 1.2},
                                             {"efficientnet_b3", 1.2, 1.4}};

}  // namespace

std::vector<std::string> ModernCnnArchNames() {
  std::vector<std::string> names;
  for (const auto& p : kConvNeXts) names.emplace_back(p.name);
  for (const auto& p : kEfficientNets) names.emplace_back(p.name);
  names.emplace_back("mobilenet_v3_large");
  names.emplace_back("mobilenet_v3_small");
  for (const auto& p : kRegNets) names.emplace_back(p.name);
  return names;
}

bool IsModernCnn(std::string_view arch) {
  for (const std::string& n : ModernCnnArchNames()) {
    if (n == arch) return true;
  }
  return false;
}

namespace {

absl::StatusOr<std::vector<LayerCost>> Table(std::string_view arch, int image_size, int num_classes,
                                             Precision precision, bool channels_last,
                                             double stochastic_depth);

// The host's time per forward op these tables count, against a ResNet op's
// (the unit the profile's per-op CNN host time is calibrated in): on one
// H200 host, host-bound steps (micro-batch 16; 64 for all but ConvNeXt) took
// per counted op 0.48 / 0.64 (torchvision / timm ConvNeXt-T), 0.52 / 0.58
// (EfficientNet-B0), 0.78 (MobileNetV3-L) and 0.77 (RegNetY-1.6GF) of what
// ResNeXt-50 -- counted as the ResNets are -- took per op on the same host a
// minute apart (bench/validate/data/checks/2026-11-28_h200x1_cnn_arch_check,
// calibration). Their geometric mean: many counted ops here are autocast's
// casts of small tensors and squeeze-excitation's tiny kernels, which cost
// the host less than a convolution's dispatch. What stays (+-20 % per family)
// is in bench/validate/README.md, "h23c, session 23".
constexpr double kHostOpScale = 0.655;

}  // namespace

absl::StatusOr<std::vector<LayerCost>> ModernCnnTable(std::string_view arch, int image_size,
                                                      int num_classes, Precision precision,
                                                      bool channels_last, double stochastic_depth) {
  auto layers = Table(arch, image_size, num_classes, precision, channels_last, stochastic_depth);
  if (!layers.ok()) return layers;
  for (LayerCost& l : *layers) {
    l.kernels = static_cast<int>(std::lround(l.kernels * kHostOpScale));
    l.library_kernels = std::min(l.library_kernels, l.kernels);
  }
  return layers;
}

namespace {

absl::StatusOr<std::vector<LayerCost>> Table(std::string_view arch, int image_size, int num_classes,
                                             Precision precision, bool channels_last,
                                             double stochastic_depth) {
  Net n;
  n.a = ActivationBytes(precision);
  n.r = ResidualBytes(precision);
  n.nhwc = channels_last;
  n.image = n.hw = image_size;
  n.c = 3;
  for (const auto& p : kConvNeXts) {
    if (arch == p.name) {
      return ConvNeXt(n, p.depths, p.dims, num_classes,
                      stochastic_depth < 0 ? p.stochastic_depth : stochastic_depth);
    }
  }
  for (const auto& p : kEfficientNets) {
    if (arch == p.name) {
      return EfficientNet(n, p.width, p.depth, num_classes,
                          stochastic_depth < 0 ? 0.2 : stochastic_depth);
    }
  }
  if (arch == "mobilenet_v3_large") return MobileNetV3(n, true, num_classes);
  if (arch == "mobilenet_v3_small") return MobileNetV3(n, false, num_classes);
  for (const auto& p : kRegNets) {
    if (arch == p.name) return RegNet(n, p.stages, p.se, num_classes);
  }
  return absl::NotFoundError(absl::StrCat("unknown CNN architecture '", std::string(arch), "'"));
}

}  // namespace

}  // namespace xdeep::tuner
