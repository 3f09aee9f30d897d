// Pictures for `xdeep plan --plot` and `xdeep history --plot`, drawn by
// gnuplot (Debian gnuplot-nox): the CLI writes the data and a script into a
// temporary directory and runs gnuplot on them. The format follows the file
// name (.svg or .png); the picture appears under its name only when complete.
#pragma once

#include <string>

#include "client/daemon_client.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::cli {

// Time to solution against cost, one series per strategy, the Pareto front of
// the layouts shown and the chosen one marked. False and `error` on failure.
bool PlotPlan(const client::TuneAnswer& answer, const std::string& path, std::string* error);

// Predicted against measured step time of the decisions that ran, one series
// per workload, with the line where they agree.
bool PlotHistory(const v1::ListDecisionsResponse& history, const std::string& path,
                 std::string* error);

// gnuplot's tic list "(0.2, 0.3, 0.5)" for a logarithmic axis over [lo, hi]
// (lo > 0): gnuplot alone labels only powers of ten, so an axis inside one
// decade would carry no figure. At most 8 tics, mantissas 1-2-5 or finer.
std::string LogAxisTics(double lo, double hi);

}  // namespace xdeep::cli
