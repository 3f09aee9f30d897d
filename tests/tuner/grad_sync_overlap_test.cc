// What a per-micro-batch reduce-scatter beside its backward leaves waiting
// (tuner/grad_sync_overlap.h), against the 2x H100 measurement of FSDP2
// (bench/scale/grad_sync_overlap.py) and in the strategy model.
#include "tuner/grad_sync_overlap.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tuner/test_util.h"
#include "tuner/hardware_profile.h"
#include "tuner/network_model.h"
#include "tuner/pipeline_engine.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {
namespace {

constexpr double kBucketBytes = 25.0 * 1024 * 1024;  // the bucket rule's last piece

TEST(GradSyncOverlapTest, OneUnitWaitsWhole) {
  const UnitReduceOrder order = Fsdp2ReduceOrder(1e9, 1, 1e9, 0);
  EXPECT_DOUBLE_EQ(order.first_backward_share, 1.0);
  EXPECT_DOUBLE_EQ(order.last_params, 1e9);
  ReductionBesideBackward r;
  r.whole_s = r.last_s = 0.3;
  r.backward_s = r.backward_before_first_s = 0.5;
  EXPECT_DOUBLE_EQ(ExposedReduction(r), 0.3);
}

TEST(GradSyncOverlapTest, ComputeBoundLeavesTheLastUnitAndCommBoundTheFirstUnitsBackward) {
  // Four blocks of 1e8 and a root of 2e7: the root's reduce-scatter is last.
  const UnitReduceOrder order = Fsdp2ReduceOrder(4.2e8, 5, 1e8, 2e7);
  EXPECT_NEAR(order.first_backward_share, 1e8 / 4.2e8, 1e-12);
  EXPECT_DOUBLE_EQ(order.last_params, 2e7);
  ReductionBesideBackward r;
  r.backward_s = 1.0;
  r.backward_before_first_s = 0.25;
  r.whole_s = 0.4;  // hides in the 0.75 s after the first unit
  r.last_s = 0.02;
  EXPECT_DOUBLE_EQ(ExposedReduction(r), 0.02);
  r.whole_s = 1.2;  // outlasts it: the first unit's backward hid nothing
  EXPECT_DOUBLE_EQ(ExposedReduction(r), 1.2 - 0.75);
}

TEST(GradSyncOverlapTest, DdpBucketsCloseAtTheirCapFirstOneAtOneMebibyte) {
  constexpr double MiB = 1024.0 * 1024;
  DdpBuckets none;
  EXPECT_DOUBLE_EQ(none.count(), 0);
  // A head of 4 MiB fills the 1 MiB first bucket alone; then 12 blocks of
  // 10 MiB in 5 tensors of 2 MiB: a bucket closes at 26 MiB (13 tensors), so
  // 120 MiB make 4 full and one open bucket of 16 MiB.
  DdpBuckets b;
  b.Add(4 * MiB, 1);
  EXPECT_DOUBLE_EQ(b.count(), 1);
  for (int i = 0; i < 12; ++i) b.Add(10 * MiB, 5);
  EXPECT_DOUBLE_EQ(b.count(), 1 + 4 + 1);
  // An embedding larger than the cap closes the open bucket it lands in.
  b.Add(80 * MiB, 1);
  EXPECT_DOUBLE_EQ(b.count(), 6);
  b.Add(1 * MiB, 2);
  EXPECT_DOUBLE_EQ(b.count(), 7);
  // Smaller caps, more buckets for the same gradients (DDP's bucket_cap_mb).
  DdpBuckets small(1 * MiB);
  for (int i = 0; i < 12; ++i) small.Add(10 * MiB, 5);
  EXPECT_DOUBLE_EQ(small.count(), 60);
}

// bench/scale/data/2026-11-27_h200x2_grad_sync_overlap_batch4.json: FSDP2 on
// 4 Llama-shaped blocks, 2x H200, NCCL on sockets, parameters kept gathered,
// the backward timed on its own, 4 micro-batches of 4 sequences.
TEST(GradSyncOverlapTest, Fsdp2OrderIsNearerTheTwoGpuMeasurementThanTheBucketRule) {
  const auto m = nlohmann::json::parse(
      testing::ReadTextFile(std::string(XDEEP_SOURCE_DIR) +
                            "/bench/scale/data/2026-11-27_h200x2_grad_sync_overlap_batch4.json"),
      nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(m.is_discarded());
  ASSERT_TRUE(m.value("backward_measured", false));
  ASSERT_FALSE(m.value("reshard_after_backward", true));
  const double params = m["gradient_params"], bytes = m["gradient_bytes_fp32"];
  const double blocks = m["blocks"];
  const double rs = m["reduce_scatter_alone_s"];
  const double backward = m["backward_per_micro_batch_s"];
  const double cost = m["per_mb_cost_per_micro_batch_s"];

  ReductionBesideBackward bucket;
  bucket.whole_s = rs;
  bucket.last_s = rs * kBucketBytes / bytes;
  bucket.backward_s = backward;
  const UnitReduceOrder order = Fsdp2ReduceOrder(params, blocks, params / blocks, 0);
  ReductionBesideBackward fsdp2 = bucket;
  fsdp2.last_s = rs * order.last_params / params;
  fsdp2.backward_before_first_s = order.first_backward_share * backward;
  const double by_bucket = ExposedReduction(bucket), by_order = ExposedReduction(fsdp2);
  EXPECT_LT(std::abs(by_order - cost), std::abs(by_bucket - cost))
      << "bucket rule " << by_bucket << " s, FSDP2's order " << by_order << " s, measured " << cost
      << " s a micro-batch";
  // The order is a floor: what it leaves (the reduce-scatter slowed beside
  // compute) is not charged, and no constant stands in for it.
  EXPECT_LE(by_order, cost);
}

// bench/scale/data/2026-11-28_h200x2_zero2_reduce_frequency_nvlink.json: a
// 12.8 GB fp32 reduce-scatter in 16 buckets over two H200s on NVLink, each
// bucket issued on a second stream after its piece of a backward of bf16
// matmuls and its shard added into an fp32 accumulator there, every
// micro-batch, the backward's end waiting for them.
TEST(GradSyncOverlapTest, InNodeRingSmsBringTheRuleToTheNvlinkMeasurement) {
  const auto m = nlohmann::json::parse(
      testing::ReadTextFile(std::string(XDEEP_SOURCE_DIR) +
                            "/bench/scale/data/2026-11-28_h200x2_zero2_reduce_frequency_nvlink.json"),
      nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(m.is_discarded());
  ASSERT_EQ(m["world"], 2);
  auto h200 = BuiltinHardwareProfile("h200-sxm");
  ASSERT_TRUE(h200.ok());
  const double rs = m["reduce_scatter_buckets_s"], backward = m["backward_alone_s"];
  const double buckets = m["buckets"], bytes = m["grad_bytes_fp32"];
  const double cost = m["cost_per_micro_batch_s"]["per_mb"];
  // The accumulator's add on the same stream: the shard read twice and
  // written once at the card's copy bandwidth.
  const double add = 3 * bytes / 2 / (h200->memory_bandwidth_gbps * 1e9);
  ReductionBesideBackward r;
  r.whole_s = rs + add;
  r.last_s = (rs + add) / buckets;
  r.backward_s = backward;
  const double overlap = ExposedReduction(r);
  const double share = InNodeOverlapComputeShare(h200->sm_count);
  EXPECT_NEAR(share, 24.0 / 132, 1e-12);
  const double shared = overlap + share * std::min(r.whole_s, backward);
  EXPECT_LT(std::abs(shared - cost), std::abs(overlap - cost))
      << "overlap alone " << overlap << " s, with the ring's SMs " << shared << " s, measured "
      << cost << " s a micro-batch";
  EXPECT_LT(std::abs(shared - cost), 0.1 * cost);
}

TEST(GradSyncOverlapTest, StrategyModelChargesTheRingsSmsInsideANode) {
  // ZeRO-2 over the two data-parallel ranks of one node (tp 4 x dp 2) against
  // the same backward and reduce-scatter with the compute share taken out:
  // a GPU with many SMs makes the in-node share vanish and nothing else move.
  auto hw = BuiltinHardwareProfile("a100-sxm");
  ASSERT_TRUE(hw.ok());
  Configuration c = testing::EngineLayout(4, 1, 2);
  c.sharding = Sharding::kZero2;
  const Workload w = testing::EngineGpt(PipelineParallel::kDeepSpeed);
  StepTerms terms;
  StrategyModel model(w, *hw);
  const StepTime with = model.Time(c, &terms);
  HardwareProfile many_sms = *hw;
  many_sms.sm_count = 1 << 30;
  StepTerms none;
  StrategyModel(w, many_sms).Time(c, &none);
  EXPECT_GT(terms.sharded_dp_s, none.sharded_dp_s);
  // The difference is the share times the backward it overlaps, at most the
  // share of the micro-batch's passes.
  const double share = InNodeOverlapComputeShare(hw->sm_count);
  EXPECT_NEAR(share, 24.0 / 108, 1e-12);
  EXPECT_LE(terms.sharded_dp_s - none.sharded_dp_s, share * terms.backward_s + 1e-12);
  EXPECT_GT(with.total_s, 0);
}

Configuration Zero2(int pp) {
  Configuration c = testing::EngineLayout(8, pp, 8);
  c.sharding = Sharding::kZero2;
  return c;
}

TEST(GradSyncOverlapTest, PyTorchsOneStageReducesByUnitAndOtherEnginesByBucket) {
  EXPECT_TRUE(EngineTraits(testing::EngineGpt(PipelineParallel::kMegatron), Zero2(1))
                  .reduce_scatter_per_unit);
  EXPECT_TRUE(
      EngineTraits(testing::EngineGpt(PipelineParallel::kTorch), Zero2(1)).reduce_scatter_per_unit);
  EXPECT_FALSE(EngineTraits(testing::EngineGpt(PipelineParallel::kDeepSpeed), Zero2(1))
                   .reduce_scatter_per_unit);
  EXPECT_FALSE(EngineTraits(testing::EngineGpt(PipelineParallel::kMegatron), Zero2(4))
                   .reduce_scatter_per_unit);
}

TEST(GradSyncOverlapTest, StrategyModelChargesFsdp2sFirstUnitBackward) {
  // One stage, ZeRO-2 over 8 nodes: DeepSpeed's engine and Megatron's differ
  // only in the reduction's order here.
  auto hw = BuiltinHardwareProfile("a100-sxm");
  ASSERT_TRUE(hw.ok());
  const Configuration c = Zero2(1);
  const StepTime by_unit =
      EstimateStepTime(testing::EngineGpt(PipelineParallel::kMegatron), *hw, c);
  const StepTime by_bucket =
      EstimateStepTime(testing::EngineGpt(PipelineParallel::kDeepSpeed), *hw, c);
  EXPECT_GT(by_unit.per_micro_batch_s, by_bucket.per_micro_batch_s);
  EXPECT_DOUBLE_EQ(by_unit.optimizer_s, by_bucket.optimizer_s);
}

}  // namespace
}  // namespace xdeep::tuner
