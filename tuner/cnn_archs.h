// Layer tables of CNNs built from depthwise / grouped convolutions,
// squeeze-excitation and LayerNorm, exactly as torchvision builds them (and
// timm, where its model of the same name has the same layers): ConvNeXt,
// EfficientNet-B0..B3, MobileNetV3, RegNetY / RegNetX. Each row is one block
// (what a framework module of the network runs); depthwise and grouped
// convolutions go to LayerCost::grouped_convs, every elementwise kernel's
// bytes to the row's extra traffic (no per-saved-byte passes). ResNet, VGG
// and ResNeXt are in workload.cc.
#ifndef XDEEP_TUNER_CNN_ARCHS_H_
#define XDEEP_TUNER_CNN_ARCHS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

bool IsModernCnn(std::string_view arch);
std::vector<std::string> ModernCnnArchNames();

// The table for one of ModernCnnArchNames(); `stochastic_depth` < 0 takes
// torchvision's default rate for the architecture (CnnLayerTable).
absl::StatusOr<std::vector<LayerCost>> ModernCnnTable(std::string_view arch, int image_size,
                                                      int num_classes, Precision precision,
                                                      bool channels_last, double stochastic_depth);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_CNN_ARCHS_H_
