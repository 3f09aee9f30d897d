// Tests of the nccl-tests bandwidth definitions and size handling.
#include "profiler/collective_math.h"

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

TEST(BusBwTest, FactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kBroadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kSendRecv, 16), 1.0);
  EXPECT_DOUBLE_EQ(BusBwFactor(CollectiveOp::kAllReduce, 1), 0.0);
}

TEST(BusBwTest, AlgBwAndBusBw) {
  // 1 GiB in 10 ms is 107.37 GB/s algbw; all-reduce on 4 ranks moves 1.5x that per link.
  const int64_t gib = int64_t{1} << 30;
  EXPECT_NEAR(AlgBwGBps(gib, 0.01), 107.374182, 1e-6);
  EXPECT_NEAR(BusBwGBps(CollectiveOp::kAllReduce, 4, gib, 0.01), 107.374182 * 1.5, 1e-6);
  EXPECT_EQ(AlgBwGBps(gib, 0), 0);
}

TEST(CountsTest, SharesAndRounding) {
  CollectiveCounts ag = CountsFor(CollectiveOp::kAllGather, 1000, 4, 3);
  EXPECT_EQ(ag.bytes, 996);  // multiple of 3 ranks x 4 bytes
  EXPECT_EQ(ag.recv_elems, 249);
  EXPECT_EQ(ag.send_elems, 83);
  EXPECT_EQ(ag.call_count, 83);
  CollectiveCounts rs = CountsFor(CollectiveOp::kReduceScatter, 1024, 2, 2);
  EXPECT_EQ(rs.send_elems, 512);
  EXPECT_EQ(rs.recv_elems, 256);
  EXPECT_EQ(rs.call_count, 256);
  CollectiveCounts a2a = CountsFor(CollectiveOp::kAllToAll, 4096, 4, 4);
  EXPECT_EQ(a2a.send_elems, 1024);
  EXPECT_EQ(a2a.call_count, 256);
  CollectiveCounts ar = CountsFor(CollectiveOp::kAllReduce, 4096, 4, 2);
  EXPECT_EQ(ar.call_count, 1024);
}

TEST(SweepTest, CoversOneKiBToOneGiB) {
  std::vector<int64_t> s = SizeSweep(1024, int64_t{1} << 30, 4);
  ASSERT_EQ(s.size(), 11u);
  EXPECT_EQ(s.front(), 1024);
  EXPECT_EQ(s.back(), int64_t{1} << 30);
  EXPECT_EQ(SizeSweep(1024, 3000, 2), (std::vector<int64_t>{1024, 2048}));
  EXPECT_TRUE(SizeSweep(0, 10, 2).empty());
}

TEST(ParseTest, SizesAndOps) {
  EXPECT_EQ(*ParseByteSize("1K"), 1024);
  EXPECT_EQ(*ParseByteSize("64MiB"), int64_t{64} << 20);
  EXPECT_EQ(*ParseByteSize("1g"), int64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_FALSE(ParseByteSize("12Q").ok());
  EXPECT_FALSE(ParseByteSize("-1").ok());
  EXPECT_EQ(ParseCollectiveOpList("all")->size(), 6u);
  absl::StatusOr<std::vector<CollectiveOp>> two = ParseCollectiveOpList("all_reduce, all_to_all");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ((*two)[1], CollectiveOp::kAllToAll);
  EXPECT_FALSE(ParseCollectiveOpList("allreduce").ok());
}

}  // namespace
}  // namespace xdeep::profiler
