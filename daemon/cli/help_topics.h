// `xdeep help [TOPIC]` (strategy names, how to read a plan, objectives) and
// `xdeep presets` (the workloads that can be named instead of a file). Both
// answer locally, without the daemon.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "daemon/cli/cli_context.h"

namespace xdeep::cli {

class HelpCommand {
 public:
  explicit HelpCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* app_;
  CLI::App* command_;
  std::string topic_;
};

class PresetsCommand {
 public:
  explicit PresetsCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
};

}  // namespace xdeep::cli
