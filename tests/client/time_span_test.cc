// Deadlines in every form a user may type, and the ones refused.
#include "client/time_span.h"

#include <gtest/gtest.h>

namespace xdeep::client {
namespace {

double Seconds(const char* text) {
  double s = -1;
  std::string error;
  EXPECT_TRUE(ParseTimeSpan(text, &s, &error)) << text << ": " << error;
  return s;
}

TEST(ParseTimeSpan, HoursUnitsAndSlurmFormat) {
  EXPECT_DOUBLE_EQ(Seconds("12"), 12 * 3600);
  EXPECT_DOUBLE_EQ(Seconds("1.5"), 5400);
  EXPECT_DOUBLE_EQ(Seconds("90min"), 5400);
  EXPECT_DOUBLE_EQ(Seconds("2h"), 7200);
  EXPECT_DOUBLE_EQ(Seconds("3d"), 3 * 86400);
  EXPECT_DOUBLE_EQ(Seconds("45s"), 45);
  EXPECT_DOUBLE_EQ(Seconds("2:00:00"), 7200);
  EXPECT_DOUBLE_EQ(Seconds("30:15"), 1815);  // Slurm's MM:SS
  EXPECT_DOUBLE_EQ(Seconds("1-12"), 36 * 3600);
  EXPECT_DOUBLE_EQ(Seconds("1-12:30"), 36 * 3600 + 1800);
  EXPECT_DOUBLE_EQ(Seconds("2-00:00:01"), 2 * 86400 + 1);
}

TEST(ParseTimeSpan, RefusesWhatIsNotAPositiveDuration) {
  for (const char* bad : {"", "0", "-3", "abc", "2:60:00", "1-24:00", "1:2:3:4", "h", "nan", "inf",
                          "1e300", "2 h", "::", "1-", "-1-02", "5x"}) {
    double s = 0;
    std::string error;
    EXPECT_FALSE(ParseTimeSpan(bad, &s, &error)) << bad;
    if (*bad) {
      EXPECT_NE(error.find("2:00:00"), std::string::npos) << error;
    }
  }
}

}  // namespace
}  // namespace xdeep::client

namespace xdeep::client {
namespace {

TEST(ParseSlurmTimeLimit, MinutesAndSlurmForms) {
  double s = -1;
  ASSERT_TRUE(ParseSlurmTimeLimit("90", &s));
  EXPECT_DOUBLE_EQ(s, 90 * 60) << "a lone number is minutes, as --time takes it";
  ASSERT_TRUE(ParseSlurmTimeLimit("30:00", &s));
  EXPECT_DOUBLE_EQ(s, 1800);
  ASSERT_TRUE(ParseSlurmTimeLimit("2:00:00", &s));
  EXPECT_DOUBLE_EQ(s, 7200);
  ASSERT_TRUE(ParseSlurmTimeLimit("1-12", &s));
  EXPECT_DOUBLE_EQ(s, 36 * 3600);
  ASSERT_TRUE(ParseSlurmTimeLimit("UNLIMITED", &s));
  EXPECT_DOUBLE_EQ(s, 0);
  for (const char* bad : {"", "abc", "1h", "-5", "1:2:3:4", "1:61"}) {
    EXPECT_FALSE(ParseSlurmTimeLimit(bad, &s)) << bad;
  }
}

}  // namespace
}  // namespace xdeep::client
