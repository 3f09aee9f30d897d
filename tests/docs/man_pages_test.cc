// The section-5 man pages document every key the parsers accept: each
// parser is asked, with a key it cannot know, which keys it takes (its
// "use one of: ..." fix), and every such key must be named in the page.
// All pages in docs/man/ render without a groff warning.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "tuner/workload.h"

namespace xdeep {
namespace {

const std::string kManDir = XDEEP_MAN_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Keys listed after "use one of" in a parser's message ("a, b, c" or "[a], [b]").
std::vector<std::string> KeysInFix(const std::string& message) {
  const size_t at = message.find("use one of");
  EXPECT_NE(at, std::string::npos) << "no list of keys in: " << message;
  std::vector<std::string> keys;
  if (at == std::string::npos) return keys;
  const std::regex word("[a-z][a-z0-9_]*");
  const std::string list = message.substr(at + 10);
  for (std::sregex_iterator it(list.begin(), list.end(), word), end; it != end; ++it) {
    keys.push_back(it->str());
  }
  return keys;
}

// A key is documented when the page sets it in bold as a term
// (".B key", ".BR key ...", ".BR a \", \" key" or "\fBkey\fR"; a table as "[key]").
bool PageNames(const std::string& page, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '_' || c == '-') escaped += "\\\\?";
    escaped += c;
  }
  const std::regex term("(^\\.BR? |\\\\fB|\\.BR [^\\n]*\" )\\[?" + escaped + "\\b",
                        std::regex::multiline);
  return std::regex_search(page, term);
}

std::string WorkloadError(const std::string& toml) {
  auto w = tuner::ParseWorkloadToml(toml, "probe.toml");
  EXPECT_FALSE(w.ok()) << toml;
  return w.ok() ? "" : std::string(w.status().message());
}

std::string ConfigError(const std::string& toml) {
  auto c = daemon::ParseDaemonConfig(toml, "probe.toml");
  EXPECT_FALSE(c.ok()) << toml;
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(ManPages, WorkloadPageNamesEveryKey) {
  const std::string page = ReadFile(kManDir + "/xdeep.toml.5");
  ASSERT_FALSE(page.empty());
  const std::string model = "[model]\npreset = \"gpt-125m\"\n";
  const std::vector<std::string> probes = {
      "zz_unknown = 1\n" + model,
      "[model]\npreset = \"gpt-125m\"\nzz_unknown = 1\n",
      model + "[training]\nzz_unknown = 1\n",
      model + "[batch]\nzz_unknown = 1\n",
      model + "[parallel]\nzz_unknown = 1\n",
  };
  std::set<std::string> keys;
  for (const std::string& toml : probes) {
    for (const std::string& key : KeysInFix(WorkloadError(toml))) keys.insert(key);
  }
  EXPECT_GT(keys.size(), 50u) << "the parser lists fewer keys than expected";
  for (const std::string& key : keys) {
    EXPECT_TRUE(PageNames(page, key)) << "docs/man/xdeep.toml.5 does not name '" << key << "'";
  }
}

TEST(ManPages, DaemonConfigPageNamesEverySectionAndKey) {
  const std::string page = ReadFile(kManDir + "/xdeepd.toml.5");
  ASSERT_FALSE(page.empty());
  std::set<std::string> sections;
  for (const std::string& s : KeysInFix(ConfigError("[zz_unknown]\nx = 1\n"))) sections.insert(s);
  EXPECT_GE(sections.size(), 9u);
  std::set<std::string> keys;
  for (const std::string& section : sections) {
    EXPECT_NE(page.find(".SH \"[" + section), std::string::npos)
        << "docs/man/xdeepd.toml.5 has no section [" << section << "]";
    std::string toml = "[" + section + "]\nzz_unknown = 1\n";
    for (const std::string& key : KeysInFix(ConfigError(toml))) keys.insert(key);
  }
  // Tables inside tables: a partition's overrides, one user's and one account's budget.
  for (const std::string& table : {"[policy.partition.gpu]\n", "[budget.user.alice]\nlimit = 1\n",
                                   "[budget.account.physics]\nlimit = 1\n"}) {
    const std::string message = ConfigError(table + "zz_unknown = 1\n");
    if (message.find("use one of") == std::string::npos) continue;  // no list: no keys
    for (const std::string& key : KeysInFix(message)) keys.insert(key);
  }
  keys.insert({"limit", "members"});
  EXPECT_GT(keys.size(), 50u) << "the parser lists fewer keys than expected";
  for (const std::string& key : keys) {
    EXPECT_TRUE(PageNames(page, key)) << "docs/man/xdeepd.toml.5 does not name '" << key << "'";
  }
}

TEST(ManPages, EveryPageRendersWithoutWarnings) {
  int pages = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kManDir)) {
    const std::string path = entry.path().string();
    ++pages;
    // -ww: every warning; -z: no output, only the diagnostics (on stderr, kept).
    const std::string command = "groff -man -ww -z '" + path + "' 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    std::array<char, 512> buf;
    while (fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
    const int status = pclose(pipe);
    EXPECT_EQ(status, 0) << path << ": groff failed (is groff-base installed?)\n" << out;
    EXPECT_EQ(out, "") << path << " renders with warnings";
  }
  EXPECT_EQ(pages, 4) << "xdeep.1, xdeepd.8, xdeep.toml.5, xdeepd.toml.5";
}

}  // namespace
}  // namespace xdeep
