// The user option table: values, bad values, idempotence, environment fallback.
#include "spank_plugin/user_options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace xdeep::spank {
namespace {

TEST(UserOptionsTest, TuneModes) {
  std::string error;
  for (auto [value, mode] :
       std::vector<std::pair<const char*, TuneMode>>{{nullptr, TuneMode::kAuto},
                                                     {"", TuneMode::kAuto},
                                                     {"(null)", TuneMode::kAuto},
                                                     {"auto", TuneMode::kAuto},
                                                     {"advise", TuneMode::kAdvise},
                                                     {"explain", TuneMode::kExplain},
                                                     {"off", TuneMode::kOff}}) {
    UserOptions o;
    ASSERT_TRUE(o.Set(kOptTune, value, &error)) << error;
    EXPECT_EQ(o.mode(), mode) << (value ? value : "null");
  }
  UserOptions o;
  EXPECT_FALSE(o.Set(kOptTune, "fast", &error));
  EXPECT_NE(error.find("--xdeep-tune=fast"), std::string::npos) << error;
}

TEST(UserOptionsTest, CallbacksAreIdempotent) {
  UserOptions o;
  std::string error;
  ASSERT_TRUE(o.Set(kOptTune, "advise", &error));
  ASSERT_TRUE(o.Set(kOptTune, "advise", &error));
  EXPECT_EQ(o.mode(), TuneMode::kAdvise);
}

TEST(UserOptionsTest, RefusesAbsurdNumbers) {
  std::string error;
  for (const char* bad : {"-5", "0", "abc", "1e400", "nan", "12 EUR"}) {
    UserOptions o;
    EXPECT_FALSE(o.Set(kOptBudget, bad, &error)) << bad;
    EXPECT_NE(error.find("--xdeep-budget"), std::string::npos);
  }
  UserOptions o;
  ASSERT_TRUE(o.Set(kOptBudget, "250.5", &error));
  EXPECT_DOUBLE_EQ(o.budget(), 250.5);
  ASSERT_TRUE(o.Set(kOptDeadline, "12", &error));
  EXPECT_DOUBLE_EQ(o.deadline_s(), 12 * 3600);
  EXPECT_FALSE(o.Set(kOptObjective, "speed", &error));
}

TEST(UserOptionsTest, EnvironmentOnlyWhereCommandLineIsSilent) {
  setenv("XDEEP_TUNE", "explain", 1);
  setenv("XDEEP_WORKLOAD", "gpt-1.3b", 1);
  UserOptions o;
  std::string error;
  ASSERT_TRUE(o.Set(kOptTune, "advise", &error));
  o.ApplyTuneEnvironment(&error);
  ASSERT_TRUE(o.ApplyEnvironment(&error)) << error;
  EXPECT_EQ(o.mode(), TuneMode::kAdvise);
  EXPECT_EQ(o.workload(), "gpt-1.3b");

  setenv("XDEEP_BUDGET", "lots", 1);
  UserOptions bad;
  EXPECT_FALSE(bad.ApplyEnvironment(&error));
  EXPECT_NE(error.find("XDEEP_BUDGET=lots is not a valid amount"), std::string::npos) << error;
  EXPECT_NE(error.find("unset XDEEP_BUDGET"), std::string::npos) << error;
  unsetenv("XDEEP_TUNE");
  unsetenv("XDEEP_WORKLOAD");
  unsetenv("XDEEP_BUDGET");
}

TEST(UserOptionsTest, EmptyOrBadXdeepTuneDoesNotTurnTuningOn) {
  setenv("XDEEP_TUNE", "", 1);
  UserOptions empty;
  std::string warning;
  empty.ApplyTuneEnvironment(&warning);
  EXPECT_FALSE(empty.mode().has_value());
  EXPECT_TRUE(warning.empty());
  setenv("XDEEP_TUNE", "sometimes", 1);
  UserOptions bad;
  bad.ApplyTuneEnvironment(&warning);
  EXPECT_FALSE(bad.mode().has_value());
  EXPECT_NE(warning.find("XDEEP_TUNE=sometimes is not a mode"), std::string::npos) << warning;
  unsetenv("XDEEP_TUNE");
}

TEST(UserOptionsTest, EmptyWorkloadVariableNamesItself) {
  setenv("XDEEP_WORKLOAD", "", 1);
  UserOptions o;
  std::string error;
  EXPECT_FALSE(o.ApplyEnvironment(&error));
  EXPECT_NE(error.find("XDEEP_WORKLOAD is empty"), std::string::npos) << error;
  unsetenv("XDEEP_WORKLOAD");
}

TEST(UserOptionsTest, BareTuneIsRemembered) {
  UserOptions o;
  std::string error;
  ASSERT_TRUE(o.Set(kOptTune, nullptr, &error));
  EXPECT_TRUE(o.bare_tune());
  ASSERT_TRUE(o.Set(kOptTune, "auto", &error));
  EXPECT_FALSE(o.bare_tune());
}

}  // namespace
}  // namespace xdeep::spank
