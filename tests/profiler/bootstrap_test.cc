// Tests of rank discovery and the TCP rendezvous (no GPU needed).
#include "profiler/bootstrap.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "gtest/gtest.h"

namespace xdeep::profiler {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// A port unlikely to collide between concurrent test runs on one machine.
int TestPort(int offset) { return 30000 + (getpid() * 7 + offset) % 20000; }

TEST(NodelistTest, FirstHost) {
  EXPECT_EQ(*FirstHostOfNodelist("node01"), "node01");
  EXPECT_EQ(*FirstHostOfNodelist("gpu[03-05,09],cpu1"), "gpu03");
  EXPECT_EQ(*FirstHostOfNodelist("a1,b[1-2]"), "a1");
  EXPECT_EQ(*FirstHostOfNodelist("n[7,9]-ib"), "n7-ib");
  EXPECT_FALSE(FirstHostOfNodelist("").ok());
  EXPECT_FALSE(FirstHostOfNodelist("n[1-2").ok());
  EXPECT_EQ(FirstTasksPerNode("4(x2),3"), 4);
  EXPECT_EQ(FirstTasksPerNode("8"), 8);
}

TEST(DistEnvTest, SingleProcessWithoutVariables) {
  absl::StatusOr<DistEnv> e = DistEnvFromEnvironment(Env({}));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->world_size, 1);
  EXPECT_EQ(e->source, "single");
}

TEST(DistEnvTest, FromSlurm) {
  absl::StatusOr<DistEnv> e = DistEnvFromEnvironment(Env({{"SLURM_PROCID", "5"},
                                                          {"SLURM_NTASKS", "8"},
                                                          {"SLURM_LOCALID", "1"},
                                                          {"SLURM_STEP_NUM_NODES", "2"},
                                                          {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
                                                          {"SLURM_STEP_NODELIST", "gpu[12-13]"},
                                                          {"SLURM_JOB_ID", "1234"},
                                                          {"SLURM_STEP_ID", "0"}}));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->source, "slurm");
  EXPECT_EQ(e->rank, 5);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->local_size, 4);
  EXPECT_EQ(e->nodes, 2);
  EXPECT_EQ(e->master_addr, "gpu12");
  // A Slurm NodeName: peers ask scontrol for its NodeAddr if it does not resolve.
  EXPECT_TRUE(e->master_is_slurm_node);
  EXPECT_GE(e->master_port, 20000);
  EXPECT_LT(e->master_port, 40000);
}

TEST(DistEnvTest, MasterAddrOverridesTheSlurmNode) {
  absl::StatusOr<DistEnv> e = DistEnvFromEnvironment(Env({{"SLURM_PROCID", "0"},
                                                          {"SLURM_NTASKS", "2"},
                                                          {"SLURM_STEP_NODELIST", "n[1-2]"},
                                                          {"MASTER_ADDR", "10.0.0.7"}}));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->master_addr, "10.0.0.7");
  EXPECT_FALSE(e->master_is_slurm_node);
}

TEST(DistEnvTest, ExplicitVariablesWinAndAreValidated) {
  absl::StatusOr<DistEnv> e = DistEnvFromEnvironment(Env({{"RANK", "1"},
                                                          {"WORLD_SIZE", "2"},
                                                          {"MASTER_ADDR", "10.0.0.1"},
                                                          {"MASTER_PORT", "29999"},
                                                          {"SLURM_PROCID", "0"},
                                                          {"SLURM_NTASKS", "1"}}));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->source, "env");
  EXPECT_EQ(e->rank, 1);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->master_addr, "10.0.0.1");
  EXPECT_EQ(e->master_port, 29999);
  EXPECT_FALSE(DistEnvFromEnvironment(Env({{"RANK", "2"}, {"WORLD_SIZE", "2"}})).ok());
  EXPECT_FALSE(DistEnvFromEnvironment(Env({{"RANK", "x"}, {"WORLD_SIZE", "2"}})).ok());
  EXPECT_FALSE(
      DistEnvFromEnvironment(Env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}))
          .ok());
}

DistEnv Local(int rank, int world, int port) {
  DistEnv e;
  e.rank = rank;
  e.world_size = world;
  e.master_addr = "localhost";
  e.master_port = port;
  return e;
}

TEST(RendezvousTest, RootBlobReachesEveryRankAcrossProcesses) {
  const int port = TestPort(1);
  const std::string blob(128, '\0');
  std::string payload = blob;
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 31 + 7);
  // Rank 1 in a child process starts first: it must retry until rank 0 listens.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    absl::StatusOr<std::string> got = ExchangeRootBlob(Local(1, 3, port), "", absl::Seconds(10));
    _exit(got.ok() && *got == payload ? 0 : 1);
  }
  std::thread rank2([&] {
    absl::StatusOr<std::string> got = ExchangeRootBlob(Local(2, 3, port), "", absl::Seconds(10));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, payload);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  absl::StatusOr<std::string> root =
      ExchangeRootBlob(Local(0, 3, port), payload, absl::Seconds(10));
  rank2.join();
  ASSERT_TRUE(root.ok()) << root.status();
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child rank did not receive the blob";
}

TEST(RendezvousTest, MissingRankEndsWithinTimeoutNamingIt) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> r =
      ExchangeRootBlob(Local(0, 3, TestPort(2)), "id", absl::Milliseconds(700));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("1,2"), std::string::npos) << r.status();
  EXPECT_LT(s, 2.0);
}

TEST(RendezvousTest, UnreachableRootEndsWithinTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> r =
      ExchangeRootBlob(Local(1, 2, TestPort(3)), "", absl::Milliseconds(700));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(s, 2.5);
}

TEST(RendezvousTest, WorldSizeMismatchIsRejected) {
  const int port = TestPort(4);
  std::thread peer([&] { (void)ExchangeRootBlob(Local(1, 3, port), "", absl::Seconds(3)); });
  absl::StatusOr<std::string> r = ExchangeRootBlob(Local(0, 2, port), "id", absl::Seconds(3));
  peer.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace xdeep::profiler
