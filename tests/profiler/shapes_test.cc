// Tests of GEMM shape parsing and the fwd/dgrad/wgrad expansion.
#include "profiler/shapes.h"

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

TEST(ShapesTest, LayerExpandsToThreePassesWithEqualFlops) {
  std::vector<GemmSpec> g = LayerGemms("fc1", 8192, 4096, 16384);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].pass, "fwd");
  EXPECT_EQ(g[0].m, 8192);
  EXPECT_EQ(g[0].n, 16384);
  EXPECT_EQ(g[0].k, 4096);
  EXPECT_EQ(g[1].pass, "dgrad");
  EXPECT_EQ(g[1].n, 4096);
  EXPECT_EQ(g[1].k, 16384);
  EXPECT_EQ(g[2].pass, "wgrad");
  EXPECT_EQ(g[2].k, 8192);
  for (const GemmSpec& s : g) EXPECT_DOUBLE_EQ(s.Flops(), 2.0 * 8192 * 4096 * 16384);
}

TEST(ShapesTest, CommandLineForms) {
  absl::StatusOr<GemmSpec> g = ParseGemmArg("128x256x512");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->n, 256);
  EXPECT_EQ(g->pass, "plain");
  EXPECT_FALSE(ParseGemmArg("128x256").ok());
  EXPECT_FALSE(ParseGemmArg("0x1x1").ok());
  absl::StatusOr<std::vector<GemmSpec>> l = ParseLayerArg("qkv:4096:1024:3072");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ((*l)[0].layer, "qkv");
  EXPECT_FALSE(ParseLayerArg("qkv:4096:1024").ok());
}

TEST(ShapesTest, JsonFile) {
  absl::StatusOr<ShapeSet> s = ParseShapesJson(R"({
    "schema": "xdeep.gemm_shapes/1", "dtypes": ["bf16", "tf32"],
    "layers": [{"name": "proj", "tokens": 64, "in": 32, "out": 16}],
    "gemms": [{"m": 8, "n": 8, "k": 8, "label": "sq"},
              {"m": 8, "n": 16, "k": 24, "pass": "wgrad", "dtype": "tf32"}]})");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->gemms.size(), 5u);
  EXPECT_EQ(s->gemms[3].layer, "sq");
  EXPECT_EQ(s->gemms[3].pass, "plain");
  EXPECT_EQ(s->gemms[4].pass, "wgrad");  // a check shape keeps its layer's storage
  EXPECT_TRUE(s->gemms[3].RunsAt(DType::kBf16));  // no dtype: every precision of the run
  EXPECT_FALSE(s->gemms[4].RunsAt(DType::kBf16));  // its own precision only
  EXPECT_TRUE(s->gemms[4].RunsAt(DType::kTf32));
  EXPECT_FALSE(ParseShapesJson(R"({"schema": "xdeep.gemm_shapes/1",
                                    "gemms": [{"m":1,"n":1,"k":1,"dtype":"int4"}]})")
                   .ok());
  EXPECT_FALSE(ParseShapesJson(R"({"schema": "xdeep.gemm_shapes/1",
                                    "gemms": [{"m":1,"n":1,"k":1,"pass":"backward"}]})")
                   .ok());
  ASSERT_EQ(s->dtypes.size(), 2u);
  EXPECT_EQ(s->dtypes[1], DType::kTf32);
  EXPECT_FALSE(ParseShapesJson(R"({"schema": "other", "gemms": [{"m":1,"n":1,"k":1}]})").ok());
  EXPECT_FALSE(
      ParseShapesJson(R"({"schema": "xdeep.gemm_shapes/1", "layers": [{"tokens": 1}]})").ok());
  EXPECT_FALSE(
      ParseShapesJson(
          R"({"schema": "xdeep.gemm_shapes/1", "dtypes": ["int4"], "gemms": [{"m":1,"n":1,"k":1}]})")
          .ok());
  EXPECT_FALSE(ParseShapesJson(R"({"schema": "xdeep.gemm_shapes/1"})").ok());
}

TEST(ShapesTest, Attention) {
  absl::StatusOr<AttentionSpec> a = ParseAttentionArg("4:32:2048:128:causal");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->causal);
  EXPECT_EQ(a->heads, 32);
  EXPECT_DOUBLE_EQ(a->Flops(), 0.5 * 4.0 * 4 * 32 * 2048.0 * 2048 * 128);
  absl::StatusOr<AttentionSpec> full = ParseAttentionArg("1:2:3:4");
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE(full->causal);
  EXPECT_FALSE(ParseAttentionArg("1:2:3").ok());
  EXPECT_FALSE(ParseAttentionArg("1:2:3:4:sliding").ok());
  absl::StatusOr<ShapeSet> s = ParseShapesJson(R"({"schema": "xdeep.gemm_shapes/1",
    "attention": [{"batch": 2, "heads": 8, "seq": 512, "head_dim": 64, "causal": true}]})");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->attention.size(), 1u);
  EXPECT_EQ(s->attention[0].seq, 512);
  EXPECT_TRUE(s->gemms.empty());
}

TEST(DTypeTest, ParseAndSizes) {
  EXPECT_EQ(*ParseDType("BF16"), DType::kBf16);
  EXPECT_EQ(DTypeBytes(DType::kTf32), 4);
  EXPECT_EQ(DTypeBytes(DType::kFp16), 2);
  EXPECT_FALSE(ParseDTypeList("").ok());
  EXPECT_EQ(ParseDTypeList("bf16,fp32")->size(), 2u);
}

}  // namespace
}  // namespace xdeep::profiler
