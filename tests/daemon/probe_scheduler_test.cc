// ProbeScheduler without Slurm: the sbatch line it builds, squeue parsing, report
// checks, and the wait (deadline, cancel, failed jobs) against a fake command runner
// and a simulated clock. The real-Slurm path is tests/integration/test_probes.py.
#include "daemon/probe_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "profiler/atomic_file.h"
#include "profiler/report.h"

namespace xdeep::daemon {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("probe_scheduler_test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Path(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// `squeue --json` as Slurm 22.05 prints it: another user's job, and job 4242
// in `state` unless that is empty.
std::string SqueueJson(const std::string& state) {
  std::string jobs = R"({"job_id": 17, "job_state": "RUNNING", "partition": "debug"})";
  if (!state.empty()) {
    jobs += R"(, {"job_id": 4242, "job_state": ")" + state + R"(", "partition": "debug"})";
  }
  return R"({"meta": {}, "errors": [], "jobs": [)" + jobs + "]}";
}

// Plays Slurm: answers sbatch with a job id, squeue with a scripted state sequence
// (the last repeats), records scancel; on the "job's end" it runs `on_finish`, which
// writes whatever report the test wants where --out pointed.
struct FakeSlurm {
  std::vector<std::vector<std::string>> calls;
  std::vector<std::string> states = {"RUNNING", "COMPLETED"};
  size_t polls = 0;
  int sbatch_exit = 0;
  std::string sbatch_out = "4242\n";
  std::string report_path;  // from the --wrap line
  std::function<void(const std::string&)> on_finish;

  CommandRunner Runner() {
    return [this](const std::vector<std::string>& argv,
                  std::chrono::milliseconds) -> absl::StatusOr<CommandResult> {
      calls.push_back(argv);
      CommandResult r;
      if (argv[0] == "sbatch") {
        r.exit_code = sbatch_exit;
        if (sbatch_exit != 0) {
          r.err = "sbatch: error: invalid partition specified: nope";
          return r;
        }
        r.out = sbatch_out;
        const std::string& wrap = argv.back();
        const size_t at = wrap.find("'--out' '") + 9;
        report_path = wrap.substr(at, wrap.find('\'', at) - at);
      } else if (argv[0] == "squeue") {
        const std::string& s = states[std::min(polls++, states.size() - 1)];
        if (s == "BUSY") {
          r.exit_code = 1;
          r.err = "slurm_load_jobs error: Socket timed out on send/recv operation";
        } else {
          // Slurm 22.05 lists every job with --json; past MinJobAge ours is gone.
          r.out = SqueueJson(s == "PURGED" ? "" : s);
        }
        const bool finished = s != "PENDING" && s != "RUNNING" && s != "BUSY";
        if (finished && on_finish) {
          on_finish(report_path);
          on_finish = nullptr;
        }
      }
      return r;
    };
  }
  int Count(const std::string& cmd) const {
    return static_cast<int>(
        std::count_if(calls.begin(), calls.end(), [&](const auto& c) { return c[0] == cmd; }));
  }
};

// Simulated time: sleep advances it, so a 10-minute wait takes no real time.
struct FakeClock {
  absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  ProbeClock Clock() {
    return {[this] { return t; }, [this](absl::Duration d) { t += d; }};
  }
};

profiler::Report CpuReport() {
  profiler::Report r = profiler::NewReport();
  profiler::BandwidthEntry b;
  b.kernel = "triad";
  b.space = "host";
  b.backend = "kokkos";
  b.bytes = 3 << 20;
  b.timing.median_s = b.timing.min_s = b.timing.p95_s = 1e-3;
  b.timing.iterations = 10;
  b.gbps = 3.1;
  r.bandwidth.push_back(b);
  return r;
}

void WriteCpuReport(const std::string& path) {
  ASSERT_TRUE(profiler::WriteReport(CpuReport(), path).ok());
}

ProbeRequest CpuRequest() {
  ProbeRequest r;
  r.partition = "debug";
  r.time_limit = absl::Minutes(1);
  return r;
}

class ProbeSchedulerTest : public ::testing::Test {
 protected:
  ProbeScheduler Make() {
    ProbeSchedulerOptions o;
    o.probe_path = "/opt/xdeep/bin/xdeep-probe";
    o.reports_dir = dir_.Path("reports");
    o.poll_interval = absl::Seconds(2);
    return ProbeScheduler(o, slurm_.Runner(), clock_.Clock());
  }
  // Reports in the test's directory itself, the framework probe configured.
  ProbeScheduler MakeWithFrameworkProbe() {
    ProbeSchedulerOptions o;
    o.probe_path = "/opt/xdeep/bin/xdeep-probe";
    o.reports_dir = dir_.Path("");
    o.framework_probe = {"python3", "/opt/xdeep/share/framework_probe.py"};
    return ProbeScheduler(o);
  }
  TempDir dir_;
  FakeSlurm slurm_;
  FakeClock clock_;
};

TEST_F(ProbeSchedulerTest, CpuPartitionRunsTheCpuSuiteOnOneTask) {
  ProbeScheduler s = Make();
  const std::vector<std::string> argv = s.SubmitCommand(CpuRequest(), "/r/a b.json", "/r/a.out");
  EXPECT_THAT(argv,
              ElementsAre("sbatch", "--parsable", "-p", "debug", "-t", "1", "-N", "1",
                          "--ntasks-per-node=1", "-J", "xdeep-probe", "-o", "/r/a.out", "--wrap",
                          "'srun' '/opt/xdeep/bin/xdeep-probe' 'compute' '--suite' 'cpu' "
                          "'--time-limit' '48' '--out' '/r/a b.json'"));
}

TEST_F(ProbeSchedulerTest, GpuComputeUsesOneGpuAndTheShapesFile) {
  const std::string shapes = dir_.Path("shapes.json");
  std::ofstream(shapes) << "{}";
  ProbeRequest r;
  r.partition = "gpu";
  r.time_limit = absl::Seconds(90);  // rounded up to 2 minutes
  r.gpus_per_node = 8;
  r.shapes_file = shapes;
  const std::vector<std::string> argv = Make().SubmitCommand(r, "/r/c.json", "/r/c.out");
  EXPECT_THAT(argv, Contains("--gpus-per-node=1"));
  EXPECT_THAT(argv, Contains("--ntasks-per-node=1"));
  const std::vector<std::string> t = {argv[4], argv[5]};
  EXPECT_THAT(t, ElementsAre("-t", "2"));
  EXPECT_EQ(argv.back(),
            "'srun' '/opt/xdeep/bin/xdeep-probe' 'compute' '--suite' 'gpu' "
            "'--shapes' '" +
                shapes + "' '--time-limit' '96' '--out' '/r/c.json'");
}

TEST_F(ProbeSchedulerTest, HeuristicStepFollowsTheGpuComputeSetAndJoinsItsReport) {
  const std::string timed = dir_.Path("shapes.json"), asked = dir_.Path("heuristic.json");
  std::ofstream(timed) << "{}";
  std::ofstream(asked) << "{}";
  ProbeRequest r;
  r.partition = "gpu";
  r.time_limit = absl::Minutes(5);
  r.gpus_per_node = 8;
  r.shapes_file = timed;
  r.heuristic_shapes_file = asked;
  // The timed set, then the heuristic asked about the second file's shapes
  // (no anchors: nothing is timed) and its answers merged into the report;
  // the job's status stays the timed set's. The timed set's watchdog leaves
  // the heuristic's 60 s and 10 s for srun and the merge within the job's
  // 300 s: 300 - 60 (a fifth) - 70.
  EXPECT_EQ(Make().SubmitCommand(r, "/r/c.json", "/r/c.out").back(),
            "'srun' '/opt/xdeep/bin/xdeep-probe' 'compute' '--suite' 'gpu' '--shapes' '" + timed +
                "' '--time-limit' '170' '--out' '/r/c.json'; rc=$?; if [ -e '/r/c.json' ]; then "
                "'srun' '/opt/xdeep/bin/xdeep-probe' 'compute' '--suite' 'gemm-heuristic' "
                "'--shapes' '" +
                asked +
                "' '--no-anchors' '--time-limit' '60' '--out' '/r/c.json.heuristic.json' && "
                "'/opt/xdeep/bin/xdeep-probe' 'merge' '/r/c.json' '/r/c.json.heuristic.json' "
                "'--out' '/r/c.json'; fi; exit $rc");
  EXPECT_TRUE(Make().Validate(r).ok());
  // Two minutes leave the timed set 26 s: rejected before anything is
  // submitted, saying which limit would do.
  r.time_limit = absl::Minutes(2);
  EXPECT_THAT(
      std::string(Make().Validate(r).message()),
      AllOf(HasSubstr("leaves the GPU compute set 26 s"), HasSubstr("time_limit_s to 180")));
  r.time_limit = absl::Minutes(3);
  EXPECT_TRUE(Make().Validate(r).ok()) << Make().Validate(r);
  // Only for GPUs: the CPU suite has no cuBLASLt.
  r.gpus_per_node = 0;
  r.shapes_file.clear();
  EXPECT_THAT(std::string(Make().Validate(r).message()), HasSubstr("GPU compute set"));
  r.gpus_per_node = 8;
  r.heuristic_shapes_file = dir_.Path("missing.json");
  EXPECT_THAT(std::string(Make().Validate(r).message()), HasSubstr("does not exist"));
}

TEST_F(ProbeSchedulerTest, HeuristicOnlyJobAsksTheHeuristicAloneOnOneGpu) {
  const std::string asked = dir_.Path("heuristic.json");
  std::ofstream(asked) << "{}";
  ProbeScheduler s = MakeWithFrameworkProbe();
  ProbeRequest r;
  r.partition = "gpu";
  r.time_limit = absl::Minutes(2);
  r.gpus_per_node = 1;
  r.heuristic_shapes_file = asked;
  r.heuristic_only = true;
  ASSERT_TRUE(s.Validate(r).ok()) << s.Validate(r);
  // No timed set, no framework probe, nothing merged: the answers are the report.
  std::vector<std::string> argv = s.SubmitCommand(r, "/r/h.json", "/r/h.out");
  EXPECT_THAT(argv, Contains("--gpus-per-node=1"));
  EXPECT_EQ(argv.back(),
            "'srun' '/opt/xdeep/bin/xdeep-probe' 'compute' '--suite' "
            "'gemm-heuristic' '--shapes' '" +
                asked + "' '--no-anchors' '--time-limit' '96' '--out' '/r/h.json'");
  // A report with answers and no timings is what such a job brings; one
  // without answers is not.
  profiler::Report report = profiler::NewReport();
  report.gpu = profiler::GpuInfo{};
  profiler::GemmEntry e;
  e.m = 64, e.n = 128, e.k = 256;
  e.dtype = "bf16";
  e.pass = "fwd";
  e.kernel.algo = 66, e.kernel.tile_m = 128, e.kernel.tile_n = 256;
  report.gemm_algos.push_back(e);
  const std::string path = dir_.Path("h.json");
  ASSERT_TRUE(profiler::WriteFileAtomically(path, profiler::ToJson(report).dump()).ok());
  EXPECT_TRUE(ProbeScheduler::CheckReport(path, r).ok())
      << ProbeScheduler::CheckReport(path, r).status();
  report.gemm_algos.clear();
  ASSERT_TRUE(profiler::WriteFileAtomically(path, profiler::ToJson(report).dump()).ok());
  EXPECT_EQ(ProbeScheduler::CheckReport(path, r).status().code(), absl::StatusCode::kDataLoss);
  // Only as the heuristic step of the GPU compute set, on a shapes file alone.
  r.shapes_file = asked;
  EXPECT_THAT(std::string(s.Validate(r).message()), HasSubstr("heuristic-only"));
  r.shapes_file.clear();
  r.heuristic_shapes_file.clear();
  EXPECT_THAT(std::string(s.Validate(r).message()), HasSubstr("heuristic-only"));
}

TEST_F(ProbeSchedulerTest, FrameworkProbeFollowsTheGpuComputeSetAndJoinsItsReport) {
  ProbeScheduler s = MakeWithFrameworkProbe();
  ProbeRequest r;
  r.partition = "gpu";
  r.time_limit = absl::Minutes(5);
  r.gpus_per_node = 4;
  // Two GPUs held: one rank, then two, each merged into the report.
  std::vector<std::string> argv = s.SubmitCommand(r, "/r/c.json", "/r/c.out");
  EXPECT_THAT(argv, Contains("--gpus-per-node=2"));
  EXPECT_EQ(argv.back(),
            "'srun' '/opt/xdeep/bin/xdeep-probe' 'compute' '--suite' 'gpu' '--time-limit' '240' "
            "'--out' '/r/c.json'; rc=$?; if [ -e '/r/c.json' ]; then 'srun' 'timeout' '120' "
            "'python3' '/opt/xdeep/share/framework_probe.py' '--out' '/r/c.json.framework.json' && "
            "'/opt/xdeep/bin/xdeep-probe' 'merge' '/r/c.json' '/r/c.json.framework.json' '--out' "
            "'/r/c.json'; 'srun' 'timeout' '120' 'python3' '/opt/xdeep/share/framework_probe.py' "
            "'--ranks' '2' '--out' '/r/c.json.framework2.json' && '/opt/xdeep/bin/xdeep-probe' "
            "'merge' '/r/c.json' '/r/c.json.framework2.json' '--out' '/r/c.json'; fi; exit $rc");
  // A node of one GPU: one rank only, one GPU held.
  r.gpus_per_node = 1;
  argv = s.SubmitCommand(r, "/r/c.json", "/r/c.out");
  EXPECT_THAT(argv, Contains("--gpus-per-node=1"));
  EXPECT_THAT(argv.back(), HasSubstr("framework.json"));
  EXPECT_THAT(argv.back(), Not(HasSubstr("--ranks")));
  r.gpus_per_node = 4;
  // Not for the CPU set or collectives: no GPU framework runs there.
  EXPECT_THAT(s.SubmitCommand(CpuRequest(), "/r/a.json", "/r/a.out").back(),
              Not(HasSubstr("framework")));
  r.set = ProbeSet::kCollectives;
  EXPECT_THAT(s.SubmitCommand(r, "/r/n.json", "/r/n.out").back(), Not(HasSubstr("framework")));
}

TEST_F(ProbeSchedulerTest, CollectivesUseOneTaskPerGpuOnEveryNode) {
  ProbeRequest r;
  r.partition = "gpu";
  r.time_limit = absl::Minutes(3);
  r.set = ProbeSet::kCollectives;
  r.nodes = 2;
  r.gpus_per_node = 4;
  const std::vector<std::string> argv = Make().SubmitCommand(r, "/r/n2.json", "/r/n2.out");
  EXPECT_THAT(argv, Contains("--ntasks-per-node=4"));
  EXPECT_THAT(argv, Contains("--gpus-per-node=4"));
  const std::vector<std::string> n = {argv[6], argv[7]};
  EXPECT_THAT(n, ElementsAre("-N", "2"));
  EXPECT_EQ(argv.back(),
            "'srun' '/opt/xdeep/bin/xdeep-probe' 'collectives' '--time-limit' "
            "'144' '--out' '/r/n2.json'");
}

TEST_F(ProbeSchedulerTest, QuotesPathsForTheWrappedShell) {
  ProbeRequest r = CpuRequest();
  const std::vector<std::string> argv = Make().SubmitCommand(r, "/r/it's $HOME.json", "/r/o");
  EXPECT_THAT(argv.back(), HasSubstr("'--out' '/r/it'\\''s $HOME.json'"));
}

TEST_F(ProbeSchedulerTest, ProbeTimeLimitStaysUnderTheJobs) {
  EXPECT_EQ(ProbeScheduler::ProbeTimeLimitSeconds(absl::Minutes(1)), 48);
  EXPECT_EQ(ProbeScheduler::ProbeTimeLimitSeconds(absl::Seconds(1)), 48);
  EXPECT_EQ(ProbeScheduler::ProbeTimeLimitSeconds(absl::Minutes(10)), 480);
  EXPECT_EQ(ProbeScheduler::ProbeTimeLimitSeconds(absl::Minutes(10), 70), 410);
}

TEST_F(ProbeSchedulerTest, RejectsBadRequests) {
  ProbeScheduler s = Make();
  ProbeRequest r = CpuRequest();
  r.partition = "";
  EXPECT_EQ(s.Validate(r).code(), absl::StatusCode::kInvalidArgument);
  r = CpuRequest();
  r.set = ProbeSet::kCollectives;
  EXPECT_THAT(s.Validate(r).message(), HasSubstr("collectives need GPUs"));
  r = CpuRequest();
  r.time_limit = absl::ZeroDuration();
  EXPECT_EQ(s.Validate(r).code(), absl::StatusCode::kInvalidArgument);
  r = CpuRequest();
  r.gpus_per_node = 1;
  r.shapes_file = dir_.Path("missing.json");
  EXPECT_THAT(s.Validate(r).message(), HasSubstr("does not exist"));
  r = CpuRequest();
  r.nodes = 2;  // compute is one node
  EXPECT_EQ(s.Validate(r).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(s.Validate(CpuRequest()).ok());
  // Nothing reached Slurm.
  EXPECT_TRUE(slurm_.calls.empty());
}

TEST_F(ProbeSchedulerTest, TheWaitIsReportedAfterEveryPoll) {
  slurm_.states = {"PENDING", "PENDING", "RUNNING", "COMPLETED"};
  slurm_.on_finish = WriteCpuReport;
  ProbeRequest r = CpuRequest();
  std::vector<std::string> lines;
  r.on_wait = [&](const ProbeWait& w) { lines.push_back(DescribeWait(r, w)); };
  ASSERT_TRUE(Make().Run(r, absl::Minutes(5)).ok());
  // Polls every 2 s (simulated); the job's end is not a wait.
  EXPECT_THAT(lines,
              ElementsAre("probe job 4242 (CPU suite, partition debug): PENDING, 0:00 elapsed, "
                          "at most 5:00",
                          "probe job 4242 (CPU suite, partition debug): PENDING, 0:02 elapsed, "
                          "at most 5:00",
                          "probe job 4242 (CPU suite, partition debug): RUNNING, 0:04 elapsed, "
                          "at most 5:00"));
}

TEST(ProbeSchedulerParse, JobId) {
  EXPECT_EQ(*ProbeScheduler::ParseJobId("123\n"), "123");
  EXPECT_EQ(*ProbeScheduler::ParseJobId("77;cluster1\n"), "77");
  EXPECT_FALSE(ProbeScheduler::ParseJobId("").ok());
  EXPECT_FALSE(ProbeScheduler::ParseJobId("Submitted batch job 5").ok());
}

TEST(ProbeSchedulerParse, Squeue) {
  CommandResult r;
  r.out = SqueueJson("RUNNING");
  EXPECT_TRUE(ProbeScheduler::ParseSqueue(r, "4242").in_queue);
  EXPECT_TRUE(ProbeScheduler::ParseSqueue(r, "17").in_queue);
  r.out = SqueueJson("COMPLETING");
  EXPECT_TRUE(ProbeScheduler::ParseSqueue(r, "4242").in_queue);
  r.out = SqueueJson("COMPLETED");
  JobState s = ProbeScheduler::ParseSqueue(r, "4242");
  EXPECT_FALSE(s.in_queue);
  EXPECT_EQ(s.state, "COMPLETED");
  r.out = SqueueJson("");
  s = ProbeScheduler::ParseSqueue(r, "4242");
  EXPECT_FALSE(s.in_queue) << "another job's state is not ours";
  EXPECT_EQ(s.state, "");
  r.out = "not json";
  EXPECT_FALSE(ProbeScheduler::ParseSqueue(r, "4242").in_queue);
  r.out = SqueueJson("RUNNING");
  r.exit_code = 1;
  EXPECT_FALSE(ProbeScheduler::ParseSqueue(r, "4242").in_queue);
}

TEST_F(ProbeSchedulerTest, CompletedJobGivesItsValidatedReport) {
  slurm_.states = {"PENDING", "RUNNING", "RUNNING", "COMPLETED"};
  slurm_.on_finish = WriteCpuReport;
  ProbeScheduler s = Make();
  absl::StatusOr<ProbeOutcome> out = s.Run(CpuRequest(), absl::Minutes(5));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->job_id, "4242");
  EXPECT_EQ(out->report_path, slurm_.report_path);
  EXPECT_EQ(out->report.bandwidth.size(), 1u);
  EXPECT_EQ(slurm_.Count("squeue"), 4);
  EXPECT_EQ(slurm_.Count("scancel"), 0);
  // Polled at the configured interval: three sleeps of 2 s.
  EXPECT_EQ(clock_.t, absl::FromUnixSeconds(1'800'000'006));
}

TEST_F(ProbeSchedulerTest, PurgedJobWithReportIsDone) {
  // No accounting: past MinJobAge squeue no longer knows the job.
  slurm_.states = {"RUNNING", "PURGED"};
  slurm_.on_finish = WriteCpuReport;
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  ASSERT_TRUE(out.ok()) << out.status();
}

TEST_F(ProbeSchedulerTest, TransientSqueueErrorsAreRetried) {
  slurm_.states = {"BUSY", "BUSY", "RUNNING", "COMPLETED"};
  slurm_.on_finish = WriteCpuReport;
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(slurm_.Count("squeue"), 4);
}

TEST_F(ProbeSchedulerTest, DeadlineCancelsTheJob) {
  slurm_.states = {"PENDING"};  // never scheduled
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Seconds(30));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("probe job 4242 did not finish within 30s"));
  EXPECT_THAT(out.status().message(), HasSubstr("PENDING"));
  ASSERT_EQ(slurm_.Count("scancel"), 1);
  EXPECT_THAT(slurm_.calls.back(), ElementsAre("scancel", "4242"));
  // Waited the whole 30 s, not a poll interval more.
  EXPECT_EQ(clock_.t, absl::FromUnixSeconds(1'800'000'030));
}

TEST_F(ProbeSchedulerTest, SlurmTimeLimitIsReported) {
  slurm_.states = {"RUNNING", "TIMEOUT"};
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(out.status().message(), HasSubstr("hit its Slurm time limit of 1 min"));
  EXPECT_EQ(slurm_.Count("scancel"), 0);
}

TEST_F(ProbeSchedulerTest, FailedJobWithoutReportSaysSoWithItsLog) {
  slurm_.states = {"FAILED"};
  slurm_.on_finish = [this](const std::string&) {
    // Slurm wrote the step's stderr to the -o file.
    const std::string log = slurm_.calls[0][12];
    std::ofstream(log) << "srun: error: execve(): xdeep-probe: No such file or directory\n";
  };
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(out.status().message(), HasSubstr("ended (FAILED) without a report"));
  EXPECT_THAT(out.status().message(), HasSubstr("No such file or directory"));
}

TEST_F(ProbeSchedulerTest, InvalidReportIsDataLoss) {
  slurm_.on_finish = [](const std::string& path) {
    std::ofstream(path) << R"({"schema": "xdeep.probe_report/99"})";
  };
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr("probe job 4242: probe report"));
}

TEST_F(ProbeSchedulerTest, ReportWithoutTheSetsFiguresIsDataLoss) {
  slurm_.on_finish = [](const std::string& path) {
    ASSERT_TRUE(profiler::WriteReport(profiler::NewReport(), path).ok());
  };
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(out.status().message(), HasSubstr("holds no compute figures"));
}

TEST_F(ProbeSchedulerTest, ReportErrorsAreNamed) {
  slurm_.states = {"FAILED"};  // xdeep-probe exits 2 when its report lists errors
  slurm_.on_finish = [](const std::string& path) {
    profiler::Report r = CpuReport();
    r.errors.push_back({"kokkos.triad", "data check failed"});
    ASSERT_TRUE(profiler::WriteReport(r, path).ok());
  };
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(out.status().message(), HasSubstr("kokkos.triad: data check failed"));
}

TEST_F(ProbeSchedulerTest, SbatchRefusalIsUnavailable) {
  slurm_.sbatch_exit = 1;
  absl::StatusOr<ProbeOutcome> out = Make().Run(CpuRequest(), absl::Minutes(5));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(out.status().message(), HasSubstr("invalid partition"));
  EXPECT_EQ(slurm_.Count("squeue"), 0);
}

TEST_F(ProbeSchedulerTest, EachRunGetsItsOwnReportPath) {
  slurm_.on_finish = WriteCpuReport;
  ProbeScheduler s = Make();
  absl::StatusOr<ProbeOutcome> a = s.Run(CpuRequest(), absl::Minutes(5));
  ASSERT_TRUE(a.ok()) << a.status();
  slurm_.polls = 0;
  slurm_.on_finish = WriteCpuReport;
  absl::StatusOr<ProbeOutcome> b = s.Run(CpuRequest(), absl::Minutes(5));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->report_path, b->report_path);
  EXPECT_EQ(std::filesystem::path(a->report_path).parent_path(),
            std::filesystem::path(dir_.Path("reports")));
}

}  // namespace
}  // namespace xdeep::daemon
