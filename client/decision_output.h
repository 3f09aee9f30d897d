// How a decision reaches the user and the application: the one-line summary,
// the explain table (the one renderer behind the plugin's explain mode and
// `xdeep plan`); the variables the training script reads are run_decision.h's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "client/daemon_client.h"

namespace xdeep::client {

// "gpt-125m: dp8 on 2 nodes x 4 GPUs, micro-batch 8 x 4 steps = batch 256; ..."
std::string SummaryLine(const TuneAnswer& answer);

// How much room the explain table has.
struct TableLayout {
  // Columns available per line; 0 = no limit (every column, nothing cut).
  int width = 0;
  // Every column and the full "why", whatever the width.
  bool wide = false;
};

// The columns of a terminal: $COLUMNS when set to a number, else the window
// size of `fd` (TIOCGWINSZ) when it is a terminal, else 0 (not a terminal:
// print everything, a pipe or a file wants the whole table).
int TerminalColumns(int fd);

// The decision and its alternatives as an aligned table, one row per line.
// At `layout.width` the essential columns (strategy, layout, micro-batch x
// accumulation, step time, time to solution, cost, why) always stay; global
// batch, memory and the parallel degrees are added while they fit; "why" is
// cut to the width left. A value a row does not have (a rejected layout that
// was never timed or priced) prints as "-".
std::vector<std::string> ExplainTable(const TuneAnswer& answer, const TableLayout& layout = {});

// The strategy as shown in tables: the strategy name plus "+rc" when
// activations are recomputed, so layouts differing only in that differ here.
std::string StrategyLabel(const LayoutRow& row);

}  // namespace xdeep::client
