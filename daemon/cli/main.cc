// xdeep: the command-line tool for users and admins. Each command lives in
// its own file; this only parses and dispatches. Commands that ask the daemon
// carry the caller's MUNGE identity.
//   xdeep plan -w FILE|PRESET [...]    what xdeep would run, and the alternatives
//   xdeep emit FORMAT                  inside a tuned job: the decision for a framework
//   xdeep budget [--user U]            spent / reserved / remaining per period
//   xdeep history [--user U|*]         recent decisions and their outcomes
//   xdeep presets                      workloads that can be named instead of a file
//   xdeep help [strategies|plan|...]   what the names and columns mean
//   xdeep reload                       re-read the daemon's policy (admins)
//   xdeep probe [-p P] [...]           run a probe job through Slurm now (admins)
//   xdeep status                       whether the daemon answers, and its version
#include <CLI/CLI.hpp>
#include <iostream>

#include "daemon/cli/account_commands.h"
#include "daemon/cli/admin_commands.h"
#include "daemon/cli/cli_context.h"
#include "daemon/cli/emit_command.h"
#include "daemon/cli/help_topics.h"
#include "daemon/cli/plan_command.h"
#include "daemon/cli/status_command.h"

int main(int argc, char** argv) {
  using namespace xdeep::cli;
  CLI::App app{"xdeep: plans, budgets and history from the xdeep tuning daemon"};
  app.set_version_flag("--version", "xdeep " XDEEP_VERSION);
  app.require_subcommand(0, 1);
  // Usage errors read like every other xdeep error: one line, then where to look.
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    std::string command = "xdeep";
    for (const CLI::App* sub : failed->get_subcommands()) command += " " + sub->get_name();
    return "xdeep: " + std::string(e.what()) + "; see " + command + " --help\n";
  });
  CliContext context;
  AddCommonOptions(app, &context);

  PlanCommand plan(app);
  EmitCommand emit(app);
  BudgetCommand budget(app);
  HistoryCommand history(app);
  PresetsCommand presets(app);
  HelpCommand help(app);
  ReloadCommand reload(app);
  ProbeCommand probe(app);
  StatusCommand status(app);
  CLI11_PARSE(app, argc, argv);

  if (plan.selected()) return plan.Run(context);
  if (emit.selected()) return emit.Run(context);
  if (budget.selected()) return budget.Run(context);
  if (history.selected()) return history.Run(context);
  if (presets.selected()) return presets.Run(context);
  if (help.selected()) return help.Run(context);
  if (reload.selected()) return reload.Run(context);
  if (probe.selected()) return probe.Run(context);
  if (status.selected()) return status.Run(context);
  // Bare `xdeep`: the help, not an error.
  std::cout << app.help();
  return 0;
}
