// The ledger's budget check does not grow with a user's history: at 100k
// settled reservations it reads the running totals (spent_by_day), at 20k open
// holds their totals (held_by_scope); both agree with summing the rows
// themselves, and an older ledger gains them on open. A whole hold (check,
// insert, durable commit) costs the same at 100k reservations as at 10.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "daemon/ledger.h"

namespace xdeep::daemon {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kNow = 1'790'000'000;  // a fixed "now" (2026-09)

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()) + ".db"))
      .string();
}

void Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "") << " in " << sql;
}

double Query(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  double v = 0;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  return v;
}

// `n` settled reservations of `user`, spread over the 200 days before kNow,
// and a charge without reservation every 10th, written straight into the
// ledger's tables (as a year of use would have) in one transaction.
void FillHistory(const std::string& path, const std::string& user, int n) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  Exec(db, "PRAGMA synchronous=OFF");  // test data: no need to reach the disk
  Exec(db, "BEGIN");
  sqlite3_stmt* res = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO reservations (decision_id, uid, user, account, partition, "
                     "amount, nodes, gpus, price_per_gpu_hour, price_per_node_hour, state, "
                     "created_unix, expires_unix, settled_amount, closed_unix) VALUES "
                     "(?, 1000, ?, 'acct', 'gpu', 2, 1, 4, 1, 0, 'settled', ?, ?, ?, ?)",
                     -1, &res, nullptr);
  sqlite3_stmt* chg = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO job_charges (job_id, start_unix, end_unix, decision_id, uid, "
                     "user, account, partition, nodes, gpus, amount, charged_unix) VALUES "
                     "(?, ?, ?, NULL, 1000, ?, 'acct', 'gpu', 1, 4, 0.5, ?)",
                     -1, &chg, nullptr);
  for (int i = 0; i < n; ++i) {
    const int64_t t = kNow - (static_cast<int64_t>(i) * 200 * kDay) / n;
    const std::string id = user + "-" + std::to_string(i);
    sqlite3_bind_text(res, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(res, 2, user.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(res, 3, t - 3600);
    sqlite3_bind_int64(res, 4, t + kDay);
    sqlite3_bind_double(res, 5, 0.25 * (1 + i % 7));
    sqlite3_bind_int64(res, 6, t);
    ASSERT_EQ(sqlite3_step(res), SQLITE_DONE);
    sqlite3_reset(res);
    if (i % 10 == 0) {
      sqlite3_bind_int64(
          chg, 1, static_cast<int64_t>(std::hash<std::string>()(user) % 1000) * 1'000'000 + i);
      sqlite3_bind_int64(chg, 2, t - 600);
      sqlite3_bind_int64(chg, 3, t);
      sqlite3_bind_text(chg, 4, user.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(chg, 5, t);
      ASSERT_EQ(sqlite3_step(chg), SQLITE_DONE);
      sqlite3_reset(chg);
    }
  }
  sqlite3_finalize(res);
  sqlite3_finalize(chg);
  Exec(db, "COMMIT");
  sqlite3_close(db);
}

// Spent since `start` as the rows themselves say (the definition).
double SpentFromRows(const std::string& path, const std::string& user, int64_t start) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string s = std::to_string(start);
  const double v =
      Query(db, "SELECT (SELECT COALESCE(SUM(settled_amount), 0) FROM reservations WHERE user='" +
                    user + "' AND state='settled' AND closed_unix >= " + s +
                    ") + (SELECT COALESCE(SUM(amount), 0) FROM job_charges WHERE user='" + user +
                    "' AND decision_id IS NULL AND charged_unix >= " + s + ")");
  sqlite3_close(db);
  return v;
}

// Median microseconds of `Use` for `user` over `rounds` calls.
double UseMicros(Ledger& ledger, const std::string& user, int64_t start, int rounds) {
  std::vector<double> us;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto use = ledger.Use({{"user", user, 1e9}}, start);
    const auto t1 = std::chrono::steady_clock::now();
    EXPECT_TRUE(use.ok());
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

TEST(LedgerScaleTest, BudgetCheckIndependentOfHistoryAt100kReservations) {
  const std::string path = TempPath("ledger-scale");
  std::filesystem::remove(path);
  { ASSERT_TRUE(Ledger::Open(path).ok()); }
  FillHistory(path, "heavy", 100'000);
  FillHistory(path, "light", 10);
  auto ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok());
  // Periods starting on a day (monthly, total) and within one (a test clock).
  for (int64_t start : {PeriodStart("monthly", kNow), int64_t{0}, kNow - 40 * kDay + 1234}) {
    auto use = (*ledger)->Use({{"user", "heavy", 1e9}, {"account", "acct", 0}}, start);
    ASSERT_TRUE(use.ok());
    EXPECT_NEAR((*use)[0].spent, SpentFromRows(path, "heavy", start), 1e-6) << start;
  }
  // The same cost for 100k rows as for 10 (a generous bound: a scan of the
  // history, as before the totals, costs hundreds of times more).
  const int64_t month = PeriodStart("monthly", kNow);
  UseMicros(**ledger, "heavy", month, 20);  // warm the page cache
  const double heavy = UseMicros(**ledger, "heavy", month, 200);
  const double light = UseMicros(**ledger, "light", month, 200);
  // What reading the rows themselves costs (the query before the totals).
  const auto t0 = std::chrono::steady_clock::now();
  SpentFromRows(path, "heavy", month);
  const double rows_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "Use(): %.1f us at 100k reservations, %.1f us at 10 (ratio %.2f); summing the 100k rows "
      "themselves: %.0f us\n",
      heavy, light, heavy / light, rows_us);
  EXPECT_LT(heavy, 5 * light + 50);
  // A whole hold as an auto decision makes it (budget check, insert, the
  // triggers' totals, a durable group commit): the same CPU for both users,
  // their holds interleaved (the fsync's wait is the disk's, not the ledger's).
  std::vector<double> hold_us[2];
  const std::string users[2] = {"heavy", "light"};
  for (int i = 0; i < 80; ++i) {
    for (int u = 0; u < 2; ++u) {
      Charge c;
      c.decision_id = users[u] + "-hold-" + std::to_string(i);
      c.uid = 1000;
      c.user = users[u];
      c.account = "acct";
      c.partition = "gpu";
      c.amount = 1;
      c.nodes = 1;
      c.gpus = 4;
      c.admission_token = "tok-" + c.decision_id;
      timespec a{}, b{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
      EXPECT_TRUE((*ledger)->Reserve(c, {{"user", users[u], 1e9}}, month, kNow, 3600).ok());
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
      if (i >= 10)
        hold_us[u].push_back((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
    }
  }
  for (auto& v : hold_us) std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  const double heavy_hold = hold_us[0][hold_us[0].size() / 2];
  const double light_hold = hold_us[1][hold_us[1].size() / 2];
  std::printf("Reserve(): %.0f us CPU at 100k reservations, %.0f us at 10 (ratio %.2f)\n",
              heavy_hold, light_hold, heavy_hold / light_hold);
  EXPECT_LT(heavy_hold, 2 * light_hold + 100);
  ledger->reset();
  std::filesystem::remove(path);
}

TEST(LedgerScaleTest, OlderLedgerGainsTotalsFromItsHistory) {
  const std::string path = TempPath("ledger-backfill");
  std::filesystem::remove(path);
  { ASSERT_TRUE(Ledger::Open(path).ok()); }
  FillHistory(path, "old", 500);
  {
    // As a ledger from before the running totals (schema version 2): none kept.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    Exec(db, "DROP TABLE spent_by_day");
    Exec(db, "UPDATE xdeep_schema SET version = 2 WHERE part = 'ledger'");
    sqlite3_close(db);
  }
  auto ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok());
  const int64_t month = PeriodStart("monthly", kNow);
  auto use = (*ledger)->Use({{"user", "old", 0}}, month);
  ASSERT_TRUE(use.ok());
  EXPECT_GT((*use)[0].spent, 0);
  EXPECT_NEAR((*use)[0].spent, SpentFromRows(path, "old", month), 1e-6);
  // Later settlements keep them current.
  Charge c;
  c.decision_id = "fresh";
  c.uid = 1000;
  c.user = "old";
  c.partition = "gpu";
  c.amount = 3;
  c.nodes = 1;
  c.gpus = 4;
  c.price_per_gpu_hour = 1;
  ASSERT_TRUE((*ledger)->Reserve(c, {}, month, kNow, 600).ok());
  ASSERT_TRUE((*ledger)->Settle("fresh", 1000, 3600, kNow).ok());
  use = (*ledger)->Use({{"user", "old", 0}}, month);
  ASSERT_TRUE(use.ok());
  EXPECT_NEAR((*use)[0].spent, SpentFromRows(path, "old", month), 1e-6);
  ledger->reset();
  std::filesystem::remove(path);
}

// `n` open holds of `user` written straight into the table (as a busy day of
// auto decisions leaves them): every 4th bound to a job with 0.5 charged.
void FillHolds(const std::string& path, const std::string& user, int n) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  Exec(db, "PRAGMA synchronous=OFF");
  Exec(db, "BEGIN");
  sqlite3_stmt* res = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO reservations (decision_id, uid, user, account, partition, "
                     "amount, nodes, gpus, price_per_gpu_hour, price_per_node_hour, state, "
                     "created_unix, expires_unix, settled_amount) VALUES "
                     "(?, 1000, ?, 'acct', 'gpu', ?, 1, 4, 1, 0, ?, ?, ?, ?)",
                     -1, &res, nullptr);
  for (int i = 0; i < n; ++i) {
    const std::string id = user + "-hold-" + std::to_string(i);
    const bool bound = i % 4 == 0;
    sqlite3_bind_text(res, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(res, 2, user.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(res, 3, 0.1 * (1 + i % 9));
    sqlite3_bind_text(res, 4, bound ? "bound" : "reserved", -1, SQLITE_STATIC);
    sqlite3_bind_int64(res, 5, kNow - 60);
    sqlite3_bind_int64(res, 6, kNow + 600);
    sqlite3_bind_double(res, 7, bound ? 0.5 : 0);
    ASSERT_EQ(sqlite3_step(res), SQLITE_DONE);
    sqlite3_reset(res);
  }
  sqlite3_finalize(res);
  Exec(db, "COMMIT");
  sqlite3_close(db);
}

// Open holds of `user` as the rows say: (their amounts, the bound ones' charges).
std::pair<double, double> HeldFromRows(const std::string& path, const std::string& user) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string where = " FROM reservations WHERE user='" + user + "' AND state IN ";
  const double held = Query(db, "SELECT COALESCE(SUM(amount), 0)" + where + "('reserved','bound')");
  const double charged = Query(db, "SELECT COALESCE(SUM(settled_amount), 0)" + where + "('bound')");
  sqlite3_close(db);
  return {held, charged};
}

TEST(LedgerScaleTest, OpenHoldsReadFromTotalsAt20kHolds) {
  const std::string path = TempPath("ledger-holds");
  std::filesystem::remove(path);
  { ASSERT_TRUE(Ledger::Open(path).ok()); }
  FillHolds(path, "busy", 20'000);
  FillHolds(path, "quiet", 10);
  auto ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok());
  auto check = [&](const char* when) {
    auto use = (*ledger)->Use({{"user", "busy", 1e9}}, 0);
    ASSERT_TRUE(use.ok());
    const auto [held, charged] = HeldFromRows(path, "busy");
    EXPECT_NEAR((*use)[0].reserved, held, 1e-6) << when;
    EXPECT_NEAR((*use)[0].spent, charged + SpentFromRows(path, "busy", 0), 1e-6) << when;
  };
  check("written");
  // Holds released, expired and settled through the ledger keep them current.
  for (int i = 1; i < 400; i += 4)
    ASSERT_TRUE((*ledger)->Release("busy-hold-" + std::to_string(i), 1000, kNow).ok());
  check("released");
  ASSERT_TRUE((*ledger)->Settle("busy-hold-2", 1000, 3600, kNow).ok());
  check("settled");
  ASSERT_TRUE((*ledger)->ExpireStale(kNow + 3600).ok());
  check("expired");
  auto use = (*ledger)->Use({{"user", "busy", 1e9}}, 0);
  ASSERT_TRUE(use.ok());
  EXPECT_EQ((*use)[0].reserved, 0) << "no hold open: exactly zero, whatever the rounding";

  // The cost at 20k open holds against 10.
  FillHolds(path, "busy2", 20'000);
  UseMicros(**ledger, "busy2", 0, 20);
  const double busy = UseMicros(**ledger, "busy2", 0, 200);
  const double quiet = UseMicros(**ledger, "quiet", 0, 200);
  std::printf("Use(): %.1f us at 20k open holds, %.1f us at 10 (ratio %.2f)\n", busy, quiet,
              busy / quiet);
  EXPECT_LT(busy, 5 * quiet + 50);

  // A ledger from before the hold totals (schema version 3) gains them from its open holds.
  ledger->reset();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    Exec(db, "DROP TABLE held_by_scope");
    Exec(db, "UPDATE xdeep_schema SET version = 3 WHERE part = 'ledger'");
    sqlite3_close(db);
  }
  ledger = Ledger::Open(path);
  ASSERT_TRUE(ledger.ok());
  use = (*ledger)->Use({{"user", "busy2", 1e9}}, 0);
  ASSERT_TRUE(use.ok());
  EXPECT_NEAR((*use)[0].reserved, HeldFromRows(path, "busy2").first, 1e-6);
  ledger->reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace xdeep::daemon
