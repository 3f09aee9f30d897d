// `xdeep plan`: what xdeep would run for a workload and the alternatives, as
// the explain table, JSON or a picture; nothing is launched.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "daemon/cli/cli_context.h"

namespace xdeep::cli {

class PlanCommand {
 public:
  explicit PlanCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
  std::string workload_, objective_, partition_, deadline_, plot_, emit_, launcher_;
  int nodes_ = 0, gpus_per_node_ = 0, tasks_ = 0;
  double budget_ = 0;
  double cost_tolerance_ = -1;  // < 0: the site's default
  bool wide_ = false;
};

}  // namespace xdeep::cli
