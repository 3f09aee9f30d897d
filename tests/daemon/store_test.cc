// The SQLite store: decisions survive reopening; binds and outcomes are idempotent.
#include "daemon/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace xdeep::daemon {
namespace {

DecisionRecord Record(const std::string& id) {
  DecisionRecord r;
  r.id = id;
  r.uid = 1000;
  r.workload = "gpt";
  r.strategy = "dp4";
  r.nodes = 1;
  r.gpus_per_node = 4;
  r.predicted_step_time_s = 0.5;
  r.predicted_cost = 12.5;
  r.decision_blob = std::string("\0\1binary", 8);
  return r;
}

TEST(StoreTest, DecisionsPersistAcrossReopen) {
  const std::string path = ::testing::TempDir() + "/store_test_" + std::to_string(getpid()) + ".db";
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->SaveDecision(Record("d1")).ok());
    ASSERT_TRUE((*store)->BindJob("d1", 42).ok());
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok());
  auto r = (*store)->GetDecision("d1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->uid, 1000u);
  EXPECT_EQ(r->decision_blob, std::string("\0\1binary", 8));
  EXPECT_EQ(r->job_id, 42u);
  std::filesystem::remove(path);
}

TEST(StoreTest, BindIsIdempotentButNotTransferable) {
  auto store = Store::Open(":memory:");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->SaveDecision(Record("d1")).ok());
  EXPECT_TRUE((*store)->BindJob("d1", 7).ok());
  EXPECT_TRUE((*store)->BindJob("d1", 7).ok());
  EXPECT_FALSE((*store)->BindJob("d1", 8).ok());
  EXPECT_FALSE((*store)->BindJob("unknown", 7).ok());
}

TEST(StoreTest, OneOutcomePerJob) {
  auto store = Store::Open(":memory:");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->SaveDecision(Record("d1")).ok());
  OutcomeRecord o{"d1", 7, 0, 12.5, {0.5, 0.25}};
  ASSERT_TRUE((*store)->RecordOutcome(o).ok());
  o.elapsed_s = 99;
  ASSERT_TRUE((*store)->RecordOutcome(o).ok());
  auto outcomes = (*store)->Outcomes("d1");
  ASSERT_TRUE(outcomes.ok());
  ASSERT_EQ(outcomes->size(), 1u);
  EXPECT_DOUBLE_EQ((*outcomes)[0].elapsed_s, 12.5);
  EXPECT_EQ((*outcomes)[0].step_times_s, (std::vector<double>{0.5, 0.25}));
  EXPECT_FALSE((*store)->RecordOutcome({"nope", 1, 0, 1, {}}).ok());
}

DecisionRecord Scoped(const std::string& id, uint32_t uid, const std::string& fingerprint,
                      const std::string& partition = "gpu", const std::string& account = "") {
  DecisionRecord r = Record(id);
  r.uid = uid;
  r.fingerprint = fingerprint;
  r.hardware = "h100";
  r.partition = partition;
  r.account = account;
  return r;
}

