// Job-completion records as etc/slurm/xdeep-jobcomp.sh spools them.
#include "daemon/job_records.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace xdeep::daemon {
namespace {

constexpr const char* kRecord =
    "JOBID=42\nUID=1001\nSTART=1000\nEND=1600\nNODECNT=2\nPARTITION=gpu\nJOBSTATE=COMPLETED\n"
    "BATCH=yes\nARRAYJOBID=0\nARRAYTASKID=4294967294\nUSERNAME=alice\nACCOUNT=phys\n"
    "SCONTROL=JobId=42 JobName=train UserId=alice(1001) JobState=COMPLETING NumNodes=2 "
    "AdminComment=xdeep:abc JOB_GRES=gpu:6   Nodes=n[1-2] CPU_IDs=0 Mem=0 GRES= WorkDir=/home\n";

TEST(JobRecordTest, ParsesWhatSlurmRecorded) {
  auto u = ParseJobRecord(kRecord);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->job_id, 42u);
  EXPECT_EQ(u->uid, 1001u);
  EXPECT_EQ(u->end_unix - u->start_unix, 600);
  EXPECT_EQ(u->nodes, 2);
  EXPECT_EQ(u->partition, "gpu");
  EXPECT_EQ(u->user, "alice");
  EXPECT_EQ(u->decision_id, "abc");
  EXPECT_EQ(u->slurm_gpus, 6);
}

TEST(JobRecordTest, SlurmctldFieldsOfThisJobOnly) {
  // A heterogeneous leader's record lists every component: each has its own.
  const std::string_view het[] = {
      "JobId=7 HetJobId=7 HetJobOffset=0 JobName=a AdminComment=xdeep:d0 JOB_GRES=gpu:1",
      "JobId=8 HetJobId=7 HetJobOffset=1 JobName=a AdminComment=xdeep:d1 JOB_GRES=gpu:a100:3"};
  EXPECT_EQ(ReadControllerRecord(het, 7).decision_id, "d0");
  EXPECT_EQ(ReadControllerRecord(het, 7).gpus, 1);
  EXPECT_EQ(ReadControllerRecord(het, 8).decision_id, "d1");
  EXPECT_EQ(ReadControllerRecord(het, 8).gpus, 3);
  EXPECT_FALSE(ReadControllerRecord(het, 9).gpus.has_value());
  EXPECT_EQ(GpusInJobGres("(null)"), 0);
  EXPECT_EQ(GpusInJobGres("gpu:a100:2(S:0),gpu:v100:1"), 3);
  EXPECT_FALSE(GpusInJobGres("gpu:x4").has_value());
}

TEST(JobRecordTest, FieldsRepeatedByUserTextAreNotTrusted) {
  // A job name with a space or a newline adds fields; slurmctld's stay.
  for (const char* forged :
       {"SCONTROL=JobId=42 JobName=x JOB_GRES=gpu:0 UserId=alice(1001) JOB_GRES=gpu:8\n",
        "SCONTROL=JobId=42 JobName=x\nSCONTROL=   AdminComment=xdeep:other\n"
        "SCONTROL= UserId=alice(1001) AdminComment=xdeep:abc JOB_GRES=gpu:8\n"}) {
    auto u = ParseJobRecord(std::string(kRecord).substr(0, std::string(kRecord).find("SCONTROL=")) +
                            forged);
    ASSERT_TRUE(u.ok()) << u.status();
    EXPECT_EQ(u->decision_id, "") << forged;
    EXPECT_FALSE(u->slurm_gpus.has_value()) << forged;
  }
  // A line that starts a record ends this one: what follows is not read.
  auto cut = ParseJobRecord(std::string(kRecord).substr(0, std::string(kRecord).find("SCONTROL=")) +
                            "SCONTROL=JobId=42 JobName=x\nSCONTROL=JobId=1 JOB_GRES=gpu:0\n"
                            "SCONTROL= AdminComment=xdeep:abc JOB_GRES=gpu:8\n");
  ASSERT_TRUE(cut.ok());
  EXPECT_FALSE(cut->slurm_gpus.has_value());
}

TEST(JobRecordTest, FirstOccurrenceWinsAndBadRecordsAreRefused) {
  // A second PARTITION line (a newline smuggled into user text) is ignored.
  auto u = ParseJobRecord(std::string(kRecord) + "PARTITION=debug\nADMINCOMMENT=xdeep:forged\n");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->partition, "gpu");
  EXPECT_EQ(u->decision_id, "abc");
  EXPECT_FALSE(ParseJobRecord("JOBID=1\nUID=0\n").ok());
  EXPECT_FALSE(ParseJobRecord("garbage").ok());
  EXPECT_FALSE(ParseJobRecord("JOBID=x\nUID=0\nSTART=1\nEND=2\n").ok());
  // Cancelled while pending: START=0, nothing ran.
  auto never = ParseJobRecord("JOBID=5\nUID=0\nSTART=0\nEND=1600\nNODECNT=0\n");
  ASSERT_TRUE(never.ok());
  EXPECT_EQ(never->end_unix - never->start_unix, 0);
}

