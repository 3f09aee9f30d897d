// Which requests go straight to the heavy lane (request_weight.h).
#include "daemon/request_weight.h"

#include <gtest/gtest.h>

namespace xdeep::daemon {
namespace {

xdeep::v1::Workload Toml(const std::string& text) {
  xdeep::v1::Workload w;
  w.set_toml(text);
  return w;
}

TEST(RequestWeightTest, ManyLayersAreHeavy) {
  EXPECT_TRUE(HeavyWorkload(Toml("[model]\nfamily = \"generic\"\nnum_layers = 100000\n")));
  EXPECT_TRUE(HeavyWorkload(Toml("[model]\n  layers=100_000 # deep\n")));
  EXPECT_TRUE(HeavyWorkload(Toml("[model]\nlayers = 99999999999999999999\n")));
  EXPECT_FALSE(HeavyWorkload(Toml("[model]\npreset = \"gpt-1.3b\"\nlayers = 24\n")));
  EXPECT_FALSE(HeavyWorkload(Toml("[model]\nlayers = 2048\n")));
  EXPECT_FALSE(HeavyWorkload(Toml("name = \"layers = 100000\"\n")));
  EXPECT_FALSE(HeavyWorkload(Toml("")));
  xdeep::v1::Workload preset;
  preset.set_preset("llama-70b");
  EXPECT_FALSE(HeavyWorkload(preset));
}

}  // namespace
}  // namespace xdeep::daemon
