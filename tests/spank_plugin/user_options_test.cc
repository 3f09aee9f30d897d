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
  ASSERT_TRUE(o.Set(kOptDeadline, "2:00:00", &error)) << error;  // Slurm's --time format
  EXPECT_DOUBLE_EQ(o.deadline_s(), 7200);
  EXPECT_FALSE(o.Set(kOptDeadline, "2:99", &error));
  EXPECT_NE(error.find("--xdeep-deadline"), std::string::npos) << error;
  EXPECT_FALSE(o.Set(kOptObjective, "speed", &error));
}

TEST(UserOptionsTest, CostTolerance) {
  std::string error;
  UserOptions unset;
  EXPECT_FALSE(unset.cost_tolerance_pct().has_value());  // the site's default
  for (const char* bad : {"-1", "1001", "five", "", "5%", "nan"}) {
    UserOptions o;
    EXPECT_FALSE(o.Set(kOptCostTolerance, bad, &error)) << bad;
    EXPECT_NE(error.find("--xdeep-cost-tolerance"), std::string::npos) << error;
    EXPECT_NE(error.find("from 0 to 1000"), std::string::npos) << error;
  }
  for (auto [text, pct] : {std::pair{"0", 0.0}, {"5", 5.0}, {"12.5", 12.5}, {"1000", 1000.0}}) {
    UserOptions o;
    ASSERT_TRUE(o.Set(kOptCostTolerance, text, &error)) << text << ": " << error;
    EXPECT_EQ(o.cost_tolerance_pct(), pct) << text;
  }
  setenv("XDEEP_COST_TOLERANCE", "20", 1);
  UserOptions from_env;
  ASSERT_TRUE(from_env.ApplyEnvironment(&error)) << error;
  EXPECT_EQ(from_env.cost_tolerance_pct(), 20.0);
  UserOptions both;
  ASSERT_TRUE(both.Set(kOptCostTolerance, "1", &error));
  ASSERT_TRUE(both.ApplyEnvironment(&error)) << error;
  EXPECT_EQ(both.cost_tolerance_pct(), 1.0);
  unsetenv("XDEEP_COST_TOLERANCE");
}

TEST(UserOptionsTest, Strategies) {
  std::string error;
  UserOptions o;
  ASSERT_TRUE(o.Set(kOptStrategies, "dp,zero3", &error)) << error;
  EXPECT_EQ(o.strategies(), (std::vector<std::string>{"dp", "zero3"}));
  for (const char* bad : {"", "dp,", ",dp", "dp,,tp", "ddp2", "DP"}) {
    UserOptions b;
    EXPECT_FALSE(b.Set(kOptStrategies, bad, &error)) << bad;
    EXPECT_NE(error.find("--xdeep-strategies"), std::string::npos) << error;
  }
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
