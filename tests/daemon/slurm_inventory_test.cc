// Partition shapes from `scontrol -o show partition` and `sinfo --json`
// output in the form Slurm 22.05.8 prints them.
#include "daemon/slurm_inventory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

namespace xdeep::daemon {
namespace {

constexpr const char* kPartitions =
    "PartitionName=debug AllowGroups=ALL Default=YES QoS=N/A DefaultTime=NONE "
    "MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 Nodes=n[1-3] State=UP TotalNodes=3\n"
    "PartitionName=big AllowGroups=ALL Default=NO MaxTime=1-00:00:00 Nodes=g[1-2] State=UP "
    "TRES=cpu=128,node=2,billing=128 TRESBillingWeights=CPU=0.5,GRES/gpu=8.0\n"
    "PartitionName=short Default=NO MaxTime=02:30:00 Nodes=c1 State=UP\n"
    "PartitionName=cpu Default=NO MaxTime=30 Nodes=c1 State=UP\n";

// One node as `sinfo --json` lists it (the fields xdeep reads, and a few it does not).
std::string Node(const std::string& name, const std::string& partitions, int cpus,
                 const std::string& gres, const std::string& state, const std::string& flags = "") {
  return R"({"name": ")" + name + R"(", "architecture": "x86_64", "cpus": )" +
         std::to_string(cpus) + R"(, "gres": ")" + gres + R"(", "gres_used": "gpu:0", "state": ")" +
         state + R"(", "state_flags": [)" + flags + R"(], "partitions": [)" + partitions +
         R"(], "real_memory": 4000})";
}

std::string Sinfo() {
  return R"({"meta": {"Slurm": {"release": "22.05.8"}}, "errors": [], "nodes": [)" +
         Node("n1", R"("debug")", 4, "gpu:4", "idle") + ", " +
         Node("n2", R"("debug")", 4, "gpu:4", "mixed") + ", " +
         Node("n3", R"("debug")", 4, "gpu:4", "idle", R"("DRAIN")") + ", " +
         Node("g1", R"("big")", 64, "gpu:h100:8(S:0-1)", "idle") + ", " +
         Node("g2", R"("big")", 64, "gpu:h100:6(S:0-1),shard:8", "allocated") + ", " +
         Node("g3", R"("big")", 64, "gpu:h100:8(S:0-1)", "down") + ", " +
         Node("g4", R"("big")", 64, "gpu:h100:8(S:0-1)", "idle", R"("FAIL")") + ", " +
         Node("c1", R"("short", "cpu")", 128, "", "idle") + "]}";
}

absl::StatusOr<PartitionShape> ShapeOf(std::string_view partition) {
  auto shape = FindPartition(ParsePartitions(kPartitions), partition);
  if (!shape.ok()) return shape.status();
  return AddSinfoNodes(Sinfo(), *shape);
}

TEST(SlurmInventoryTest, DefaultPartitionSkipsDrainedNodes) {
  auto s = ShapeOf("");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->partition, "debug");
  EXPECT_EQ(s->nodes, 2);
  EXPECT_EQ(s->gpus_per_node, 4);
  EXPECT_EQ(s->cpus_per_node, 4);
  EXPECT_EQ(s->max_time_s, 0) << "UNLIMITED";
}

TEST(SlurmInventoryTest, TypedGresSmallestNodeAndDownOrFailingSkipped) {
  auto s = ShapeOf("big");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 2);
  EXPECT_EQ(s->gpus_per_node, 6);
  EXPECT_EQ(s->cpus_per_node, 64);
  EXPECT_DOUBLE_EQ(s->max_time_s, 86400);
  EXPECT_DOUBLE_EQ(s->gpu_billing_weight, 8.0);
  EXPECT_DOUBLE_EQ(s->cpu_billing_weight, 0.5);
}

TEST(SlurmInventoryTest, NodeInSeveralPartitionsAndNoGpus) {
  auto s = ShapeOf("cpu");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 1);
  EXPECT_EQ(s->gpus_per_node, 0);
  EXPECT_DOUBLE_EQ(s->max_time_s, 30 * 60) << "a lone number is minutes";
  s = ShapeOf("short");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->max_time_s, 9000);
  EXPECT_EQ(s->gpu_billing_weight, 0);
}

