// The explain table: fits the width it is given, keeps the essential columns,
// aligns header and data, prints "-" for what a rejected row lacks, and tells
// layouts differing only in recomputation apart.
#include "client/decision_output.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace xdeep::client {
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
  a.alternatives.push_back(
      Row("fsdp8", 2, 4, 0.5012, 140.02, "cost: +13.4% cost (time to solution +16.0%)"));
  a.alternatives.back().recompute = true;
  a.alternatives.push_back(Row("dp2xtp2xpp2 (interleaved v2)", 2, 4, 0.61, 170.5,
                               "cost: +38.1% cost (time to solution +41.2%)"));
  // Rejected for memory before it was timed or priced.
  a.alternatives.push_back(
      Row("dp8", 2, 4, 0, 0, "memory: needs 97.3 GiB per GPU, the GPU has 79.6 GiB usable"));
  return a;
}

// The table proper: its header line and the rows after it (the heading above
// may wrap over several lines).
struct Table {
  std::vector<std::string> all;
  size_t header = 0;
  const std::string& Header() const { return all.at(header); }
  const std::string& Row(size_t i) const { return all.at(header + 1 + i); }
  std::string Joined() const {
    std::string text;
    for (const std::string& l : all) text += l + " ";
    return text;
  }
};

Table Render(const TableLayout& layout) {
  Table t{ExplainTable(Answer(), layout)};
  while (t.header < t.all.size() && t.all[t.header].rfind("  strategy", 0) != 0) ++t.header;
  EXPECT_LT(t.header, t.all.size()) << "no header line";
  return t;
}

TEST(ExplainTable, FitsHundredColumnsWithTheEssentialColumns) {
  const Table t = Render(TableLayout{100});
  for (const std::string& line : t.all) EXPECT_LE(line.size(), 100u) << line;
  for (const char* header :
       {"strategy", "nodes x gpus", "mbs x acc", "step s", "time", "cost", "why"}) {
    EXPECT_NE(t.Header().find(header), std::string::npos) << header;
  }
  EXPECT_NE(t.Row(0).find("123.45 EUR"), std::string::npos) << t.Row(0);
  EXPECT_NE(t.Row(0).find("2 x 4"), std::string::npos);
  EXPECT_NE(t.Row(0).find("8 x 4"), std::string::npos);
  EXPECT_NE(t.Row(0).find("least"), std::string::npos);
  // The chosen layout's reason, cut in its row, follows in full.
  EXPECT_NE(t.Joined().find("bound): fsdp8 on 2x4 GPUs"), std::string::npos) << t.Joined();
}

TEST(ExplainTable, WiderTerminalsAddColumnsAndWideShowsAll) {
  const Table narrow = Render(TableLayout{100});
  const Table wider = Render(TableLayout{170});
  const Table wide = Render(TableLayout{100, true});
  EXPECT_EQ(narrow.Header().find("mem GiB"), std::string::npos);
  EXPECT_EQ(narrow.Header().find("dp tp pp zero"), std::string::npos);
  EXPECT_NE(wider.Header().find("mem GiB"), std::string::npos);
  for (const std::string& line : wider.all) EXPECT_LE(line.size(), 170u) << line;
  for (const char* header : {"batch", "mem GiB", "dp tp pp zero"}) {
    EXPECT_NE(wide.Header().find(header), std::string::npos) << header;
  }
  // --wide never cuts the reason.
  EXPECT_NE(wide.Row(0).find("fsdp8 on 2x4 GPUs"), std::string::npos) << wide.Row(0);
  EXPECT_NE(narrow.Row(0).find("..."), std::string::npos) << narrow.Row(0);
}

TEST(ExplainTable, HeaderIsAlignedWithTheData) {
  for (int width : {0, 100, 130, 200}) {
    const Table t = Render(TableLayout{width});
    // Right-aligned numeric column: header and cells end in the same column.
    const size_t cost_end = t.Header().find("cost") + 4;
    const size_t cell_end = t.Row(0).find("123.45 EUR") + 10;
    EXPECT_EQ(cost_end, cell_end) << "width " << width << "\n" << t.Header() << "\n" << t.Row(0);
    // Left-aligned columns start together.
    EXPECT_EQ(t.Header().find("strategy"), t.Row(0).find("fsdp8"));
    EXPECT_EQ(t.Header().find("why"), t.Row(0).find("least"));
    EXPECT_EQ(t.Header().find("why"), t.Row(1).find("cost: +"));
  }
}

TEST(ExplainTable, RejectedRowsShowDashesNotZeros) {
  const Table t = Render(TableLayout{0});
  const std::string& rejected = t.Row(3);
  ASSERT_NE(rejected.find("memory: needs"), std::string::npos) << rejected;
  EXPECT_EQ(rejected.find("0.0000"), std::string::npos) << rejected;
  EXPECT_EQ(rejected.find("0.00 EUR"), std::string::npos) << rejected;
  EXPECT_EQ(rejected.find("0 s"), std::string::npos) << rejected;
  // The dash sits under the cost header's last column.
  EXPECT_EQ(rejected[t.Header().find("cost") + 3], '-') << t.Header() << "\n" << rejected;
}

TEST(ExplainTable, RecomputationIsVisible) {
  const Table t = Render(TableLayout{100});
  const size_t layout_column = t.Header().find("nodes x gpus");
  EXPECT_NE(t.Row(0).substr(0, layout_column), t.Row(1).substr(0, layout_column));
  EXPECT_NE(t.Row(1).find("fsdp8+rc"), std::string::npos);
  EXPECT_NE(t.Joined().find("+rc: activations recomputed"), std::string::npos)
      << "the legend explains +rc";
}

TEST(ExplainTable, TinyWidthStillShowsEveryEssentialColumn) {
  const Table t = Render(TableLayout{40});
  EXPECT_NE(t.Header().find("cost"), std::string::npos);
  EXPECT_NE(t.Row(0).find("123.45 EUR"), std::string::npos);
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
}  // namespace xdeep::client
