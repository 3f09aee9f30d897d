// `xdeep emit FORMAT`: inside a tuned job, the decision file
// ($XDEEP_DECISION_FILE, or --decision FILE) as a framework's configuration
// (framework_config.h); nothing is asked of the daemon.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "daemon/cli/cli_context.h"

namespace xdeep::cli {

class EmitCommand {
 public:
  explicit EmitCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
  std::string format_, file_;
};

}  // namespace xdeep::cli
