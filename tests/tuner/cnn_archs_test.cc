// Layer tables of CNNs beyond ResNet / VGG (tuner/cnn_archs.cc, ResNeXt in
// workload.cc) against the libraries that build them: parameters, parameter
// and buffer tensors, forward multiply-adds, and which convolutions are
// depthwise / grouped.
#include "tuner/cnn_archs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tuner/hardware_profile.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

struct Library {
  const char* arch;
  int64_t params, param_tensors, buffers, macs;
};

// torchvision.models.<arch>(num_classes=1000) at 224 px: sum of
// p.numel() over parameters(), len(list(parameters())), len(list(buffers()))
// (BatchNorm's running mean, variance and step count), and the multiply-adds
// of every Conv2d and Linear in one forward (forward hooks: output elements x
// in_channels / groups x kernel area; output elements x in_features). The
// parameter counts are torchvision's published ones; timm's convnext_tiny,
// efficientnet_b0 and mobilenetv3_large_100 have the same.
const Library kTorchvision[] = {
    {"convnext_tiny", 28589128, 182, 0, 4455531264},
    {"convnext_small", 50223688, 344, 0, 8683712256},
    {"convnext_base", 88591464, 344, 0, 15354729472},
    {"efficientnet_b0", 5288548, 213, 147, 385814752},
    {"efficientnet_b1", 7794184, 301, 207, 569651680},
    {"efficientnet_b2", 9109994, 301, 207, 658963440},
    {"efficientnet_b3", 12233232, 340, 234, 962708240},
    {"mobilenet_v3_large", 5483032, 174, 138, 216589760},
    {"mobilenet_v3_small", 2542856, 142, 102, 56510400},
    {"regnet_y_400mf", 4344144, 225, 159, 401842848},
    {"regnet_y_800mf", 6432512, 199, 141, 833856256},
    {"regnet_y_1_6gf", 11202430, 368, 258, 1612076160},
    {"regnet_y_3_2gf", 19436338, 290, 204, 3176482752},
    {"regnet_y_8gf", 39381472, 238, 168, 8473070592},
    {"regnet_x_400mf", 5495976, 215, 213, 413812608},
    {"regnet_x_800mf", 7259656, 161, 159, 799699712},
    {"regnet_x_1_6gf", 9190136, 179, 177, 1602849792},
    {"resnext50_32x4d", 25028904, 161, 159, 4230479872},
    {"resnext101_32x8d", 88791336, 314, 312, 16414015488},
    {"resnext101_64x4d", 83455272, 314, 312, 15460270080},
};

TEST(CnnArchsTest, TablesMatchTorchvisionsCounts) {
  for (const Library& lib : kTorchvision) {
    SCOPED_TRACE(lib.arch);
    auto layers =
        CnnLayerTable(lib.arch, 224, 1000, Precision::kBf16Autocast, MemoryFormat::kChannelsLast);
    ASSERT_TRUE(layers.ok()) << layers.status();
    int64_t params = 0, tensors = 0, buffers = 0;
    double flops = 0;
    for (const LayerCost& l : *layers) {
      params += l.params;
      tensors += ParamTensors(l);
      buffers += l.buffer_tensors;
      flops += l.fwd_flops;
    }
    EXPECT_EQ(params, lib.params);
    EXPECT_EQ(tensors, lib.param_tensors);
    EXPECT_EQ(buffers, lib.buffers);
    EXPECT_NEAR(flops / 2, double(lib.macs), 1e-9 * double(lib.macs));
  }
}

TEST(CnnArchsTest, EveryArchitectureIsListedAndParses) {
  for (const Library& lib : kTorchvision) {
    bool listed = false;
    for (const std::string& n : CnnArchNames()) listed = listed || n == lib.arch;
    EXPECT_TRUE(listed) << lib.arch;
    auto w = ParseWorkloadToml(absl::StrCat("[model]\nfamily = \"cnn\"\narch = \"", lib.arch,
                                            "\"\nmemory_format = \"channels_last\"\n"),
                               "w.toml");
    ASSERT_TRUE(w.ok()) << lib.arch << ": " << w.status();
    EXPECT_EQ(w->Parameters(), lib.params) << lib.arch;
  }
}

// Depthwise and grouped convolutions are not timed as GEMMs: they are the
// rows' grouped_convs, each with its groups, and only dense convolutions and
// Linears are GEMMs.
TEST(CnnArchsTest, DepthwiseAndGroupedConvolutionsAreNotGemms) {
  auto count = [](const char* arch, int64_t* depthwise, int64_t* grouped, int64_t* gemms) {
    auto layers =
        CnnLayerTable(arch, 224, 1000, Precision::kBf16Autocast, MemoryFormat::kChannelsLast);
    ASSERT_TRUE(layers.ok());
    *depthwise = *grouped = *gemms = 0;
    for (const LayerCost& l : *layers) {
      *gemms += static_cast<int64_t>(l.gemms.size());
      for (const GroupedConv& g : l.grouped_convs) (g.Depthwise() ? *depthwise : *grouped) += 1;
    }
  };
  int64_t dw, gr, gm;
  count("convnext_tiny", &dw, &gr, &gm);
  EXPECT_EQ(dw, 18);  // one 7x7 a block
  EXPECT_EQ(gr, 0);
  EXPECT_EQ(gm, 1 + 3 + 2 * 18 + 1);  // stem, downsamples, two Linears a block, head
  count("efficientnet_b0", &dw, &gr, &gm);
  EXPECT_EQ(dw, 16);  // one a block
  EXPECT_EQ(gr, 0);
  count("regnet_y_1_6gf", &dw, &gr, &gm);
  EXPECT_EQ(dw, 0);
  EXPECT_EQ(gr, 27);  // one 3x3 grouped conv a block
  count("resnext50_32x4d", &dw, &gr, &gm);
  EXPECT_EQ(gr, 16);
  EXPECT_EQ(gm, 1 + 2 * 16 + 4 + 1);  // stem, two 1x1 a block, downsamples, fc
  count("resnet50", &dw, &gr, &gm);
  EXPECT_EQ(dw + gr, 0);
}

