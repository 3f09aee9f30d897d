// Plugin behaviour with a fake daemon client and host: what is re-executed,
// exported, printed or refused in each mode and failure.
#include "spank_plugin/plugin.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

namespace xdeep::spank {

using client::ClientError;
using client::DaemonClient;
using client::ProgressCallback;
using client::ReportQuery;
using client::TuneAnswer;
using client::TuneQuery;
namespace {

class FakeClient final : public DaemonClient {
 public:
  bool ok = true;
  ClientError failure;
  int tune_calls = 0;
  TuneQuery last;
  int segments = 1;  // the decision's checkpointed segments, within its query's time limit
  std::string server_version = XDEEP_VERSION;

  bool Tune(const TuneQuery& q, std::chrono::steady_clock::time_point, const ProgressCallback&,
            TuneAnswer* a, ClientError* e) override {
    ++tune_calls;
    last = q;
    if (!ok) {
      *e = failure;
      return false;
    }
    a->decision_id = "abc123";
    a->workload_name = "w";
    a->best.strategy = "dp4";
    a->best.nodes = 2;
    a->best.gpus_per_node = 2;
    a->best.tasks = 4;
    a->best.dp = 4;
    a->best.micro_batch = 8;
    a->best.global_batch = 32;
    a->admission_token = "0123abcd";
    a->segments = segments;
    a->time_limit_s = q.time_limit_s;
    a->server_version = server_version;
    return true;
  }
  bool Report(const ReportQuery& q, std::chrono::steady_clock::time_point deadline,
              ClientError*) override {
    deadlines.push_back(deadline);
    reports.push_back(q);
    return true;
  }
  std::vector<std::chrono::steady_clock::time_point> deadlines;
  std::vector<ReportQuery> reports;
};

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"XDEEP_TUNED", "XDEEP_REEXEC_PID", "XDEEP_NODES", "SLURM_JOB_ID",
                          "XDEEP_TUNE", "XDEEP_WORKLOAD", "XDEEP_BUDGET", "XDEEP_DEADLINE",
                          "XDEEP_OBJECTIVE", "XDEEP_ADMISSION", "XDEEP_WAIT_LEFT_MS"}) {
      unsetenv(v);
    }
    setenv("XDEEP_REPORT_DIR", ::testing::TempDir().c_str(), 1);
    host_.info = [this](const std::string& l) { infos_.push_back(l); };
    host_.error = [this](const std::string& l) { errors_.push_back(l); };
    host_.reexec = [this](const std::vector<std::string>& argv) {
      reexec_ = argv;
      const char* guard = getenv("XDEEP_TUNED");
      guard_at_exec_ = guard ? guard : "";
      const char* token = getenv("XDEEP_ADMISSION");
      token_at_exec_ = token ? token : "";
    };
    host_.set_job_env = [this](const std::string& name, const std::string& value) {
      job_env_[name] = value;
      return true;
    };
    host_.exit_without_launch = [this] { exited_ = true; };
    host_.load_client = [this](const std::string&, std::string*) {
      auto c = std::make_unique<FakeClient>();
      c->ok = client_ok_;
      c->failure = failure_;
      c->segments = segments_;
      c->server_version = server_version_;
      client_ = c.get();
      return c;
    };
  }

  int Launch(std::vector<std::string> plugstack, std::vector<std::pair<OptionId, const char*>> opts,
             std::vector<std::string> argv = {"srun", "--xdeep-tune", "hostname"}, int first = 2,
             Launcher launcher = Launcher::kSrun) {
    // Kept alive: it owns the fake client the tests inspect.
    plugin_ = std::make_unique<Plugin>(host_);
    if (plugin_->Init(plugstack) != 0) return -2;
    for (auto [id, v] : opts)
      if (plugin_->OnOption(id, v) != 0) return -3;
    return plugin_->InitPostOpt(
        launcher, [argv] { return argv; }, first);
  }

  Host host_;
  std::unique_ptr<Plugin> plugin_;
  bool client_ok_ = true;
  int segments_ = 1;
  std::string server_version_ = XDEEP_VERSION;
  ClientError failure_;
  FakeClient* client_ = nullptr;
  std::vector<std::string> infos_, errors_, reexec_;
  std::string guard_at_exec_, token_at_exec_;
  std::map<std::string, std::string> job_env_;
  bool exited_ = false;
};

