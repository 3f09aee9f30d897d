// `xdeep reload` and `xdeep probe`: admin requests to the daemon.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "daemon/cli/cli_context.h"

namespace xdeep::cli {

class ReloadCommand {
 public:
  explicit ReloadCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
};

class ProbeCommand {
 public:
  explicit ProbeCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
  std::string partition_, workload_;
  bool collectives_ = false;
  int nodes_ = 1, gpus_per_node_ = 0;
};

}  // namespace xdeep::cli
