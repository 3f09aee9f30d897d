// Strict daemon configuration: values land, and every mistake names file and line.
#include "daemon/config.h"

#include <gtest/gtest.h>

#include <string>

namespace xdeep::daemon {
namespace {

TEST(ConfigTest, EmptyFileGivesDefaults) {
  auto c = ParseDaemonConfig("", "x.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server.listen, "unix:///run/xdeep/xdeepd.sock");
  EXPECT_EQ(c->identity.mode, "munge");
}

TEST(ConfigTest, ReadsEverySection) {
  auto c = ParseDaemonConfig(R"(
[server]
listen = "127.0.0.1:7000"
worker_threads = 2
[store]
path = "/tmp/x.db"
[log]
level = "debug"
[identity]
mode = "none"
[hardware]
profile = "a100-sxm"
probe_reports = ["/a.json", "/b.json"]
[policy]
max_nodes = 8
price_per_gpu_hour = 3
currency = "USD"
[probes]
framework_probe = ["python3", "/opt/xdeep/framework_probe.py"]
)",
                             "x.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server.listen, "127.0.0.1:7000");
  EXPECT_EQ(c->server.worker_threads, 2);
  EXPECT_EQ(c->hardware.probe_reports.size(), 2u);
  EXPECT_DOUBLE_EQ(c->policy.price_per_gpu_hour, 3.0);
  EXPECT_EQ(c->policy.currency, "USD");
  EXPECT_EQ(c->policy.probes.framework_probe,
            (std::vector<std::string>{"python3", "/opt/xdeep/framework_probe.py"}));
}

TEST(ConfigTest, ErrorsNameFileLineAndFix) {
  struct Case {
    std::string text;
    const char* needle;
  };
  for (const Case& k : {
           Case{"[server]\nlisten = \"x\"\nworkers = 3\n", "x.toml:3: unknown key 'workers'"},
           Case{"[server]\n\nworker_threads = \"four\"\n",
                "x.toml:3: [server] worker_threads must be an integer"},
           Case{"[server]\nworker_threads = 0\n",
                "x.toml:2: [server] worker_threads = 0 is out of range"},
           Case{"[servers]\n", "x.toml:1: unknown section [servers]"},
           Case{"[log]\nlevel = \"loud\"\n",
                "x.toml:2: [log] level = \"loud\" is not valid; use one of"},
           Case{"[policy]\nprice_per_gpu_hour = -1\n", "out of range"},
           Case{"server = 3\n", "must be a table"},
           Case{"[probes]\nframework_probe = \"python3 x.py\"\n",
                "x.toml:2: [probes] framework_probe must be an array of strings"},
           Case{"[server\n", "x.toml:1:"},
           Case{"[fabric]\nnics_per_node = 8\nnic_gbps = 400\n",
                "x.toml:3: [fabric] nic_gbps: unknown key; use one of"},
           Case{"[fabric]\noversubscription = 0.5\n",
                "x.toml:2: [fabric] oversubscription: must be from 1 to 64"},
           Case{"[fabric]\nbuiltin = \"torus-9000\"\n",
                "x.toml:2: [fabric] builtin: unknown built-in fabric 'torus-9000'"},
           Case{"[fabric]\ntopology = [\"fat-tree\"]\n",
                "x.toml:2: [fabric] topology must be a number or a string"},
           // Checked before toml++ sees it (tuner/toml_text.h).
           Case{std::string("[\0]", 3), "x.toml:1: column 2: a NUL byte"},
           Case{"[server]\nworker_threads = 1\xC3\xB4\n", "x.toml:2: column 19: character U+00F4"},
       }) {
    auto c = ParseDaemonConfig(k.text, "x.toml");
    ASSERT_FALSE(c.ok()) << k.text;
    EXPECT_NE(std::string(c.status().message()).find(k.needle), std::string::npos)
        << c.status().message();
  }
}

TEST(ConfigTest, SiteFabricAppliesOverTheProfilesDefault) {
  auto c = ParseDaemonConfig(R"([fabric]
builtin = "dgx-a100-superpod"
nics_per_node = 4
oversubscription = 2
)",
                             "x.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  auto hw = tuner::BuiltinHardwareProfile("h100-sxm");
  ASSERT_TRUE(hw.ok());
  EXPECT_EQ(hw->fabric.nics_per_node, 8);
  ApplySiteFabric(c->hardware, &*hw);
  EXPECT_EQ(hw->fabric.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(hw->fabric.nic_gbit, 200);  // from the named built-in
  EXPECT_DOUBLE_EQ(hw->fabric.oversubscription, 2);
  EXPECT_EQ(hw->fabric.name, "site");
}

TEST(ConfigTest, MissingFile) {
  auto c = LoadDaemonConfig("/nonexistent/xdeepd.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("--config"), std::string::npos);
}

}  // namespace
}  // namespace xdeep::daemon