TEST_F(PluginTest, AutoReexecutesWithTheDecision) {
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), 0);
  std::vector<std::string> want = {"srun",       "--xdeep-tune",      "--nodes=2",
                                   "--ntasks=4", "--gpus-per-node=2", "--ntasks-per-node=2",
                                   "hostname"};
  EXPECT_EQ(reexec_, want);
  EXPECT_STREQ(getenv("XDEEP_NODES"), "2");
  EXPECT_EQ(guard_at_exec_, "abc123");
  // The fake execv "failed" (returned): the launch runs untuned, and says so.
  EXPECT_EQ(getenv("XDEEP_TUNED"), nullptr);
  EXPECT_NE(infos_.back().find("could not re-execute"), std::string::npos);
  EXPECT_EQ(std::to_string(getpid()), getenv("XDEEP_REEXEC_PID"));
  EXPECT_EQ(client_->last.workload_preset, "gpt-125m");
  EXPECT_EQ(client_->last.argv, std::vector<std::string>{"hostname"});
  EXPECT_TRUE(errors_.empty());
}

TEST_F(PluginTest, ADaemonOfAnotherVersionIsOneLine) {
  for (const std::string theirs : {"0.0.9", ""}) {
    infos_.clear();
    server_version_ = theirs;
    ASSERT_EQ(Launch({"daemon=unix:///run/x.sock"},
                     {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), 0);
    int skew_lines = 0;
    for (const std::string& line : infos_) {
      if (line.find("version skew") == std::string::npos) continue;
      ++skew_lines;
      EXPECT_NE(line.find(std::string("this plugin is ") + XDEEP_VERSION), std::string::npos);
      EXPECT_NE(line.find("xdeepd at unix:///run/x.sock is " +
                          (theirs.empty() ? std::string("older than") : theirs)),
                std::string::npos)
          << line;
    }
    EXPECT_EQ(skew_lines, 1) << theirs;
    EXPECT_FALSE(reexec_.empty()) << "a skew warns; the launch is still tuned";
    reexec_.clear();
    unsetenv("XDEEP_REEXEC_PID");
  }
  infos_.clear();
  server_version_ = XDEEP_VERSION;
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), 0);
  for (const std::string& line : infos_) EXPECT_EQ(line.find("version skew"), std::string::npos);
}

TEST_F(PluginTest, AlreadyTunedDoesNotAskAgain) {
  setenv("XDEEP_TUNED", "previous", 1);
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), 0);
  EXPECT_EQ(client_, nullptr);
  EXPECT_TRUE(reexec_.empty());
}

TEST_F(PluginTest, UnavailableFailsOpenWithOneWarning) {
  client_ok_ = false;
  failure_ = {ClientError::kUnavailable, "no answer in time"};
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), 0);
  EXPECT_TRUE(reexec_.empty());
  ASSERT_EQ(infos_.size(), 1u);
  EXPECT_NE(infos_[0].find("running the launch unchanged"), std::string::npos);
  EXPECT_TRUE(errors_.empty());
}

TEST_F(PluginTest, UnavailableFailClosedRefuses) {
  client_ok_ = false;
  failure_ = {ClientError::kUnavailable, "connection refused"};
  EXPECT_EQ(Launch({"fail=closed"}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), -1);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("refused"), std::string::npos);
}

TEST_F(PluginTest, DaemonRefusalStopsTheLaunch) {
  client_ok_ = false;
  failure_ = {ClientError::kRefused, "w.toml:3: layers must be an integer; write layers = 12"};
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), -1);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("w.toml:3"), std::string::npos);
}

TEST_F(PluginTest, ExplainDoesNotLaunch) {
  ASSERT_EQ(Launch({}, {{kOptTune, "explain"}, {kOptWorkload, "gpt-125m"}}), 0);
  EXPECT_TRUE(exited_);
  EXPECT_TRUE(reexec_.empty());
  EXPECT_GE(infos_.size(), 3u);
}

