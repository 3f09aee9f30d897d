// Schema versions: databases written by earlier releases (committed SQL
// fixtures in fixtures/, copied from those releases' schemas) open, are
// upgraded to the current version, and keep every row; the store and the
// ledger in one file each keep their own version; a database from a
// newer daemon is refused untouched; a failing migration leaves the last
// complete version.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/ledger.h"
#include "daemon/schema_migrations.h"
#include "daemon/store.h"

namespace xdeep::daemon {
namespace {

std::string TempDb(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "/schema_" + name + "_" + std::to_string(getpid()) + ".db";
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  return path;
}

// A database file built from a fixture's SQL, as the earlier release left it.
std::string FromFixture(const std::string& fixture) {
  std::ifstream in(std::string(XDEEP_FIXTURES) + "/" + fixture);
  EXPECT_TRUE(in.good()) << fixture;
  std::stringstream sql;
  sql << in.rdbuf();
  const std::string path = TempDb(fixture);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.str().c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
  return path;
}

int VersionOf(const std::string& path, const std::string& part) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto v = SchemaVersion(db, part);
  sqlite3_close(db);
  EXPECT_TRUE(v.ok());
  return v.ok() ? *v : -1;
}

void SetVersion(const std::string& path, const std::string& part, int version) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string sql =
      "CREATE TABLE IF NOT EXISTS xdeep_schema (part TEXT PRIMARY KEY, version INTEGER NOT NULL);"
      "INSERT OR REPLACE INTO xdeep_schema VALUES ('" +
      part + "', " + std::to_string(version) + ")";
  ASSERT_TRUE(ExecSql(db, "test", sql.c_str()).ok());
  sqlite3_close(db);
}

// The version a database created now gets.
int CurrentLedgerVersion() {
  const std::string path = TempDb("fresh_ledger");
  { EXPECT_TRUE(Ledger::Open(path).ok()); }
  return VersionOf(path, "ledger");
}
int CurrentStoreVersion() {
  const std::string path = TempDb("fresh_store");
  { EXPECT_TRUE(Store::Open(path).ok()); }
  return VersionOf(path, "store");
}

constexpr int64_t kNow = 1795100000;

void ExpectLedgerUpgraded(const std::string& fixture, double alice_spent) {
  const std::string path = FromFixture(fixture);
  ASSERT_EQ(VersionOf(path, "ledger"), 0);
  auto ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok()) << ledger.status();
  EXPECT_EQ(VersionOf(path, "ledger"), CurrentLedgerVersion());
  EXPECT_GE(VersionOf(path, "ledger"), 3);
  // Every settled hold and charge counted once: totals kept by the old daemon
  // are not summed a second time.
  auto use = (*ledger)->Use({{"user", "alice", 0}, {"user", "bob", 0}}, 0);
  ASSERT_TRUE(use.ok()) << use.status();
  EXPECT_NEAR((*use)[0].spent, alice_spent, 1e-9);
  EXPECT_NEAR((*use)[1].reserved, 5.0, 1e-9);
  auto bob = (*ledger)->Get("d3");
  ASSERT_TRUE(bob.ok());
  EXPECT_EQ(bob->state, "reserved");
  // The new columns work on the old rows: bob's hold settles, alice's new
  // hold goes through the admission token path.
  ASSERT_TRUE((*ledger)->Settle("d3", 1001, 1800, kNow).ok());
  Charge c;
  c.decision_id = "after-upgrade";
  c.uid = 1000;
  c.user = "alice";
  c.account = "physics";
  c.partition = "gpu";
  c.amount = 4;
  c.nodes = 1;
  c.gpus = 4;
  c.price_per_gpu_hour = 1;
  c.admission_token = "token-after-upgrade";
  ASSERT_TRUE((*ledger)->Reserve(c, {}, 0, kNow, 600).ok());
  use = (*ledger)->Use({{"user", "alice", 0}, {"user", "bob", 0}}, 0);
  ASSERT_TRUE(use.ok());
  EXPECT_NEAR((*use)[0].spent, alice_spent, 1e-9);
  EXPECT_NEAR((*use)[0].reserved, 4.0, 1e-9);
  EXPECT_GT((*use)[1].spent, 0);
  ledger->reset();
  // Opening again migrates nothing and changes nothing.
  auto again = Ledger::Open(path);
  ASSERT_TRUE(again.ok());
  auto use_again = (*again)->Use({{"user", "alice", 0}}, 0);
  ASSERT_TRUE(use_again.ok());
  EXPECT_NEAR((*use_again)[0].spent, alice_spent, 1e-9);
}

