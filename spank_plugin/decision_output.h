// How a decision reaches the user and the application: the one-line summary,
// the explain table, and the XDEEP_* environment the training script reads.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "spank_plugin/daemon_client.h"

namespace xdeep::spank {

// "gpt-125m: dp8 on 2 nodes x 4 GPUs, micro-batch 8 x 4 steps = batch 256; ..."
std::string SummaryLine(const TuneAnswer& answer);

// The decision and its alternatives as an aligned table, one row per line.
std::vector<std::string> ExplainTable(const TuneAnswer& answer);

// XDEEP_* variables for the application (name, value).
std::vector<std::pair<std::string, std::string>> DecisionEnvironment(
    const TuneAnswer& answer, const std::string& report_path);

}  // namespace xdeep::spank
