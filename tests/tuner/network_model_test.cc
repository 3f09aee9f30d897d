// The network model against NCCL's own structure: latency that grows with
// ranks (ring) or log nodes (tree), NICs shared by the groups of a node,
// oversubscription above a leaf group, NCCL's channels taken from compute,
// and a site's [fabric] keys.
#include "tuner/network_model.h"

#include <cmath>

#include "gtest/gtest.h"
#include "tuner/fabric.h"
#include "tuner/hardware_profile.h"

namespace xdeep::tuner {
namespace {

NodeLinks Dgx(double nvlink_gbps = 230) {
  NodeLinks n;
  n.gpus_per_node = 8;
  n.nvlink_busbw = nvlink_gbps * 1e9;
  return n;
}

TEST(NetworkModelTest, RingLatencyGrowsWithRanksTreeWithLogNodes) {
  const Fabric f = *BuiltinFabric("dgx-a100-superpod");
  // Tiny all-reduces are latency: a tree's grows with log2(nodes), so going
  // from 16 to 1024 nodes costs far less than 64x.
  const double small = 8;
  const double t16 = NetworkCollective(f, Dgx(), CollectiveOp::kAllReduce, 16, 1).At(small);
  const double t1024 = NetworkCollective(f, Dgx(), CollectiveOp::kAllReduce, 1024, 1).At(small);
  EXPECT_GT(t1024, t16);
  EXPECT_LT(t1024, 4 * t16);
  // An all-gather has only the ring: its latency is linear in ranks.
  const double g16 = NetworkCollective(f, Dgx(), CollectiveOp::kAllGather, 16, 1).At(small);
  const double g1024 = NetworkCollective(f, Dgx(), CollectiveOp::kAllGather, 1024, 1).At(small);
  EXPECT_GT(g1024, 30 * g16);
}

TEST(NetworkModelTest, LargeAllReduceRunsAtTheGroupsShareOfTheNics) {
  const Fabric f = *BuiltinFabric("dgx-a100-superpod");
  const double bytes = 1e9;
  // One rank per node (tensor parallel 8 inside): one 200 Gb/s rail each.
  const double one = NetworkCollective(f, Dgx(), CollectiveOp::kAllReduce, 8, 1).At(bytes);
  const double rail = f.NicBytesPerSecond();
  EXPECT_NEAR(one, 2.0 * 7 / 8 * bytes / rail, 0.05 * one);
  // Eight ranks per node use all eight rails: 8x the bandwidth, capped by
  // NVLink (the bandwidth term: the latency of 126 ring steps left out).
  const CollectiveLine l = NetworkCollective(f, Dgx(), CollectiveOp::kAllReduce, 64, 8);
  EXPECT_NEAR(l.At(2 * bytes) - l.At(bytes), 2.0 * 63 / 64 * bytes / std::min(8 * rail, 230e9),
              1e-6);
  // A node with four NICs for eight GPUs halves a one-rank-per-node group's share.
  Fabric four = f;
  four.nics_per_node = 4;
  const double shared = NetworkCollective(four, Dgx(), CollectiveOp::kAllReduce, 8, 1).At(bytes);
  EXPECT_NEAR(shared / one, 2.0, 0.05);
}

TEST(NetworkModelTest, OversubscriptionSlowsTrafficLeavingTheLeafGroup) {
  Fabric f = *BuiltinFabric("dgx-h100-superpod");
  f.nodes_per_leaf = 4;
  const NodeLinks n = Dgx(360);
  // One rank per node: one rail, below NVLink.
  const double inside = InterNodeBandwidth(f, n, 1, 4, /*tree=*/true);
  EXPECT_DOUBLE_EQ(inside, f.NicBytesPerSecond());
  f.oversubscription = 4;
  EXPECT_DOUBLE_EQ(InterNodeBandwidth(f, n, 1, 4, true), inside);     // stays in the leaf
  EXPECT_NEAR(InterNodeBandwidth(f, n, 1, 64, true), inside / 4, 1);  // a tree leaves it
  // A ring leaves each leaf group twice: with 4 of its nodes per leaf it needs
  // half the uplinks, and gets a quarter.
  EXPECT_NEAR(InterNodeBandwidth(f, n, 1, 64, false), inside / 2, 1);
}

TEST(NetworkModelTest, ProfilesRouteCrossNodeCollectivesThroughTheirFabric) {
  HardwareProfile hw = *BuiltinHardwareProfile("a100-sxm");
  EXPECT_EQ(hw.fabric.name, "dgx-a100-superpod");
  const double before = CollectiveTime(hw, CollectiveOp::kAllReduce, 1e9, 64, 1);
  hw.fabric.nic_gbit = 400;
  const double faster = CollectiveTime(hw, CollectiveOp::kAllReduce, 1e9, 64, 1);
  EXPECT_NEAR(before / faster, 2.0, 0.1);
  // Inside a node nothing changes.
  HardwareProfile other = *BuiltinHardwareProfile("a100-sxm");
  EXPECT_DOUBLE_EQ(CollectiveTime(hw, CollectiveOp::kAllReduce, 1e9, 8, 8),
                   CollectiveTime(other, CollectiveOp::kAllReduce, 1e9, 8, 8));
}

TEST(NetworkModelTest, OverlapShareFollowsChannelsOverSms) {
  const Fabric f = *BuiltinFabric("dgx-a100-superpod");
  EXPECT_NEAR(OverlapComputeShare(f, 8, 108, 1), 2.0 / 108, 1e-9);
  EXPECT_NEAR(OverlapComputeShare(f, 8, 108, 8), 16.0 / 108, 1e-9);
  // Inside a node NCCL's NVLink ring channels, whatever the group's size.
  EXPECT_NEAR(InNodeOverlapComputeShare(108), 24.0 / 108, 1e-9);
  EXPECT_NEAR(InNodeOverlapComputeShare(132), 24.0 / 132, 1e-9);
  EXPECT_DOUBLE_EQ(InNodeOverlapComputeShare(16), 0.5);
}

TEST(FabricTest, SiteKeysOverBuiltinAndErrorsNameTheKey) {
  std::vector<FabricKey> keys = {{"builtin", 0, "dgx-h100-superpod", true},
                                 {"nics_per_node", 4},
                                 {"oversubscription", 2},
                                 {"topology", 0, "fat-tree", true}};
  auto f = FabricFromKeys(keys, Fabric{}, "xdeepd.toml");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->nics_per_node, 4);
  EXPECT_DOUBLE_EQ(f->nic_gbit, 400);
  EXPECT_DOUBLE_EQ(f->oversubscription, 2);
  EXPECT_EQ(f->topology, FabricTopology::kFatTree);
  EXPECT_EQ(f->name, "site");

  for (const std::vector<FabricKey>& bad : {std::vector<FabricKey>{{"nic_gbps", 400}},
                                            {{"nics_per_node", 0}},
                                            {{"nics_per_node", 2.5}},
                                            {{"oversubscription", 0.5}},
                                            {{"nic_gbit", -1}},
                                            {{"topology", 0, "torus", true}},
                                            {{"builtin", 0, "nowhere", true}},
                                            {{"nic_gbit", 0, "fast", true}},
                                            {{"nic_gbit", 100}, {"nic_gbit", 200}}}) {
    auto r = FabricFromKeys(bad, Fabric{}, "xdeepd.toml");
    ASSERT_FALSE(r.ok()) << bad.front().key;
    EXPECT_NE(std::string(r.status().message()).find(bad.front().key), std::string::npos)
        << r.status();
  }
}

}  // namespace
}  // namespace xdeep::tuner