TEST(SchemaMigrationTest, LedgerOfThePreviousSchemaIsUpgraded) {
  // 7.5 + 12.25 settled, 10 charged to a job that held no reservation.
  ExpectLedgerUpgraded("ledger_unversioned.sql", 29.75);
}

TEST(SchemaMigrationTest, LedgerOfTheFirstReleaseIsUpgraded) {
  ExpectLedgerUpgraded("ledger_first_release.sql", 19.75);
}

void ExpectStoreUpgraded(const std::string& fixture) {
  const std::string path = FromFixture(fixture);
  ASSERT_EQ(VersionOf(path, "store"), 0);
  auto store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(VersionOf(path, "store"), CurrentStoreVersion());
  EXPECT_GE(VersionOf(path, "store"), 2);
  auto old = (*store)->FindDecision("a1b2c3d4");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->strategy, "dp8");
  EXPECT_EQ(old->job_id, 11u);
  auto outcomes = (*store)->Outcomes("a1b2c3d4");
  ASSERT_TRUE(outcomes.ok());
  ASSERT_EQ(outcomes->size(), 1u);
  EXPECT_EQ((*outcomes)[0].step_times_s.size(), 2u);
  ASSERT_TRUE((*store)->RecordJobEnd("a1b2c3d4", 11, "COMPLETED").ok());
  EXPECT_EQ(*(*store)->LearningState("a1b2c3d4"), "used");
  ASSERT_TRUE((*store)->SaveProbeReport("77", "gpu", "/tmp/r.json", true).ok());
}

TEST(SchemaMigrationTest, StoreOfThePreviousSchemaIsUpgraded) {
  ExpectStoreUpgraded("store_unversioned.sql");
}

TEST(SchemaMigrationTest, StoreOfTheFirstReleaseIsUpgraded) {
  ExpectStoreUpgraded("store_first_release.sql");
}

TEST(SchemaMigrationTest, StoreAndLedgerInOneFileKeepTheirOwnVersions) {
  // The daemon's default: [store] path holds both.
  const std::string path = TempDb("shared");
  {
    auto store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto ledger = Ledger::Open(path);
    ASSERT_TRUE(ledger.ok()) << ledger.status();
    EXPECT_EQ(*(*store)->SchemaVersion(), CurrentStoreVersion());
    EXPECT_EQ(*(*ledger)->SchemaVersion(), CurrentLedgerVersion());
  }
  EXPECT_NE(CurrentStoreVersion(), CurrentLedgerVersion()) << "else this test shows nothing";
  EXPECT_TRUE(Ledger::Open(path).ok());
  EXPECT_TRUE(Store::Open(path).ok());
}

TEST(SchemaMigrationTest, ADatabaseOfANewerDaemonIsRefusedUntouched) {
  const std::string path = FromFixture("ledger_unversioned.sql");
  SetVersion(path, "ledger", 999);
  auto ledger = Ledger::Open(path);
  ASSERT_FALSE(ledger.ok());
  EXPECT_EQ(ledger.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(ledger.status().message());
  EXPECT_NE(message.find("schema version 999"), std::string::npos) << message;
  EXPECT_NE(message.find("newer"), std::string::npos) << message;
  EXPECT_EQ(VersionOf(path, "ledger"), 999);

  const std::string store_path = FromFixture("store_unversioned.sql");
  SetVersion(store_path, "store", 999);
  EXPECT_EQ(Store::Open(store_path).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SchemaMigrationTest, AFailingMigrationLeavesTheLastCompleteVersion) {
  const std::string path = TempDb("failing");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const Migration migrations[] = {
      {1, "one table", [](sqlite3* d) { return ExecSql(d, "test", "CREATE TABLE a (x);"); }},
      {2, "a table, then a broken statement",
       [](sqlite3* d) {
         if (absl::Status s = ExecSql(d, "test", "CREATE TABLE b (x);"); !s.ok()) return s;
         return ExecSql(d, "test", "INSERT INTO missing VALUES (1);");
       }},
  };
  absl::Status s = MigrateSchema(db, "test", migrations);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("left at version 1"), std::string::npos) << s;
  EXPECT_EQ(*SchemaVersion(db, "test"), 1);
  // Version 2's first statement was rolled back with it.
  EXPECT_NE(sqlite3_exec(db, "SELECT * FROM b", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "SELECT * FROM a", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

}  // namespace
}  // namespace xdeep::daemon
