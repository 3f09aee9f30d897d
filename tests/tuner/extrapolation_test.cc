// No blind extrapolation (issue 19, item 2): the daemon's probe covers the
// micro-batches the search tries, or the search stops at twice the largest
// probed; time per sample never rises with the micro-batch; every returned
// prediction says what it extrapolated.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tuner/test_util.h"
#include "tuner/hardware_profile.h"
#include "tuner/probe_shapes.h"
#include "tuner/search.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

// A 2x H100 profile xdeep's probes measured for GPT 125M-1.3B and ResNet-50 at
// micro-batches 1-16 (the held-out run of 2026-11-26 14:07), the kind of
// profile with which the search never picked a micro-batch above 16.
HardwareProfile MeasuredH100() {
  const std::string path = std::string(XDEEP_SOURCE_DIR) +
                           "/bench/validate/data/calibration/2026-11-26_h100x2_heldout9/profile.json";
  auto hw = HardwareProfileFromProbeReport(testing::ReadTextFile(path), path);
  EXPECT_TRUE(hw.ok()) << hw.status();
  return hw.ok() ? *hw : HardwareProfile{};
}

Configuration OneGpu(int mb) {
  Configuration c;
  c.micro_batch = mb;
  c.global_batch = mb;
  return c;
}

TEST(ExtrapolationTest, LargestProbedMicroBatchReadsTheProfile) {
  const HardwareProfile hw = MeasuredH100();
  ASSERT_FALSE(hw.builtin);
  for (const char* name : {"gpt-125m", "gpt-1.3b", "resnet50"}) {
    auto w = PresetWorkload(name);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(LargestProbedMicroBatch(*w, hw), 16) << name;
  }
  // A model whose shapes the probe never ran, and a built-in profile.
  auto other = PresetWorkload("gpt-6.7b");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(LargestProbedMicroBatch(*other, hw), 0);
  auto builtin = BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(builtin.ok());
  auto w = PresetWorkload("gpt-1.3b");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(LargestProbedMicroBatch(*w, *builtin), 0);
  // One GEMM missing at micro-batch 16 leaves 8 as the largest fully probed.
  HardwareProfile partial = hw;
  std::erase_if(partial.gemm, [](const GemmPoint& p) {
    auto has = [&](int64_t x) { return p.m == x || p.n == x || p.k == x; };
    return has(16 * 1024) && has(50257);  // the head at 16 x 1024 tokens, every orientation
  });
  EXPECT_EQ(LargestProbedMicroBatch(*w, partial), 8);
}

TEST(ExtrapolationTest, TimePerSampleNeverRisesWithMicroBatch) {
  const HardwareProfile hw = MeasuredH100();
  for (const char* name : {"gpt-125m", "gpt-1.3b", "resnet50"}) {
    auto w = PresetWorkload(name);
    ASSERT_TRUE(w.ok());
    w->max_micro_batch = 256;
    StrategyModel model(*w, hw);
    double previous = 0;
    for (int mb = 1; mb <= 256; mb *= 2) {
      const double per_sample = model.Time(OneGpu(mb)).per_micro_batch_s / mb;
      if (mb > 1) {
        EXPECT_LE(per_sample, previous * (1 + 1e-12)) << name << " micro-batch " << mb;
      }
      previous = per_sample;
    }
    // GPT-1.3B at micro-batch 256: at most 16x its micro-batch-16 time
    // (40-65 s a step was predicted before, against ~6 s for 16 x 0.4 s).
    if (std::string(name) == "gpt-1.3b") {
      EXPECT_LE(model.Time(OneGpu(256)).per_micro_batch_s,
                16 * model.Time(OneGpu(16)).per_micro_batch_s * (1 + 1e-12));
    }
  }
}

