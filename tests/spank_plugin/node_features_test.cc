// Limits from sinfo: nodes with -C's features, and their memory.
#include "spank_plugin/node_features.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

// What `sinfo -h -N -o '%N|%P|%f|%m'` prints: a node once per partition.
constexpr const char* kSinfo =
    "n1|debug*|(null)|8000\n"
    "n1|big|(null)|8000\n"
    "n2|debug*|fast,ib|4000\n"
    "n2|big|fast,ib|4000\n"
    "n3|debug*|fast|16000\n"
    "n4|big|ib|2000\n";

TEST(NodeFeaturesTest, CountsPlainExpressions) {
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "", "fast").matching, 2);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "debug", "fast&ib").matching, 1);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "big", "fast|ib").matching, 2);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "big", "gpu").matching, 0);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "nosuch", "fast").matching, 0);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "", "").matching, -1) << "no constraint, nothing counted";
}

TEST(NodeFeaturesTest, LeavesRicherExpressionsToSlurm) {
  for (const char* e : {"fast*2", "[fast|ib]", "(fast&ib)|gpu", "fast&ib|gpu", "a:2", "a&"}) {
    EXPECT_EQ(ReadPartitionNodes(kSinfo, "", e).matching, -1) << e;
  }
}

TEST(NodeFeaturesTest, SmallestMemoryOfTheMatchingNodes) {
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "", "").memory_mb, 4000);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "", "fast&ib").memory_mb, 4000);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "big", "").memory_mb, 2000);
  PartitionNodes big = ReadPartitionNodes(kSinfo, "", "", 8000);
  EXPECT_EQ(big.matching, 2) << "n1 and n3 have 8000 MB or more";
  EXPECT_EQ(big.memory_mb, 8000);
  EXPECT_EQ(ReadPartitionNodes(kSinfo, "", "fast", 8000).matching, 1);
  EXPECT_EQ(MemoryMb("1500"), 1500);
  EXPECT_EQ(MemoryMb("2G"), 2048);
  EXPECT_EQ(MemoryMb("1T"), 1048576);
  EXPECT_EQ(MemoryMb("lots"), 0);
  EXPECT_EQ(MemoryMb("2Q"), 0);
}

}  // namespace
}  // namespace xdeep::spank
