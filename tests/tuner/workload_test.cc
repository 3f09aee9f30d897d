// Workload parsing: example files, presets, parameter counts, error messages.
#include "tuner/workload.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"

namespace xdeep::tuner {
namespace {

TEST(WorkloadTest, ParsesEveryExample) {
  for (const char* name : {"gpt-125m", "gpt-1.3b", "resnet50", "generic"}) {
    const std::string path =
        std::string(XDEEP_SOURCE_DIR) + "/examples/workloads/" + name + ".toml";
    const std::string text = testing::ReadTextFile(path);
    ASSERT_FALSE(text.empty()) << path;
    auto w = ParseWorkloadToml(text, path);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_GT(w->Parameters(), 0);
    EXPECT_GT(w->samples, 0);
  }
}

TEST(WorkloadTest, Gpt125mParameterCountMatchesHandCount) {
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  // Hand count: embeddings V h + s h, 12 blocks of 12 h^2 + 4 h (no biases on
  // matmuls), final LayerNorm 2 h, tied head.
  const int64_t h = 768, v = 50257, s = 1024;
  const int64_t expected = v * h + s * h + 12 * (12 * h * h + 4 * h) + 2 * h;
  EXPECT_EQ(w->Parameters(), expected);
}

TEST(WorkloadTest, ResNet50ParameterCountMatchesTorchvision) {
  auto w = PresetWorkload("resnet50");
  ASSERT_TRUE(w.ok());
  // torchvision.models.resnet50(): 25,557,032 parameters.
  EXPECT_NEAR(static_cast<double>(w->Parameters()), 25557032.0, 25557032.0 * 0.001);
  // ~4.1 GMACs forward at 224x224.
  EXPECT_NEAR(w->ForwardFlopsPerSample() / 2, 4.1e9, 0.15e9);
}

TEST(WorkloadTest, Vgg16AndResNetsKnownSizes) {
  struct Case {
    const char* name;
    double params;
  };
  for (Case c : {Case{"vgg16", 138357544}, Case{"resnet18", 11689512}, Case{"resnet101", 44549160},
                 Case{"resnet152", 60192808}}) {
    auto w = PresetWorkload(c.name);
    ASSERT_TRUE(w.ok()) << c.name;
    EXPECT_NEAR(static_cast<double>(w->Parameters()), c.params, c.params * 0.001) << c.name;
  }
}

TEST(WorkloadTest, UnknownKeyNamesLineAndFix) {
  const std::string text = "name = \"x\"\n[model]\nfamily = \"transformer\"\nlayerz = 3\n";
  auto w = ParseWorkloadToml(text, "bad.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::StartsWith("bad.toml:4: unknown key 'layerz' in [model]; use one of:"));
}

TEST(WorkloadTest, SyntaxErrorNamesLine) {
  auto w = ParseWorkloadToml("[model]\nfamily = \n", "syn.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), ::testing::StartsWith("syn.toml:2: "));
}

TEST(WorkloadTest, WrongTypeAndRange) {
  auto w = ParseWorkloadToml("[model]\nfamily = \"transformer\"\nlayers = \"many\"\n", "t.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::HasSubstr("t.toml:3: 'layers' must be an integer; write e.g. layers ="));
  w = ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\n[batch]\nmin = 512\nmax = 256\n",
                        "r.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::HasSubstr("r.toml:4: min (512) > max (256)"));
}

TEST(WorkloadTest, MissingRequiredFieldSaysWhatToAdd) {
  auto w = ParseWorkloadToml("[model]\nfamily = \"transformer\"\nlayers = 2\n", "m.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()),
              ::testing::HasSubstr(
                  "m.toml:1: transformer needs 'hidden'; add hidden = <integer> to [model]"));
}

TEST(WorkloadTest, TrainingLengthForms) {
  auto a = ParseWorkloadToml("[model]\npreset = \"gpt-125m\"\n[training]\ntokens = 1024e6\n", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_DOUBLE_EQ(a->samples, 1e6);
  auto b = ParseWorkloadToml(
      "[model]\npreset = \"resnet50\"\n[training]\nepochs = 2\ndataset_size = 1000\n", "b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_DOUBLE_EQ(b->samples, 2000);
  auto c = ParseWorkloadToml("[model]\npreset = \"resnet50\"\n[training]\nepochs = 2\n", "c");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()),
              ::testing::HasSubstr("c:4: 'epochs' needs 'dataset_size'"));
}

TEST(WorkloadTest, BatchBoundsAndNoiseScale) {
  auto w = ParseWorkloadToml(
      "[model]\npreset = \"gpt-125m\"\n[batch]\nmin = 128\nmax = 1024\nb_noise = 500\n", "b");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->batch_may_change);
  EXPECT_EQ(w->min_global_batch, 128);
  EXPECT_EQ(w->max_global_batch, 1024);
  EXPECT_DOUBLE_EQ(w->b_noise, 500);
}

TEST(WorkloadTest, UnknownPresetListsChoices) {
  auto w = PresetWorkload("gpt-9000");
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), ::testing::HasSubstr("gpt-125m"));
}

}  // namespace
}  // namespace xdeep::tuner
