// Tics of a logarithmic plot axis: every range gets labelled figures, even one
// inside a single decade (a history of step times between 0.17 and 0.6 s
// carried none before).
#include "daemon/cli/gnuplot_plot.h"

#include <gtest/gtest.h>

namespace xdeep::cli {
namespace {

TEST(LogAxisTics, InsideOneDecadeFinerMantissas) {
  EXPECT_EQ(LogAxisTics(0.167, 0.6), "(0.2, 0.3, 0.4, 0.5, 0.6)");
}

TEST(LogAxisTics, WideRangesKeepAtMostEightTics) {
  EXPECT_EQ(LogAxisTics(0.01, 100), "(0.01, 0.1, 1, 10, 100)");
  const std::string some = LogAxisTics(0.05, 3);
  EXPECT_EQ(some, "(0.05, 0.1, 0.2, 0.5, 1, 2)");
}

}  // namespace
}  // namespace xdeep::cli