TEST(JobRecordTest, ArrayTaskCounts) {
  EXPECT_EQ(CountArrayTasks("0-9"), 10);
  EXPECT_EQ(CountArrayTasks("0-9%2"), 10);
  EXPECT_EQ(CountArrayTasks("1,3,5-7"), 5);
  EXPECT_EQ(CountArrayTasks("0-10:5"), 3);
  EXPECT_FALSE(CountArrayTasks("9-0").has_value());
  EXPECT_FALSE(CountArrayTasks("a-b").has_value());
  EXPECT_FALSE(CountArrayTasks("0-99999999999").has_value());
}

TEST(JobRecordTest, GpusAJobAsksFor) {
  EXPECT_EQ(GpusInTres(""), 0);
  EXPECT_EQ(GpusInTres("gres:gpu:4"), 4);
  EXPECT_EQ(GpusInTres("gres:gpu:a100:2,gres:fpga:1"), 2);
  EXPECT_EQ(GpusInTres("gres:gpu"), 1);
  EXPECT_EQ(GpusInTres("gres/gpu=3"), 3);
  EXPECT_EQ(GpusInTres("gres:gpumem:100"), 0);
  EXPECT_FALSE(GpusInTres("gres:gpu:4x").has_value());
}

TEST(JobRecordTest, RequeuedRunIsChargedFromWhenItWasSeenStarting) {
  const std::string spool = ::testing::TempDir() + "/requeue_" + std::to_string(getpid());
  std::filesystem::create_directories(spool);
  // Slurm 22.05's record of a requeued run: START = END = the requeue.
  std::ofstream(spool + "/7.2000.job")
      << "JOBID=7\nUID=1001\nSTART=2000\nEND=2000\nNODECNT=1\nPARTITION=gpu\n"
         "JOBSTATE=PENDING\nUSERNAME=alice\n";
  auto ledger = Ledger::Open(":memory:");
  ASSERT_TRUE((*ledger)->NoteRunStarts({{7, 1640}, {8, 1900}}).ok());
  PolicyConfig policy;
  policy.enforcement = "strict";
  policy.price_per_gpu_hour = 1.0;
  EXPECT_EQ(DrainJobRecords(
                spool, policy, **ledger, [](const std::string&) { return 4; }, 2100),
            1);
  EXPECT_DOUBLE_EQ(*(*ledger)->TotalSettled(), 4 * 360 / 3600.0);
  EXPECT_FALSE((*(*ledger)->TakeRunStart(7)).has_value()) << "used once";
  EXPECT_TRUE((*(*ledger)->TakeRunStart(8)).has_value());
  std::filesystem::remove_all(spool);
}

TEST(JobRecordTest, DrainChargesOnceAndDeletes) {
  const std::string spool = ::testing::TempDir() + "/spool_" + std::to_string(getpid());
  std::filesystem::create_directories(spool);
  std::ofstream(spool + "/42.1000.job") << kRecord;
  std::ofstream(spool + "/.43.1000.123") << "partial";  // still being written
  std::ofstream(spool + "/44.1000.job")
      << "JOBID=44\nUID=1001\nSTART=1000\nEND=2000\nNODECNT=1\nPARTITION=debug\n";
  auto ledger = Ledger::Open(":memory:");
  Charge c;
  c.decision_id = "abc";
  c.uid = 1001;
  c.user = "alice";
  c.partition = "gpu";
  c.amount = 50;
  c.nodes = 2;
  c.gpus = 8;
  c.price_per_gpu_hour = 2.0;
  ASSERT_TRUE((*ledger)->Reserve(c, {}, 0, 900, 600).ok());
  PolicyConfig policy;
  EXPECT_EQ(DrainJobRecords(spool, policy, **ledger, nullptr, 1700), 1);
  // The 6 GPUs Slurm allocated (not the 8 reserved) x 600 s x 2.0 / h.
  EXPECT_DOUBLE_EQ((*ledger)->Get("abc")->settled_amount, 6 * 600 / 3600.0 * 2.0);
  EXPECT_FALSE(std::filesystem::exists(spool + "/42.1000.job"));
  EXPECT_FALSE(std::filesystem::exists(spool + "/44.1000.job")) << "neither tuned nor strict";
  EXPECT_TRUE(std::filesystem::exists(spool + "/.43.1000.123"));
  std::filesystem::remove_all(spool);
}

}  // namespace
}  // namespace xdeep::daemon
