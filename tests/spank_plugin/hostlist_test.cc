// Slurm host lists expanded.
#include "spank_plugin/hostlist.h"

#include <gtest/gtest.h>

namespace xdeep::spank {
namespace {

using Names = std::vector<std::string>;

TEST(HostlistTest, Expands) {
  EXPECT_EQ(*ExpandHostlist("n1"), Names{"n1"});
  EXPECT_EQ(*ExpandHostlist("n[1-3],x"), (Names{"n1", "n2", "n3", "x"}));
  EXPECT_EQ(*ExpandHostlist("gpu[08-10,12]"), (Names{"gpu08", "gpu09", "gpu10", "gpu12"}));
  EXPECT_EQ(*ExpandHostlist("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
}

TEST(HostlistTest, RefusesMalformedAndHuge) {
  for (const char* bad : {"n[1-", "n[a-b]", "n[3-1]", "", "n1,,n2", "n]"}) {
    EXPECT_FALSE(ExpandHostlist(bad).has_value()) << bad;
  }
  EXPECT_FALSE(ExpandHostlist("n[1-999999999]").has_value());
}

}  // namespace
}  // namespace xdeep::spank