std::vector<std::string> Ids(Store& store, const LearningScope& scope) {
  std::vector<std::string> ids;
  auto runs = store.MeasuredRuns(scope, 64);
  EXPECT_TRUE(runs.ok()) << runs.status();
  if (runs.ok()) {
    for (const auto& [record, median] : *runs) ids.push_back(record.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(StoreTest, MeasuredRunsStayInTheirScope) {
  auto opened = Store::Open(":memory:");
  ASSERT_TRUE(opened.ok());
  Store& store = **opened;
  ASSERT_TRUE(store.SaveDecision(Scoped("mine", 1000, "fpA", "gpu", "physics")).ok());
  ASSERT_TRUE(store.SaveDecision(Scoped("colleague", 1001, "fpA", "gpu", "physics")).ok());
  ASSERT_TRUE(store.SaveDecision(Scoped("stranger", 1002, "fpA", "gpu", "chem")).ok());
  ASSERT_TRUE(store.SaveDecision(Scoped("other-model", 1000, "fpB")).ok());
  ASSERT_TRUE(store.SaveDecision(Scoped("other-partition", 1000, "fpA", "debug")).ok());
  for (const char* id : {"mine", "colleague", "stranger", "other-model", "other-partition"}) {
    ASSERT_TRUE(store.RecordOutcome({id, 1, 0, 10, {0.5}}).ok());
  }
  LearningScope own{"fpA", "h100", "gpu", 1000u, ""};
  EXPECT_EQ(Ids(store, own), (std::vector<std::string>{"mine"}));
  LearningScope account{"fpA", "h100", "gpu", 1000u, "physics"};
  EXPECT_EQ(Ids(store, account), (std::vector<std::string>{"colleague", "mine"}));
  LearningScope site{"fpA", "h100", "gpu", std::nullopt, ""};
  EXPECT_EQ(Ids(store, site), (std::vector<std::string>{"colleague", "mine", "stranger"}));
  LearningScope other_hardware{"fpA", "a100", "gpu", std::nullopt, ""};
  EXPECT_TRUE(Ids(store, other_hardware).empty());
  // Decisions of an older daemon carry no fingerprint: they match nothing.
  EXPECT_TRUE(Ids(store, LearningScope{"", "", "", std::nullopt, ""}).empty());
}

TEST(StoreTest, OnlySucceededUnflaggedRunsAreLearned) {
  auto opened = Store::Open(":memory:");
  ASSERT_TRUE(opened.ok());
  Store& store = **opened;
  const LearningScope scope{"fp", "h100", "gpu", 1000u, ""};
  for (const char* id : {"ok", "exit3", "unknown", "slurm-failed", "flagged", "no-times"}) {
    ASSERT_TRUE(store.SaveDecision(Scoped(id, 1000, "fp")).ok());
  }
  ASSERT_TRUE(store.RecordOutcome({"ok", 1, 0, 10, {0.5}}).ok());
  ASSERT_TRUE(store.RecordOutcome({"exit3", 2, 3, 10, {0.5}}).ok());
  ASSERT_TRUE(store.RecordOutcome({"unknown", 3, -1, 10, {0.5}}).ok());
  ASSERT_TRUE(store.RecordOutcome({"slurm-failed", 4, 0, 10, {0.5}}).ok());
  ASSERT_TRUE(store.RecordOutcome({"flagged", 5, 0, 10, {0.5}, "implausible"}).ok());
  ASSERT_TRUE(store.RecordOutcome({"no-times", 6, 0, 10, {}}).ok());
  // Before Slurm's records: the reports' exit code 0 counts.
  EXPECT_EQ(Ids(store, scope), (std::vector<std::string>{"ok", "slurm-failed"}));
  EXPECT_EQ(*store.LearningState("unknown"), "waiting for Slurm's record");
  EXPECT_EQ(*store.LearningState("exit3"), "ignored: exit code 3");
  EXPECT_EQ(*store.LearningState("flagged"), "ignored: implausible");
  EXPECT_EQ(*store.LearningState("ok"), "used");
  // Slurm's record decides: COMPLETED vouches for an unknown exit code, a
  // failure outweighs the client's exit code 0.
  ASSERT_TRUE(store.RecordJobEnd("unknown", 3, "COMPLETED").ok());
  ASSERT_TRUE(store.RecordJobEnd("slurm-failed", 4, "FAILED").ok());
  EXPECT_EQ(Ids(store, scope), (std::vector<std::string>{"ok", "unknown"}));
  EXPECT_EQ(*store.LearningState("unknown"), "used");
  EXPECT_EQ(*store.LearningState("slurm-failed"), "ignored: Slurm recorded FAILED");
  EXPECT_EQ(*store.LearningState("no-times"), "ignored: no step times reported");
}

TEST(StoreTest, ForgetStopsLearningAndFindsByPrefix) {
  auto opened = Store::Open(":memory:");
  ASSERT_TRUE(opened.ok());
  Store& store = **opened;
  ASSERT_TRUE(store.SaveDecision(Scoped("0123456789abcdef", 1000, "fp")).ok());
  ASSERT_TRUE(store.SaveDecision(Scoped("0123456799999999", 1000, "fp")).ok());
  ASSERT_TRUE(store.RecordOutcome({"0123456789abcdef", 1, 0, 10, {0.5}}).ok());
  auto found = store.FindDecision("012345678");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->id, "0123456789abcdef");
  EXPECT_EQ(found->fingerprint, "fp");
  EXPECT_EQ(store.FindDecision("01234567").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.FindDecision("0123").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.FindDecision("ffffffffff").status().code(), absl::StatusCode::kNotFound);
  ASSERT_EQ(*store.Forget(found->id), 1);
  EXPECT_TRUE(Ids(store, {"fp", "h100", "gpu", 1000u, ""}).empty());
  EXPECT_EQ(*store.LearningState(found->id), "forgotten");
}

TEST(StoreTest, OlderDatabaseGainsTheNewColumns) {
  const std::string path = ::testing::TempDir() + "/store_old_" + std::to_string(getpid()) + ".db";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE decisions (id TEXT PRIMARY KEY, uid INTEGER NOT NULL, "
                           "workload TEXT NOT NULL, strategy TEXT NOT NULL, nodes INTEGER NOT "
                           "NULL, gpus_per_node INTEGER NOT NULL, predicted_step_time_s REAL NOT "
                           "NULL, predicted_cost REAL NOT NULL, decision BLOB NOT NULL, "
                           "created_unix INTEGER NOT NULL, job_id INTEGER);"
                           "INSERT INTO decisions VALUES ('old', 1, 'gpt', 'dp1', 1, 1, 1, 1, "
                           "x'00', 1, NULL);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto old = (*store)->GetDecision("old");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->fingerprint, "");
  ASSERT_TRUE((*store)->SaveDecision(Scoped("new", 1, "fp")).ok());
  EXPECT_EQ((*store)->GetDecision("new")->partition, "gpu");
  std::filesystem::remove(path);
}

TEST(StoreTest, UnwritablePathSaysWhatToFix) {
  auto store = Store::Open("/nonexistent/dir/x.db");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(std::string(store.status().message()).find("[store] path"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::daemon
