// Plugstack arguments: defaults, every key, and strict refusal of the rest.
#include "spank_plugin/plugin_config.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

TEST(PluginConfigTest, DefaultsWithoutArguments) {
  PluginConfig c;
  std::string error;
  ASSERT_TRUE(ParsePluginConfig({}, &c, &error)) << error;
  EXPECT_EQ(c.daemon, "unix:///run/xdeep/xdeepd.sock");
  EXPECT_FALSE(c.default_on);
  EXPECT_FALSE(c.fail_closed);
  EXPECT_EQ(c.timeout_ms, 3000);
}

TEST(PluginConfigTest, EveryKey) {
  PluginConfig c;
  std::string error;
  ASSERT_TRUE(ParsePluginConfig(
      {"daemon=127.0.0.1:5000", "default=on", "timeout_ms=250", "fail=closed"}, &c, &error));
  EXPECT_EQ(c.daemon, "127.0.0.1:5000");
  EXPECT_TRUE(c.default_on);
  EXPECT_EQ(c.timeout_ms, 250);
  EXPECT_TRUE(c.fail_closed);
}

TEST(PluginConfigTest, RefusesAndNamesTheArgument) {
  struct Case {
    std::string arg, needle;
  };
  for (const Case& k : std::vector<Case>{{"colour=red", "unknown argument 'colour'"},
                                         {"timeout_ms=0", "timeout_ms=0 is invalid"},
                                         {"timeout_ms=12x", "timeout_ms=12x is invalid"},
                                         {"timeout_ms=9999999", "timeout_ms=9999999 is invalid"},
                                         {"default=yes", "default=yes is invalid"},
                                         {"fail=maybe", "fail=maybe is invalid"},
                                         {"daemon=", "must be key=value"},
                                         {"verbose", "must be key=value"}}) {
    PluginConfig c;
    c.timeout_ms = 42;
    std::string error;
    EXPECT_FALSE(ParsePluginConfig({k.arg}, &c, &error)) << k.arg;
    EXPECT_NE(error.find(k.needle), std::string::npos) << error;
    EXPECT_EQ(c.timeout_ms, 42) << "a refused line must not half-apply";
  }
}

}  // namespace
}  // namespace xdeep::spank