TEST_F(PluginTest, AdviseRunsUnchanged) {
  ASSERT_EQ(Launch({}, {{kOptTune, "advise"}, {kOptWorkload, "gpt-125m"}}), 0);
  EXPECT_FALSE(exited_);
  EXPECT_TRUE(reexec_.empty());
  EXPECT_EQ(getenv("XDEEP_NODES"), nullptr);
}

TEST_F(PluginTest, OffAndDefaultOffNeverAsk) {
  ASSERT_EQ(Launch({}, {{kOptTune, "off"}, {kOptWorkload, "gpt-125m"}}), 0);
  ASSERT_EQ(Launch({}, {}), 0);
  EXPECT_EQ(client_, nullptr);
}

TEST_F(PluginTest, SiteDefaultWithoutWorkloadSkipsQuietly) {
  ASSERT_EQ(Launch({"default=on"}, {}, {"srun", "hostname"}, 1), 0);
  EXPECT_EQ(client_, nullptr);
  EXPECT_TRUE(infos_.empty());
}

TEST_F(PluginTest, ExplicitRequestWithoutWorkloadIsRefused) {
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}}), -1);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("--xdeep-workload"), std::string::npos);
}

TEST_F(PluginTest, BadPlugstackStopsAtInit) {
  EXPECT_EQ(Launch({"fail=sometimes"}, {}), -2);
  EXPECT_EQ(errors_.size(), 1u);
}

TEST_F(PluginTest, ExitWithoutJobReleasesTheReservation) {
  setenv("XDEEP_TUNED", "abc123", 1);
  setenv("XDEEP_REEXEC_PID", std::to_string(getpid()).c_str(), 1);
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), 0);
  plugin_->LocalExit(0);
  plugin_->LocalExit(0);  // the atexit fallback after the SPANK hook: no second report
  ASSERT_EQ(client_->reports.size(), 1u);
  EXPECT_TRUE(client_->reports[0].launch_failed);
  EXPECT_TRUE(client_->reports[0].final);
  EXPECT_EQ(client_->reports[0].decision_id, "abc123");
}

TEST_F(PluginTest, StepTimesAreReportedFromTheComputeNodeNotBySrun) {
  setenv("XDEEP_TUNED", "abc123", 1);
  setenv("XDEEP_REEXEC_PID", "1", 1);  // another process re-executed; we inherited
  ASSERT_EQ(Launch({}, {}), 0);
  plugin_->LocalExit(0);
  EXPECT_EQ(client_, nullptr) << "a failed inner step does not release the job's money";
  const std::string steps = ::testing::TempDir() + "/inner.steps";
  std::ofstream(steps) << "0.5\n0.25\n";
  setenv("XDEEP_REPORT", steps.c_str(), 1);
  ASSERT_EQ(Launch({}, {}), 0);
  plugin_->LocalExit(42);
  unsetenv("XDEEP_REPORT");
  EXPECT_EQ(client_, nullptr) << "the step's slurmstepd reports (step_runtime), srun does not";
}

TEST_F(PluginTest, AdmissionTokenReachesTheJobsSpankEnvironmentOnly) {
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}}), 0);
  EXPECT_EQ(token_at_exec_, "0123abcd") << "the token crosses the re-exec";
  EXPECT_EQ(getenv("XDEEP_ADMISSION"), nullptr) << "a failed re-exec leaves no token behind";
  EXPECT_TRUE(job_env_.empty());
  // The re-executed launch: same pid, guard and token set.
  setenv("XDEEP_TUNED", "abc123", 1);
  setenv("XDEEP_REEXEC_PID", std::to_string(getpid()).c_str(), 1);
  setenv("XDEEP_ADMISSION", "0123abcd", 1);
  ASSERT_EQ(Launch({}, {}), 0);
  EXPECT_EQ(job_env_["XDEEP_ADMISSION"], "0123abcd");
  EXPECT_EQ(getenv("XDEEP_ADMISSION"), nullptr) << "the job's own environment never holds it";
  // A process that merely inherited the variables passes nothing on.
  job_env_.clear();
  setenv("XDEEP_REEXEC_PID", "1", 1);
  setenv("XDEEP_ADMISSION", "0123abcd", 1);
  ASSERT_EQ(Launch({}, {}), 0);
  EXPECT_TRUE(job_env_.empty());
}

