// Workload files: only regular, bounded, UTF-8 text files are sent.
#include "spank_plugin/workload_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace xdeep::spank {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(WorkloadFileTest, ReadsText) {
  std::string text, error;
  ASSERT_TRUE(ReadWorkloadFile(Write("ok.toml", "name = \"gpt ü\"\n"), &text, &error)) << error;
  EXPECT_EQ(text, "name = \"gpt ü\"\n");
}

TEST(WorkloadFileTest, RefusesWhatIsNotATextFile) {
  std::string text, error;
  EXPECT_FALSE(ReadWorkloadFile(Write("bin.toml", std::string("ab\0cd", 5)), &text, &error));
  EXPECT_NE(error.find("binary data (byte 2)"), std::string::npos) << error;
  EXPECT_FALSE(ReadWorkloadFile(Write("latin1.toml", "name = \"\xe9\"\n"), &text, &error));
  EXPECT_NE(error.find("not UTF-8"), std::string::npos) << error;
  EXPECT_FALSE(ReadWorkloadFile("/dev/zero", &text, &error));
  EXPECT_NE(error.find("a device"), std::string::npos) << error;
  EXPECT_FALSE(ReadWorkloadFile(::testing::TempDir(), &text, &error));
  EXPECT_NE(error.find("a directory"), std::string::npos) << error;
  const std::string fifo = ::testing::TempDir() + "/w.fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(ReadWorkloadFile(fifo, &text, &error)) << "must not wait for a writer";
  EXPECT_NE(error.find("a FIFO"), std::string::npos) << error;
  EXPECT_FALSE(
      ReadWorkloadFile(Write("big.toml", std::string(kMaxWorkloadBytes + 1, 'a')), &text, &error));
  EXPECT_NE(error.find("bytes, more than"), std::string::npos) << error;
  EXPECT_FALSE(ReadWorkloadFile("/nonexistent/w.toml", &text, &error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
}

TEST(WorkloadFileTest, Utf8Edges) {
  EXPECT_EQ(FirstInvalidUtf8("plain"), std::string::npos);
  EXPECT_EQ(FirstInvalidUtf8("\xf0\x9f\x98\x80"), std::string::npos);  // U+1F600
  EXPECT_EQ(FirstInvalidUtf8("a\xc0\xaf"), 1u);                        // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("\xed\xa0\x80"), 0u);                     // a surrogate
  EXPECT_EQ(FirstInvalidUtf8("ab\xe2\x82"), 2u);                       // cut short
}

}  // namespace
}  // namespace xdeep::spank