TEST(SlurmInventoryTest, UnknownPartitionAndNoDefault) {
  auto s = ShapeOf("nope");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(s.status().message()).find("no partition 'nope'"), std::string::npos);
  auto none = FindPartition(ParsePartitions("PartitionName=a Default=NO\n"), "");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("no default partition"), std::string::npos);
}

TEST(SlurmInventoryTest, PartitionWithoutUsableNodes) {
  PartitionShape empty;
  empty.partition = "debug";
  auto s =
      AddSinfoNodes(R"({"nodes": [)" + Node("n3", R"("debug")", 4, "gpu:4", "down") + "]}", empty);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
}

TEST(SlurmInventoryTest, NotSinfoJson) {
  PartitionShape debug;
  debug.partition = "debug";
  for (const char* text : {"", "debug*|n1|4|gpu:4|idle", R"({"nodes": 3})", "[]"}) {
    auto s = AddSinfoNodes(text, debug);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  }
  // Fields of the wrong type are skipped, not trusted.
  auto s = AddSinfoNodes(
      R"({"nodes": [{"name": "n1", "partitions": ["debug"], "cpus": "four", "gres": 4,
                     "state": "idle", "state_flags": "DRAIN"}, 7]})",
      debug);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 1);
  EXPECT_EQ(s->cpus_per_node, 0);
  EXPECT_EQ(s->gpus_per_node, 0);
  // A state that is not text is no usable node; a name, partition list or
  // CPU count of another type throws nothing.
  s = AddSinfoNodes(
      R"({"nodes": [{"name": 5, "partitions": ["debug"], "cpus": 4, "state": 3},
                    {"name": "n2", "partitions": [1, "debug"], "cpus": -4, "state": "idle"},
                    {"name": "n3", "partitions": "debug", "state": "idle"}]})",
      debug);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->nodes, 1);
  EXPECT_EQ(s->cpus_per_node, 0);
}

TEST(SlurmInventoryTest, MalformedMaxTimeIsUnknown) {
  auto p = ParsePartitions("PartitionName=x MaxTime=soon\nPartitionName=y MaxTime=1:2:3:4\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].shape.max_time_s, 0);
  EXPECT_EQ(p[1].shape.max_time_s, 0);
  EXPECT_TRUE(ParsePartitions("no partitions here\n\n").empty());
}

// While one request refreshes a stale shape (on a loaded host the refresher
// may be the heavy lane's nice-19 thread), the others answer from the stale
// one at once; with nothing cached they wait for the one refresh.
TEST(SlurmInventoryTest, StaleShapeAnswersWhileAnotherRequestRefreshes) {
  std::atomic<int> fetches{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  SlurmInventory inventory(std::chrono::seconds(0), [&](const std::string& partition) {
    PartitionShape shape;
    shape.partition = partition;
    shape.nodes = ++fetches;
    if (shape.nodes == 2) released.wait();  // the second fetch hangs until released
    return absl::StatusOr<PartitionShape>(shape);
  });
  auto first = inventory.Shape("gpu");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->nodes, 1);
  // Stale at once (ttl 0): this request refreshes and hangs in the fetch.
  auto refresher = std::async(std::launch::async, [&] { return inventory.Shape("gpu"); });
  while (fetches.load() < 2) std::this_thread::yield();
  const auto t0 = std::chrono::steady_clock::now();
  auto meanwhile = inventory.Shape("gpu");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  ASSERT_TRUE(meanwhile.ok());
  EXPECT_EQ(meanwhile->nodes, 1) << "answered from the stale shape, not a second fetch";
  EXPECT_EQ(fetches.load(), 2);
  release.set_value();
  auto refreshed = refresher.get();
  ASSERT_TRUE(refreshed.ok());
  EXPECT_EQ(refreshed->nodes, 2);
}

}  // namespace
}  // namespace xdeep::daemon