TEST_F(PluginTest, ReportGetsWhatTheDecisionLeftOfTimeout) {
  setenv("XDEEP_TUNED", "abc123", 1);
  setenv("XDEEP_REEXEC_PID", std::to_string(getpid()).c_str(), 1);
  setenv("XDEEP_WAIT_LEFT_MS", "40", 1);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(Launch({"timeout_ms=3000"}, {}), 0);
  EXPECT_EQ(getenv("XDEEP_WAIT_LEFT_MS"), nullptr);
  plugin_->LocalExit(0);  // the step never started: srun frees the hold
  ASSERT_EQ(client_->deadlines.size(), 1u) << "no Bind: the daemon binds the job from a report";
  for (const auto& d : client_->deadlines) {
    EXPECT_LE(d - start, std::chrono::milliseconds(1000)) << "not a fresh timeout_ms";
  }
}

TEST_F(PluginTest, UserBoundsAndAllocationReachTheDaemon) {
  setenv("SLURM_JOB_ID", "77", 1);
  setenv("SLURM_JOB_NUM_NODES", "2", 1);
  setenv("SLURM_GPUS_PER_NODE", "4", 1);
  setenv("SLURM_JOB_CPUS_PER_NODE", "3(x2)", 1);
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "-N", "1", "-n3", "--xdeep-tune", "hostname"}, 5),
            0);
  EXPECT_EQ(client_->last.max_nodes, 1);
  EXPECT_EQ(client_->last.max_tasks, 3);
  EXPECT_EQ(client_->last.allocation_job_id, 77u);
  EXPECT_EQ(client_->last.allocation_nodes, 2);
  // The GPUs it holds, whatever its CPUs: a step with more tasks than CPUs
  // runs with --overcommit.
  EXPECT_EQ(client_->last.allocation_gpus_per_node, 4);
  EXPECT_EQ(client_->last.allocation_cpus_per_node, 3);
  for (const char* v :
       {"SLURM_JOB_ID", "SLURM_JOB_NUM_NODES", "SLURM_GPUS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"}) {
    unsetenv(v);
  }
}

TEST_F(PluginTest, AllocationsOwnTaskCountBoundsNoStep) {
  // salloc -N1 sets SLURM_NTASKS=1 for the srun inside: that describes the
  // allocation, not this step, so it bounds nothing (the rewrite overrides it).
  setenv("SLURM_JOB_ID", "78", 1);
  setenv("SLURM_JOB_NUM_NODES", "1", 1);
  setenv("SLURM_NTASKS", "1", 1);
  setenv("SLURM_GPUS_PER_NODE", "2", 1);
  setenv("SLURM_JOB_CPUS_PER_NODE", "1", 1);
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--xdeep-tune", "hostname"}, 2),
            0);
  EXPECT_EQ(client_->last.max_tasks, 0);
  EXPECT_EQ(client_->last.max_nodes, 0);
  EXPECT_EQ(client_->last.allocation_gpus_per_node, 2);
  EXPECT_NE(std::find(reexec_.begin(), reexec_.end(), "--overcommit"), reexec_.end())
      << "2 tasks per node on 1 allocated CPU";
  EXPECT_NE(std::find(reexec_.begin(), reexec_.end(), "--ntasks=4"), reexec_.end());
  for (const char* v : {"SLURM_JOB_ID", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS",
                        "SLURM_GPUS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"}) {
    unsetenv(v);
  }
}

