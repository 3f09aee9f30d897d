// The remote context of a tuned step: the private directory and decision
// file, the rendezvous variables, and the report sent from a child process.
#include "spank_plugin/step_runtime.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace xdeep::spank {

using client::AppLauncher;
using client::DecisionVariables;
using client::LayoutRow;
using client::ParseDecisionFile;
using client::RunDecision;
using client::RunDecisionOf;
using client::TuneAnswer;
namespace {

class StepRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = ::testing::TempDir() + "/steprt-" + std::to_string(getpid());
    std::filesystem::create_directories(base_);
    TuneAnswer a;
    a.decision_id = "dec42";
    a.best = LayoutRow{.strategy = "dp4",
                       .nodes = 2,
                       .gpus_per_node = 2,
                       .tasks = 4,
                       .dp = 4,
                       .micro_batch = 2,
                       .grad_accumulation = 2,
                       .global_batch = 16};
    for (auto& [k, v] : DecisionVariables(RunDecisionOf(a, AppLauncher::kSrun))) job_env_[k] = v;
    job_env_["XDEEP_TUNED"] = "dec42";
    job_env_["SLURM_STEP_NODELIST"] = "localhost";
    config_.job_tmp = base_;
    config_.timeout_ms = 2000;
  }
  void TearDown() override { std::filesystem::remove_all(base_); }

  StepRuntime Make() {
    return StepRuntime(
        config_,
        StepHost{.getenv = [this](const char* n) { return job_env_.count(n) ? job_env_[n] : ""; },
                 .setenv =
                     [this](const std::string& n, const std::string& v) {
                       set_[n] = v;
                       return true;
                     },
                 .error = [this](const std::string& line) { errors_.push_back(line); },
                 .reporter = reporter_});
  }

  StepIdentity Id(int node) {
    return StepIdentity{.job_id = 7,
                        .step_id = 0,
                        .uid = getuid(),
                        .gid = getgid(),
                        .node_id = node,
                        .nnodes = 2,
                        .ntasks = 4,
                        .tasks_on_node = 2};
  }

  // Stands in for xdeep-step-report: records its arguments, then cleans up as it does.
  void FakeReporter() {
    reporter_ = base_ + "/fake-reporter.sh";
    std::ofstream(reporter_) << "#!/bin/sh\necho \"$@\" > " << base_
                             << "/report\nfor a; do case $a in --directory=*) rm -rf "
                                "\"${a#--directory=}\";; esac; done\n";
    std::filesystem::permissions(reporter_, std::filesystem::perms::owner_all);
  }

  std::string base_, reporter_;
  PluginConfig config_;
  std::map<std::string, std::string> job_env_, set_;
  std::vector<std::string> errors_;
};

TEST_F(StepRuntimeTest, PrivateDirectoryDecisionFileRendezvousAndReport) {
  FakeReporter();
  StepRuntime step = Make();
  step.Begin(Id(0));
  ASSERT_TRUE(step.active()) << (errors_.empty() ? "" : errors_[0]);
  const std::string dir = set_["XDEEP_JOB_TMP"];
  EXPECT_EQ(dir.rfind(base_ + "/xdeep-7.0-", 0), 0u) << dir;
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, getuid());
  std::ifstream file(set_["XDEEP_DECISION_FILE"]);
  std::stringstream text;
  text << file.rdbuf();
  RunDecision d;
  std::string error;
  ASSERT_TRUE(ParseDecisionFile(text.str(), &d, &error)) << error;
  EXPECT_EQ(d.decision_id, "dec42");
  EXPECT_EQ(set_["MASTER_ADDR"], "localhost");
  EXPECT_EQ(set_["XDEEP_NODE_RANK"], "0");

  step.TaskEnvironment(1, 1);
  EXPECT_EQ(set_["RANK"], "1");
  EXPECT_EQ(set_["WORLD_SIZE"], "4");
  step.TaskExited(0);
  EXPECT_TRUE(std::filesystem::exists(dir)) << "one of the node's two tasks still runs";
  step.TaskExited(3 << 8);  // exit code 3: the node's last task reports
  EXPECT_FALSE(step.active());
  step.End();  // slurmstepd's exit hook: already done
  EXPECT_TRUE(errors_.empty()) << errors_[0];
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the private directory is removed";
  std::ifstream report(base_ + "/report");
  std::string line;
  std::getline(report, line);
  for (const std::string& want :
       std::vector<std::string>{"--decision=dec42", "--job=7", "--exit-code=3", "--node=0",
                                "--directory=" + dir, "--daemon=" + config_.daemon}) {
    EXPECT_NE(line.find(want), std::string::npos) << want << " in " << line;
  }
}

TEST(StepTimesTest, OnlyPositiveNumbersAndTheLastOnesPastTheLimit) {
  const std::string path = ::testing::TempDir() + "/steps-" + std::to_string(getpid());
  std::ofstream(path) << "0.5\nnan\n-1\nfast\n\n0.25\ninf\n0.75 trailing\n1e-3\n";
  EXPECT_EQ(ReadStepTimes(path), (std::vector<double>{0.5, 0.25, 0.75, 0.001}));
  EXPECT_EQ(ReadStepTimes(path, 2), (std::vector<double>{0.75, 0.001}));
  EXPECT_TRUE(ReadStepTimes(path + ".missing").empty());
  std::filesystem::remove(path);
}

TEST_F(StepRuntimeTest, TheRealReporterCleansUpAndSaysWhenTheDaemonIsDown) {
  reporter_ = XDEEP_STEP_REPORT;
  config_.daemon = "unix://" + base_ + "/no-daemon.sock";
  config_.timeout_ms = 300;
  StepRuntime step = Make();
  step.Begin(Id(0));
  ASSERT_TRUE(step.active());
  const std::string dir = step.directory();
  std::ofstream(dir + "/step_times") << "0.5\n";
  step.End();
  EXPECT_FALSE(std::filesystem::exists(dir));
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("did not reach the daemon"), std::string::npos) << errors_[0];
  EXPECT_NE(errors_[0].find("exited 3"), std::string::npos) << errors_[0];
}

TEST_F(StepRuntimeTest, UntunedStepsAreLeftAlone) {
  job_env_.erase("XDEEP_TUNED");
  StepRuntime step = Make();
  step.Begin(Id(0));
  EXPECT_FALSE(step.active());
  EXPECT_TRUE(set_.empty());
}

TEST_F(StepRuntimeTest, BrokenDecisionVariablesAreOneErrorAndNoDirectory) {
  job_env_["XDEEP_DP"] = "3";
  StepRuntime step = Make();
  step.Begin(Id(0));
  EXPECT_FALSE(step.active());
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("dp x tp x pp"), std::string::npos) << errors_[0];
  EXPECT_TRUE(std::filesystem::is_empty(base_));
}

TEST_F(StepRuntimeTest, OtherNodesReportOnlyWhatTheyAdd) {
  reporter_ = XDEEP_STEP_REPORT;
  config_.daemon = "unix://" + base_ + "/no-daemon.sock";
  StepRuntime step = Make();
  step.Begin(Id(1));
  ASSERT_TRUE(step.active());
  const std::string dir = step.directory();
  step.End();
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_TRUE(errors_.empty()) << "node 1 had no step times: no call, so no failure";
}

}  // namespace
}  // namespace xdeep::spank
