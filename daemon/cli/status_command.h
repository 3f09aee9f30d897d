// `xdeep status`: whether xdeepd answers, its version (warning in one line
// when it is not this xdeep's), since when it serves and its schema versions.
// Needs no credential: it also checks an installation before MUNGE runs.
#pragma once

#include <CLI/CLI.hpp>

#include "daemon/cli/cli_context.h"

namespace xdeep::cli {

class StatusCommand {
 public:
  explicit StatusCommand(CLI::App& app);
  bool selected() const { return command_->parsed(); }
  int Run(const CliContext& context) const;

 private:
  CLI::App* command_;
};

}  // namespace xdeep::cli