TEST_F(PluginTest, AdviseNeverStopsALaunch) {
  client_ok_ = false;
  failure_ = {ClientError::kRefused, "no configuration of 'w' fits on up to 1 node(s)"};
  EXPECT_EQ(Launch({"fail=closed"}, {{kOptTune, "advise"}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--xdeep-tune=advise", "hostname"}, 2),
            0);
  EXPECT_TRUE(errors_.empty());
  ASSERT_FALSE(infos_.empty());
  EXPECT_NE(infos_.back().find("advise mode runs the launch unchanged"), std::string::npos)
      << infos_.back();
  failure_ = {ClientError::kUnavailable, "connection refused"};
  EXPECT_EQ(Launch({"fail=closed"}, {{kOptTune, "advise"}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--xdeep-tune=advise", "hostname"}, 2),
            0)
      << "fail=closed refuses tuned launches, never advised ones";
  EXPECT_TRUE(errors_.empty());
  EXPECT_TRUE(reexec_.empty());
}

TEST_F(PluginTest, SiteDefaultKeepsTheUsersLayoutAndAdvises) {
  ASSERT_EQ(Launch({"default=on"}, {{kOptWorkload, "gpt-125m"}}, {"srun", "-n2", "hostname"}, 2),
            0);
  ASSERT_NE(client_, nullptr);
  EXPECT_EQ(client_->last.mode, "advise");
  EXPECT_TRUE(client_->last.implicit);
  EXPECT_TRUE(reexec_.empty()) << "the launch runs as written";
  ASSERT_FALSE(infos_.empty());
  EXPECT_NE(infos_.back().find("your -n 2 kept as given"), std::string::npos) << infos_.back();
  // Without a layout of their own, the site's default tunes it.
  ASSERT_EQ(Launch({"default=on"}, {{kOptWorkload, "gpt-125m"}}, {"srun", "hostname"}, 1), 0);
  EXPECT_EQ(client_->last.mode, "auto");
  EXPECT_FALSE(reexec_.empty());
  // With --xdeep-tune, -n is an upper bound and the decision replaces it.
  reexec_.clear();
  ASSERT_EQ(Launch({"default=on"}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "-n8", "--xdeep-tune", "hostname"}, 3),
            0);
  EXPECT_EQ(client_->last.mode, "auto");
  EXPECT_EQ(client_->last.max_tasks, 8);
  EXPECT_NE(std::find(reexec_.begin(), reexec_.end(), "--ntasks=4"), reexec_.end());
}

TEST_F(PluginTest, TimeLimitAndSegmentsReachTheLaunch) {
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"sbatch", "-t", "1-00:00:00", "--xdeep-tune", "--wrap=true"}, 5,
                   Launcher::kSbatch),
            0);
  EXPECT_DOUBLE_EQ(client_->last.time_limit_s, 86400);
  EXPECT_NE(std::find(reexec_.begin(), reexec_.end(), "--time=1440"), reexec_.end());
  EXPECT_EQ(std::find(reexec_.begin(), reexec_.end(), "--requeue"), reexec_.end())
      << "one job needs no requeue";
  EXPECT_EQ(std::find(reexec_.begin(), reexec_.end(), "-t"), reexec_.end()) << "replaced";
  std::map<std::string, std::string> env;
  for (const char* v : {"XDEEP_TIME_LIMIT_S", "XDEEP_SEGMENTS"})
    env[v] = getenv(v) ? getenv(v) : "";
  EXPECT_EQ(env["XDEEP_TIME_LIMIT_S"], "86400");
  EXPECT_EQ(env["XDEEP_SEGMENTS"], "1");

  segments_ = 3;
  reexec_.clear();
  unsetenv("XDEEP_TUNED");
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"sbatch", "--time=90", "--xdeep-tune", "--wrap=true"}, 4, Launcher::kSbatch),
            0);
  EXPECT_NE(std::find(reexec_.begin(), reexec_.end(), "--time=90"), reexec_.end());
  EXPECT_NE(std::find(reexec_.begin(), reexec_.end(), "--requeue"), reexec_.end());
  EXPECT_STREQ(getenv("XDEEP_SEGMENTS"), "3");
  EXPECT_STREQ(getenv("XDEEP_TIME_LIMIT_S"), "5400");

  // A time limit Slurm would not take stops the tuned launch with a fix.
  unsetenv("XDEEP_TUNED");
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--time=soon", "--xdeep-tune", "hostname"}, 3),
            -1);
  ASSERT_FALSE(errors_.empty());
  EXPECT_NE(errors_.back().find("is not a Slurm time limit"), std::string::npos) << errors_.back();
}

