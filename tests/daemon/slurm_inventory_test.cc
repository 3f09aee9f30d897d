// Partition shapes from sinfo output.
#include "daemon/slurm_inventory.h"

#include <gtest/gtest.h>

namespace xdeep::daemon {
namespace {

constexpr const char* kSinfo =
    "debug*|n1|4|gpu:4|idle\n"
    "debug*|n2|4|gpu:4|mix\n"
    "debug*|n3|4|gpu:4|drain\n"
    "big|g1|64|gpu:h100:8(S:0-1)|idle\n"
    "big|g2|64|gpu:h100:6(S:0-1),shard:8|alloc\n"
    "cpu|c1|128|(null)|idle\n";

TEST(SlurmInventoryTest, DefaultPartitionSkipsDrainedNodes) {
  auto s = ParseSinfo(kSinfo, "");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->partition, "debug");
  EXPECT_EQ(s->nodes, 2);
  EXPECT_EQ(s->gpus_per_node, 4);
  EXPECT_EQ(s->cpus_per_node, 4);
}

TEST(SlurmInventoryTest, TypedGresAndSmallestNode) {
  auto s = ParseSinfo(kSinfo, "big");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 2);
  EXPECT_EQ(s->gpus_per_node, 6);
}

TEST(SlurmInventoryTest, NoGpus) {
  auto s = ParseSinfo(kSinfo, "cpu");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->gpus_per_node, 0);
}

TEST(SlurmInventoryTest, UnknownPartition) {
  auto s = ParseSinfo(kSinfo, "nope");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("no partition 'nope'"), std::string::npos);
}

TEST(SlurmInventoryTest, PartitionMaxTime) {
  PartitionShape shape;
  ParseMaxTime("PartitionName=short AllowGroups=ALL DefaultTime=NONE MaxTime=1-00:00:00 "
               "MinNodes=0 State=UP",
               &shape);
  EXPECT_DOUBLE_EQ(shape.max_time_s, 86400);
  ParseMaxTime("PartitionName=debug MaxTime=UNLIMITED MinNodes=0", &shape);
  EXPECT_DOUBLE_EQ(shape.max_time_s, 0);
  ParseMaxTime("PartitionName=s MaxTime=02:30:00\n", &shape);
  EXPECT_DOUBLE_EQ(shape.max_time_s, 9000);
  EXPECT_EQ(SlurmDurationSeconds("90"), 5400) << "a lone number is minutes";
  EXPECT_EQ(SlurmDurationSeconds("30:00"), 1800);
  EXPECT_EQ(SlurmDurationSeconds("2-12"), 2.5 * 86400);
  EXPECT_EQ(SlurmDurationSeconds("INFINITE"), 0);
  EXPECT_FALSE(SlurmDurationSeconds("soon").has_value());
  EXPECT_FALSE(SlurmDurationSeconds("1:2:3:4").has_value());
}

}  // namespace
}  // namespace xdeep::daemon
