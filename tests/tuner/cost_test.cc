// TRES billing weights to prices.
#include "tuner/cost.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace xdeep::tuner {
namespace {

TEST(CostTest, SumOfWeights) {
  // 8 GPUs, 96 CPUs, 2048 GB: 96 * 1 + 2048 * 0.25 + 8 * 10 = 688 units per
  // node-hour, 86 per GPU-hour; at 0.01 per unit: 6.88 and 0.86.
  auto p = PricingFromTresBillingWeights("CPU=1.0,Mem=0.25G,GRES/gpu=10", {96, 2048, 8}, 0.01);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->per_node_hour, 6.88);
  EXPECT_DOUBLE_EQ(p->per_gpu_hour, 0.86);
  // Memory weight without a unit is per MB.
  p = PricingFromTresBillingWeights("Mem=0.001", {0, 1000, 4}, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->per_node_hour, 1000 * 1024 * 0.001);
}

TEST(CostTest, MaxTres) {
  auto p = PricingFromTresBillingWeights("CPU=1.0,Mem=0.25G,GRES/gpu=10", {96, 2048, 8}, 1, true);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->per_node_hour, 512);  // memory dominates: 2048 * 0.25
  EXPECT_DOUBLE_EQ(p->per_gpu_hour, 64);
}

TEST(CostTest, ErrorsNameTheWeight) {
  auto p = PricingFromTresBillingWeights("CPU=x", {96, 2048, 8}, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), ::testing::HasSubstr("'CPU=x'"));
  p = PricingFromTresBillingWeights("CPU", {96, 2048, 8}, 1);
  ASSERT_FALSE(p.ok());
  p = PricingFromTresBillingWeights("Mem=2Q", {96, 2048, 8}, 1);
  ASSERT_FALSE(p.ok());
}

TEST(CostTest, ApplyPricing) {
  Pricing p{2.5, 20, "policy"};
  SearchLimits l;
  ApplyPricing(p, true, l);
  EXPECT_EQ(l.price_per_node_hour, 20);
  ApplyPricing(p, false, l);
  EXPECT_EQ(l.price_per_node_hour, 0);
  EXPECT_EQ(l.price_per_gpu_hour, 2.5);
}

}  // namespace
}  // namespace xdeep::tuner
