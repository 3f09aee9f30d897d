// -C as a bound: nodes of the partition whose features match.
#include "spank_plugin/node_features.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

// What `sinfo -h -N -o '%N|%P|%f'` prints: a node once per partition.
constexpr const char* kSinfo =
    "n1|debug*|(null)\n"
    "n1|big|(null)\n"
    "n2|debug*|fast,ib\n"
    "n2|big|fast,ib\n"
    "n3|debug*|fast\n"
    "n4|big|ib\n";

TEST(NodeFeaturesTest, CountsPlainExpressions) {
  EXPECT_EQ(CountMatchingNodes(kSinfo, "", "fast"), 2);
  EXPECT_EQ(CountMatchingNodes(kSinfo, "debug", "fast&ib"), 1);
  EXPECT_EQ(CountMatchingNodes(kSinfo, "big", "fast|ib"), 2);
  EXPECT_EQ(CountMatchingNodes(kSinfo, "big", "gpu"), 0);
  EXPECT_EQ(CountMatchingNodes(kSinfo, "nosuch", "fast"), 0);
}

TEST(NodeFeaturesTest, LeavesRicherExpressionsToSlurm) {
  for (const char* e : {"fast*2", "[fast|ib]", "(fast&ib)|gpu", "fast&ib|gpu", "a:2", "", "a&"}) {
    EXPECT_EQ(CountMatchingNodes(kSinfo, "", e), -1) << e;
  }
}

}  // namespace
}  // namespace xdeep::spank