TEST(CnnArchsTest, ImageSizeScalesConvolutionsNotParameters) {
  auto at = [](int side) {
    auto layers = CnnLayerTable("efficientnet_b2", side, 1000, Precision::kBf16Autocast,
                                MemoryFormat::kChannelsLast);
    EXPECT_TRUE(layers.ok());
    int64_t params = 0;
    double flops = 0, saved = 0;
    for (const LayerCost& l : *layers) {
      params += l.params;
      flops += l.fwd_flops;
      saved += l.saved_activation_bytes;
    }
    return std::make_tuple(params, flops, saved);
  };
  auto [p224, f224, s224] = at(224);
  auto [p288, f288, s288] = at(288);
  EXPECT_EQ(p224, p288);
  EXPECT_GT(f288 / f224, 1.5);
  EXPECT_GT(s288 / s224, 1.5);
}

// torchvision's stochastic depth adds a mask, a product and its gradient
// to every block after the first with a residual path; at rate 0 (timm's
// default drop_path_rate) the table has none of them.
TEST(CnnArchsTest, StochasticDepthAddsTrafficAndKernelsOnlyWhenOn) {
  auto totals = [](const char* arch, double sd) {
    auto layers =
        CnnLayerTable(arch, 224, 1000, Precision::kBf16Autocast, MemoryFormat::kChannelsLast, sd);
    EXPECT_TRUE(layers.ok());
    double traffic = 0;
    int kernels = 0;
    for (const LayerCost& l : *layers) {
      traffic += l.extra_traffic_fwd_bytes + l.extra_traffic_bwd_bytes;
      kernels += l.kernels;
    }
    return std::make_pair(traffic, kernels);
  };
  for (const char* arch : {"convnext_tiny", "efficientnet_b0"}) {
    SCOPED_TRACE(arch);
    auto off = totals(arch, 0);
    auto dflt = totals(arch, -1);
    auto on = totals(arch, 0.3);
    EXPECT_GT(dflt.first, off.first);
    EXPECT_EQ(dflt.first, on.first);
    EXPECT_GT(on.second, off.second);
  }
  auto w = ParseWorkloadToml(
      "[model]\nfamily = \"cnn\"\narch = \"convnext_tiny\"\nstochastic_depth = 0\n", "w.toml");
  ASSERT_TRUE(w.ok()) << w.status();
  auto d = ParseWorkloadToml("[model]\nfamily = \"cnn\"\narch = \"convnext_tiny\"\n", "w.toml");
  ASSERT_TRUE(d.ok());
  double tw = 0, td = 0;
  for (const LayerCost& l : w->layers) tw += l.extra_traffic_fwd_bytes;
  for (const LayerCost& l : d->layers) td += l.extra_traffic_fwd_bytes;
  EXPECT_LT(tw, td);
  auto bad = ParseWorkloadToml(
      "[model]\nfamily = \"transformer\"\npreset = \"gpt-125m\"\nstochastic_depth = 0.1\n",
      "w.toml");
  EXPECT_FALSE(bad.ok());
}

// Every new table times and sizes on a default profile at every micro-batch
// the search tries: finite, positive, time per sample never rising with the
// micro-batch, memory never falling with it.
TEST(CnnArchsTest, EveryTableTimesAndSizesAcrossMicroBatches) {
  const HardwareProfile hw;
  for (const Library& lib : kTorchvision) {
    SCOPED_TRACE(lib.arch);
    auto w =
        ParseWorkloadToml(absl::StrCat("[model]\nfamily = \"cnn\"\narch = \"", lib.arch,
                                       "\"\nimage_size = 260\nmemory_format = \"channels_last\"\n"),
                          "w.toml");
    ASSERT_TRUE(w.ok()) << w.status();
    StrategyModel model(*w, hw);
    double last_per_sample = 1e30, last_memory = 0;
    for (int mb = 1; mb <= 256; mb *= 2) {
      Configuration c;
      c.micro_batch = mb;
      c.global_batch = mb;
      const double t = model.Time(c).total_s;
      const double m = model.Memory(c).PeakAllocated();
      ASSERT_TRUE(std::isfinite(t) && t > 0) << mb;
      EXPECT_LE(t / mb, last_per_sample * (1 + 1e-9)) << mb;
      EXPECT_GE(m, last_memory) << mb;  // the optimizer step sets it at the smallest
      last_per_sample = t / mb;
      last_memory = m;
    }
  }
}

}  // namespace
}  // namespace xdeep::tuner