TEST_F(PluginTest, ModeWordWhereTheProgramShouldBeLaunchesNothing) {
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--xdeep-tune", "explain", "prog"}, 2),
            -1);
  EXPECT_EQ(client_, nullptr) << "nothing asked, nothing charged";
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("did you mean --xdeep-tune=explain?"), std::string::npos) << errors_[0];
  // With "=" the same word is a mode, and "explain" as a later argument is fine.
  ASSERT_EQ(Launch({}, {{kOptTune, "explain"}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--xdeep-tune=explain", "prog", "explain"}, 2),
            0);
  EXPECT_TRUE(exited_);
}

TEST_F(PluginTest, StaleEnvironmentNeverBreaksAnUntunedLaunch) {
  setenv("XDEEP_BUDGET", "lots", 1);
  setenv("XDEEP_DEADLINE", "-3", 1);
  setenv("XDEEP_OBJECTIVE", "fastest", 1);
  setenv("XDEEP_WORKLOAD", "", 1);
  EXPECT_EQ(Launch({}, {{kOptTune, "off"}}), 0);
  EXPECT_EQ(Launch({}, {}, {"srun", "hostname"}, 1), 0);
  EXPECT_TRUE(errors_.empty());
  // The site's default tunes, but the user never asked: one warning, launch unchanged.
  EXPECT_EQ(Launch({"default=on"}, {}, {"srun", "hostname"}, 1), 0);
  EXPECT_TRUE(errors_.empty());
  EXPECT_EQ(client_, nullptr);
  ASSERT_EQ(infos_.size(), 1u);
  EXPECT_NE(infos_[0].find("XDEEP_WORKLOAD is empty"), std::string::npos) << infos_[0];
  // Asked for: refused with one line naming the variable.
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}}), -1);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("XDEEP_WORKLOAD is empty"), std::string::npos) << errors_[0];
  unsetenv("XDEEP_WORKLOAD");
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}}), -1);
  EXPECT_NE(errors_.back().find("XDEEP_BUDGET=lots"), std::string::npos) << errors_.back();
}

TEST_F(PluginTest, EmptyXdeepTuneDoesNotTurnTuningOn) {
  setenv("XDEEP_TUNE", "", 1);
  setenv("XDEEP_WORKLOAD", "gpt-125m", 1);
  EXPECT_EQ(Launch({}, {}, {"srun", "hostname"}, 1), 0);
  EXPECT_EQ(client_, nullptr);
  EXPECT_TRUE(infos_.empty());
}

TEST_F(PluginTest, BinaryWorkloadIsRefusedNotMistakenForAnOutage) {
  const std::string path = ::testing::TempDir() + "/binary.toml";
  std::ofstream(path, std::ios::binary) << std::string(
      "\x7f"
      "ELF\0\0",
      6);
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, path.c_str()}}), -1);
  EXPECT_EQ(client_, nullptr);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("binary data"), std::string::npos) << errors_[0];
}

TEST_F(PluginTest, ChdirIsWhereTheWorkloadIs) {
  const std::string dir = ::testing::TempDir() + "/rundir";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/xdeep.toml") << "[model]\n";
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}}, {"srun", "-D", dir, "--xdeep-tune", "prog"}, 4), 0);
  EXPECT_EQ(client_->last.workload_source, dir + "/xdeep.toml");
  EXPECT_EQ(client_->last.workload_toml, "[model]\n");
}

TEST_F(PluginTest, PlacementLimitsReachTheDaemon) {
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "-c2", "--ntasks-per-node=3", "-w", "n[1-3]", "-N5", "-x", "n9",
                    "--xdeep-tune", "prog"},
                   9),
            0);
  EXPECT_EQ(client_->last.cpus_per_task, 2);
  EXPECT_EQ(client_->last.max_tasks_per_node, 3);
  EXPECT_EQ(client_->last.max_nodes, 3) << "-w names 3 nodes";
  EXPECT_EQ(client_->last.excluded_nodes, 1);
  EXPECT_NE(std::find(reexec_.begin(), reexec_.end(), "--nodelist=n1,n2"), reexec_.end());
}

TEST_F(PluginTest, RefusedOptionStopsAnAskedLaunchAndWarnsADefaultOne) {
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--multi-prog", "--xdeep-tune", "conf"}, 3),
            -1);
  ASSERT_EQ(errors_.size(), 1u);
  EXPECT_NE(errors_[0].find("--multi-prog cannot be tuned"), std::string::npos) << errors_[0];
  setenv("XDEEP_WORKLOAD", "gpt-125m", 1);
  EXPECT_EQ(Launch({"default=on"}, {}, {"srun", "--multi-prog", "conf"}, 2), 0);
  EXPECT_EQ(client_, nullptr);
  EXPECT_NE(infos_.back().find("running the launch unchanged"), std::string::npos);
}

