// `xdeep budget` and `xdeep history`: what the caller (or, for admins, any
// user) has spent and reserved, and the decisions made for them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "daemon/cli/cli_context.h"

namespace xdeep::cli {

class BudgetCommand {
 public:
  explicit BudgetCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
  std::string user_;
};

class HistoryCommand {
 public:
  explicit HistoryCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
  std::string user_, plot_, workload_, state_, forget_;
  int limit_ = 20;
  bool launched_ = false;
};

}  // namespace xdeep::cli
