// `squeue --json` as Slurm 22.05.8 prints it.
#include "daemon/slurm_jobs.h"

#include <gtest/gtest.h>

namespace xdeep::daemon {
namespace {

TEST(SlurmJobsTest, ReadsEveryJob) {
  auto jobs = ParseSqueueJson(R"({"meta": {}, "errors": [], "jobs": [
      {"job_id": 12, "job_state": "RUNNING", "partition": "gpu", "start_time": 1795746521,
       "admin_comment": "xdeep:d-1", "time_limit": null},
      {"job_id": 13, "job_state": "PENDING", "partition": "gpu,debug", "start_time": 0,
       "admin_comment": ""},
      {"job_id": 14, "job_state": "COMPLETED"}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].job_id, 12u);
  EXPECT_EQ((*jobs)[0].state, "RUNNING");
  EXPECT_EQ((*jobs)[0].partition, "gpu");
  EXPECT_EQ((*jobs)[0].start_time, 1795746521);
  EXPECT_EQ((*jobs)[0].admin_comment, "xdeep:d-1");
  EXPECT_EQ((*jobs)[1].start_time, 0);
  EXPECT_EQ((*jobs)[2].partition, "");
  EXPECT_TRUE(JobInQueue((*jobs)[0].state));
  EXPECT_TRUE(JobInQueue((*jobs)[1].state));
  EXPECT_FALSE(JobInQueue((*jobs)[2].state));
  EXPECT_FALSE(JobInQueue(""));
}

TEST(SlurmJobsTest, SkipsWhatIsNotAJob) {
  auto jobs = ParseSqueueJson(R"({"jobs": [{"job_id": -3}, {"job_id": "12"}, 5, {},
      {"job_id": 4294967296}, {"job_id": 7, "job_state": 3, "start_time": "soon"}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job_id, 7u);
  EXPECT_EQ((*jobs)[0].state, "");
  EXPECT_EQ((*jobs)[0].start_time, 0);
}

TEST(SlurmJobsTest, NotSqueueJson) {
  for (const char* text : {"", "12|RUNNING", "{}", R"({"jobs": {}})", "[1]"}) {
    EXPECT_FALSE(ParseSqueueJson(text).ok()) << text;
  }
}

}  // namespace
}  // namespace xdeep::daemon
