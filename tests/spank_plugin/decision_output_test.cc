// The explain table: fits the width it is given, keeps the essential columns,
// aligns header and data, prints "-" for what a rejected row lacks, and tells
// layouts differing only in recomputation apart.
#include "spank_plugin/decision_output.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace xdeep::spank {
namespace {

LayoutRow Row(const std::string& strategy, int nodes, int gpus, double step, double cost,
              const std::string& why) {
  LayoutRow r;
  r.strategy = strategy;
  r.nodes = nodes;
  r.gpus_per_node = gpus;
  r.tasks = nodes * gpus;
  r.dp = nodes * gpus;
  r.micro_batch = 8;
  r.grad_accumulation = 4;
  r.global_batch = 32LL * nodes * gpus;
  r.step_time_s = step;
  r.time_to_solution_s = step * 10000;
  r.cost = cost;
  r.memory_per_gpu_bytes = step > 0 ? (20LL << 30) : 0;
  r.why = why;
  return r;
}

TuneAnswer Answer() {
  TuneAnswer a;
  a.workload_name = "gpt-1.3b";
  a.hardware_label = "built-in profile h100-sxm";
  a.currency = "EUR";
  a.candidates_evaluated = 4321;
  a.best = Row("fsdp8", 2, 4, 0.4321, 123.45,
               "least cost to solution of 812 feasible configurations (4321 scored, 17 ruled out "
               "by a memory bound): fsdp8 on 2x4 GPUs");
  a.alternatives.push_back(Row("fsdp8", 2, 4, 0.5012, 140.02,
                               "cost: +13.4% cost (time to solution +16.0%)"));
  a.alternatives.back().recompute = true;
  a.alternatives.push_back(Row("dp2xtp2xpp2 (interleaved v2)", 2, 4, 0.61, 170.5,
                               "cost: +38.1% cost (time to solution +41.2%)"));
  // Rejected for memory before it was timed or priced.
  a.alternatives.push_back(
      Row("dp8", 2, 4, 0, 0, "memory: needs 97.3 GiB per GPU, the GPU has 79.6 GiB usable"));
  return a;
}

// Column where `word` starts in the header line (the table's second line).
size_t HeaderColumn(const std::vector<std::string>& lines, const std::string& word) {
  return lines.at(1).find(word);
}

TEST(ExplainTable, FitsHundredColumnsWithTheEssentialColumns) {
  const auto lines = ExplainTable(Answer(), TableLayout{100});
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    EXPECT_LE(lines[i].size(), 100u) << lines[i];
  }
  for (const char* header : {"strategy", "nodes x gpus", "mbs x accum", "step s", "time", "cost",
                             "why"}) {
    EXPECT_NE(HeaderColumn(lines, header), std::string::npos) << header;
  }
  EXPECT_NE(lines[2].find("123.45 EUR"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("2 x 4"), std::string::npos);
  EXPECT_NE(lines[2].find("8 x 4"), std::string::npos);
  EXPECT_NE(lines[2].find("least cost"), std::string::npos);
}

TEST(ExplainTable, WiderTerminalsAddColumnsAndWideShowsAll) {
  const auto narrow = ExplainTable(Answer(), TableLayout{100});
  const auto wider = ExplainTable(Answer(), TableLayout{160});
  const auto wide = ExplainTable(Answer(), TableLayout{100, true});
  EXPECT_EQ(HeaderColumn(narrow, "dp tp pp zero"), std::string::npos);
  EXPECT_NE(HeaderColumn(wider, "mem GiB"), std::string::npos);
  for (const char* header : {"batch", "mem GiB", "dp tp pp zero"}) {
    EXPECT_NE(HeaderColumn(wide, header), std::string::npos) << header;
  }
  // --wide never cuts the reason.
  EXPECT_NE(wide[2].find("fsdp8 on 2x4 GPUs"), std::string::npos) << wide[2];
  EXPECT_NE(narrow[2].find("..."), std::string::npos) << narrow[2];
}

TEST(ExplainTable, HeaderIsAlignedWithTheData) {
  for (int width : {0, 100, 130}) {
    const auto lines = ExplainTable(Answer(), TableLayout{width});
    // Right-aligned numeric column: header and cells end in the same column.
    const size_t cost_end = HeaderColumn(lines, "cost") + 4;
    const size_t cell_end = lines[2].find("123.45 EUR") + 10;
    EXPECT_EQ(cost_end, cell_end) << "width " << width << "\n" << lines[1] << "\n" << lines[2];
    // Left-aligned columns start together.
    EXPECT_EQ(HeaderColumn(lines, "strategy"), lines[2].find("fsdp8"));
    EXPECT_EQ(HeaderColumn(lines, "why"), lines[2].find("least cost"));
  }
}

TEST(ExplainTable, RejectedRowsShowDashesNotZeros) {
  const auto lines = ExplainTable(Answer(), TableLayout{0});
  const std::string& rejected = lines.at(5);
  ASSERT_NE(rejected.find("memory: needs"), std::string::npos) << rejected;
  EXPECT_EQ(rejected.find("0.0000"), std::string::npos) << rejected;
  EXPECT_EQ(rejected.find("0.00 EUR"), std::string::npos) << rejected;
  EXPECT_EQ(rejected.find("0 s"), std::string::npos) << rejected;
  // The dash sits under the cost header's last column.
  EXPECT_EQ(rejected[HeaderColumn(lines, "cost") + 3], '-') << lines[1] << "\n" << rejected;
}

TEST(ExplainTable, RecomputationIsVisible) {
  const auto lines = ExplainTable(Answer(), TableLayout{100});
  const std::string first = lines[2].substr(0, HeaderColumn(lines, "nodes x gpus"));
  const std::string second = lines[3].substr(0, HeaderColumn(lines, "nodes x gpus"));
  EXPECT_NE(first, second);
  EXPECT_NE(second.find("fsdp8+rc"), std::string::npos);
  EXPECT_NE(lines.back().find("+rc"), std::string::npos) << "the legend explains +rc";
}

TEST(ExplainTable, TinyWidthStillShowsEveryEssentialColumn) {
  const auto lines = ExplainTable(Answer(), TableLayout{40});
  EXPECT_NE(HeaderColumn(lines, "cost"), std::string::npos);
  EXPECT_NE(lines[2].find("123.45 EUR"), std::string::npos);
}

TEST(TerminalColumns, ColumnsVariableWinsAndGarbageIsIgnored) {
  setenv("COLUMNS", "123", 1);
  EXPECT_EQ(TerminalColumns(-1), 123);
  setenv("COLUMNS", "12abc", 1);
  EXPECT_EQ(TerminalColumns(-1), 0);  // not a number, and fd -1 is no terminal
  unsetenv("COLUMNS");
  EXPECT_EQ(TerminalColumns(-1), 0);
}

}  // namespace
}  // namespace xdeep::spank