TEST(ExtrapolationTest, ProbeCoversTheSearchOrTheSearchStopsAtTwiceTheProbed) {
  // A profile that measured exactly what the daemon's probe asks for.
  for (const char* name : {"gpt-125m", "gpt-1.3b", "resnet50"}) {
    auto w = PresetWorkload(name);
    ASSERT_TRUE(w.ok());
    HardwareProfile hw = *BuiltinHardwareProfile("h100-sxm");
    hw.builtin = false;
    hw.gemm.clear();
    for (int mb : ProbeMicroBatches(*w)) {
      for (const LayerCost& l : w->layers) {
        for (const GemmShape& g : l.gemms) {
          GemmPoint p;
          p.m = static_cast<int64_t>(g.m_per_sample * mb);
          p.n = g.n;
          p.k = g.k;
          p.dtype = DType::kBf16;
          p.tflops = 500;
          hw.gemm.push_back(p);
        }
      }
    }
    // The largest power of two the search tries is probed.
    int largest_tried = 1;
    while (largest_tried * 2 <= w->max_micro_batch) largest_tried *= 2;
    EXPECT_EQ(LargestProbedMicroBatch(*w, hw), largest_tried) << name;
    EXPECT_EQ(SearchMicroBatchLimit(*w, hw), w->max_micro_batch) << name;
  }
  // Where the operands grow too large to probe, the search stops at twice
  // the largest probed micro-batch.
  auto w = PresetWorkload("gpt-125m");
  ASSERT_TRUE(w.ok());
  w->max_micro_batch = 4096;
  EXPECT_EQ(ProbeMicroBatches(*w).back(), 64);
  const HardwareProfile measured = MeasuredH100();
  EXPECT_EQ(SearchMicroBatchLimit(*w, measured), 32);  // probed 1-16 there
}

TEST(ExtrapolationTest, SearchStaysWithinTwiceTheProbedAndSaysWhatItExtrapolated) {
  const HardwareProfile hw = MeasuredH100();
  auto w = PresetWorkload("resnet50");
  ASSERT_TRUE(w.ok());
  SearchLimits limits;
  limits.max_nodes = 1;
  limits.max_gpus_per_node = 1;
  auto r = Search(*w, hw, limits);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<const Candidate*> all = {&r->best};
  for (const Candidate& c : r->alternatives) all.push_back(&c);
  for (const Candidate& c : r->pareto) all.push_back(&c);
  for (const Candidate* c : all) {
    EXPECT_LE(c->config.micro_batch, 32) << StrategyName(c->config);
    if (c->config.micro_batch > 16) {
      EXPECT_NE(c->prediction.extrapolated.find("beyond the largest probed (16)"),
                std::string::npos)
          << c->prediction.extrapolated;
    } else {
      EXPECT_EQ(c->prediction.extrapolated.find("micro-batch"), std::string::npos)
          << c->prediction.extrapolated;
    }
  }
  // An alternative that extrapolates otherwise than the best one says so in
  // its row.
  for (const Candidate& a : r->alternatives) {
    if (!a.prediction.extrapolated.empty() &&
        a.prediction.extrapolated != r->best.prediction.extrapolated) {
      EXPECT_NE(a.why.find("extrapolated: " + a.prediction.extrapolated), std::string::npos)
          << a.why;
    }
  }
  // The explanation `xdeep plan` shows carries the best one's note.
  if (!r->best.prediction.extrapolated.empty()) {
    EXPECT_NE(r->best.why.find("Extrapolated: " + r->best.prediction.extrapolated),
              std::string::npos)
        << r->best.why;
  }
  // Evaluate says the same for one configuration; a built-in profile says
  // it is one.
  Configuration c = OneGpu(32);
  c.grad_accum = w->reference_global_batch / 32;
  c.global_batch = w->reference_global_batch;
  EXPECT_EQ(Evaluate(*w, hw, limits, c).extrapolated, ExtrapolationNote(*w, hw, c));
  EXPECT_NE(ExtrapolationNote(*w, hw, c).find("micro-batch 32 modelled beyond"), std::string::npos);
  EXPECT_NE(ExtrapolationNote(*w, *BuiltinHardwareProfile("h100-sxm"), c).find("built-in"),
            std::string::npos);
  // Settings no probe measures are named.
  w->settings.compile = true;
  EXPECT_NE(ExtrapolationNote(*w, hw, c).find("compile"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::tuner