TEST_F(PluginTest, HeterogeneousStepTunesComponentZeroOnly) {
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--xdeep-tune", "a", ":", "-n2", "b"}, 2),
            0);
  const auto a = std::find(reexec_.begin(), reexec_.end(), "a");
  ASSERT_NE(a, reexec_.end());
  EXPECT_EQ(std::vector<std::string>(a, reexec_.end()),
            (std::vector<std::string>{"a", ":", "--export=ALL", "-n2", "b"}))
      << "srun would hand component 0's --export to component 1";
  const std::string& exported = *(a - 1);
  EXPECT_TRUE(exported.starts_with("--export=ALL,XDEEP_TUNED=abc123,")) << exported;
  EXPECT_NE(exported.find(",XDEEP_NODES=2"), std::string::npos) << exported;
  // The re-executed srun: the decision leaves its environment, so component 1
  // inherits none of it; component 0 has it from --export.
  setenv("XDEEP_TUNED", "abc123", 1);
  setenv("XDEEP_REEXEC_PID", std::to_string(getpid()).c_str(), 1);
  setenv("XDEEP_NODES", "2", 1);
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}}, reexec_, 3), 0);
  EXPECT_TRUE(plugin_->owns_launch());
  EXPECT_EQ(getenv("XDEEP_NODES"), nullptr);
  EXPECT_EQ(getenv("XDEEP_TUNED"), nullptr);
}

TEST_F(PluginTest, HeterogeneousStepWithRestrictedExportIsRefusedBeforeAsking) {
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--export=NONE", "--xdeep-tune", "a", ":", "b"}, 3),
            -1);
  EXPECT_EQ(client_, nullptr) << "refused before a decision is reserved";
  EXPECT_NE(errors_[0].find("component 0"), std::string::npos) << errors_[0];
}

TEST_F(PluginTest, HeterogeneousAllocationIsRefused) {
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"salloc", "--xdeep-tune", "-n1", ":", "-n2", "bash"}, 3, Launcher::kSalloc),
            -1);
  EXPECT_NE(errors_[0].find("heterogeneous"), std::string::npos);
}

TEST_F(PluginTest, RestrictedExportCarriesTheDecision) {
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"srun", "--export=NONE", "--xdeep-tune", "prog"}, 3),
            0);
  auto it = std::find_if(reexec_.begin(), reexec_.end(),
                         [](const std::string& a) { return a.starts_with("--export=NIL,"); });
  ASSERT_NE(it, reexec_.end());
  for (const char* name : {"XDEEP_TUNED", "XDEEP_DECISION_ID", "XDEEP_NODES", "XDEEP_LAUNCHER"}) {
    EXPECT_NE(it->find(std::string(",") + name), std::string::npos) << name;
  }
}

TEST_F(PluginTest, PipedBatchScriptIsRefusedRedirectedOneIsRead) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int saved = dup(0);
  dup2(fds[0], 0);
  EXPECT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"sbatch", "--xdeep-tune"}, 2, Launcher::kSbatch),
            -1);
  ASSERT_FALSE(errors_.empty());
  EXPECT_NE(errors_.back().find("came through a pipe"), std::string::npos) << errors_.back();
  close(fds[0]);
  close(fds[1]);
  const std::string script = ::testing::TempDir() + "/stdin-job.sh";
  std::ofstream(script) << "#!/bin/sh\n#SBATCH -N 1 -A acct\nsrun true\n";
  const int file = open(script.c_str(), O_RDONLY);
  dup2(file, 0);
  lseek(0, 0, SEEK_END);  // sbatch has read it all
  ASSERT_EQ(Launch({}, {{kOptTune, nullptr}, {kOptWorkload, "gpt-125m"}},
                   {"sbatch", "--xdeep-tune"}, 2, Launcher::kSbatch),
            0);
  EXPECT_EQ(client_->last.max_nodes, 1);
  EXPECT_EQ(client_->last.account, "acct");
  EXPECT_EQ(lseek(0, 0, SEEK_CUR), 0) << "rewound for the re-executed sbatch";
  dup2(saved, 0);
  close(saved);
  close(file);
}

}  // namespace
}  // namespace xdeep::spank
