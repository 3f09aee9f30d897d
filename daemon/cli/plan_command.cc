// `xdeep plan` (see plan_command.h).
#include "daemon/cli/plan_command.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include "client/daemon_client.h"
#include "client/decision_output.h"
#include "client/time_span.h"
#include "daemon/cli/framework_config.h"
#include "daemon/cli/gnuplot_plot.h"
#include "daemon/cli/json_output.h"

namespace xdeep::cli {

PlanCommand::PlanCommand(CLI::App& app) {
  command_ = app.add_subcommand("plan", "show what xdeep would run and the alternatives");
  command_
      ->add_option("-w,--workload", workload_,
                   "workload TOML file (docs/workload.md) or preset name (xdeep presets)")
      ->required();
  command_->add_option("-N,--nodes", nodes_, "at most this many nodes")
      ->check(CLI::Range(1, 100000));
  command_->add_option("--gpus-per-node", gpus_per_node_, "at most this many GPUs per node")
      ->check(CLI::Range(1, 1024));
  command_->add_option("-n,--ntasks", tasks_, "at most this many GPUs in all")
      ->check(CLI::Range(1, 10000000));
  command_->add_option("-p,--partition", partition_,
                       "the Slurm partition whose nodes and prices count (default: the site's)");
  command_
      ->add_option("--objective", objective_,
                   "least cost (default), least time, least cost within --deadline, or "
                   "least time within --budget")
      ->check(CLI::IsMember({"cost", "time", "deadline", "budget"}));
  command_->add_option("--budget", budget_, "most the job may cost, in the site's currency")
      ->check(CLI::PositiveNumber);
  command_->add_option("--cost-tolerance", cost_tolerance_,
                       "percent over the least cost the default objective may spend for time "
                       "(default: the site's)")
      ->check(CLI::Range(0.0, 1000.0));
  command_->add_option("--deadline", deadline_,
                       "time to solution to meet: hours (12), 90min, 2h or Slurm's 2:00:00 "
                       "(implies --objective deadline)");
  command_->add_option("-t,--time", time_limit_,
                       "each job's time limit, as sbatch --time takes it (minutes, HH:MM:SS, "
                       "D-HH:MM:SS); a longer run is planned as checkpointed segments");
  command_->add_flag("--wide", wide_, "every column and the full reasons, whatever the width");
  command_
      ->add_option("--emit", emit_,
                   "print the decision for a framework instead of the table: json (the "
                   "decision file), torchrun, deepspeed, megatron, lightning, accelerate")
      ->check(CLI::IsMember(EmitFormats()));
  command_
      ->add_option("--launcher", launcher_,
                   "what starts the processes, as --xdeep-launcher (default: the workload's)")
      ->check(CLI::IsMember({"srun", "torchrun", "accelerate", "deepspeed"}));
  command_->add_option("--plot", plot_,
                       "also draw time to solution against cost into FILE (.svg or .png)");
}

int PlanCommand::Run(const CliContext& context) const {
  client::TuneQuery q;
  q.mode = "explain";
  q.launcher = "srun";
  WorkloadArg w;
  if (!ReadWorkloadArg(workload_, &w)) return 1;
  q.workload_toml = w.toml;
  q.workload_preset = w.preset;
  q.workload_source = workload_;
  q.max_nodes = nodes_;
  q.max_gpus_per_node = gpus_per_node_;
  q.max_tasks = tasks_;
  q.partition = partition_;
  q.objective = objective_;
  q.budget = budget_;
  q.cost_tolerance_pct = cost_tolerance_;
  if (!deadline_.empty()) {
    std::string error;
    if (!client::ParseTimeSpan(deadline_, &q.deadline_s, &error))
      return Fail("--deadline: " + error);
    if (q.objective.empty()) q.objective = "deadline";
  }
  if (!time_limit_.empty() && !client::ParseSlurmTimeLimit(time_limit_, &q.time_limit_s)) {
    return Fail("--time " + time_limit_ + ": give minutes (90), HH:MM:SS or D-HH:MM:SS");
  }
  if (q.objective == "deadline" && q.deadline_s <= 0) {
    return Fail("--objective deadline needs --deadline TIME (e.g. --deadline 2:00:00)");
  }
  if (q.objective == "budget" && q.budget <= 0) {
    return Fail("--objective budget needs --budget AMOUNT");
  }

  std::unique_ptr<client::DaemonClient> client = client::ConnectDaemon(context.address);
  client::TuneAnswer answer;
  client::ClientError error;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(context.timeout_ms);
  if (!client->Tune(q, deadline, nullptr, &answer, &error)) {
    return Fail(error.kind == client::ClientError::kUnavailable
                    ? "cannot reach xdeepd at " + context.address + " (" + error.message +
                          "); is it running? set --daemon or XDEEP_DAEMON"
                    : error.message);
  }
  if (!plot_.empty()) {
    std::string plot_error;
    if (answer.skipped || !PlotPlan(answer, plot_, &plot_error)) {
      return Fail("--plot " + plot_ + ": " + (answer.skipped ? answer.skip_reason : plot_error));
    }
  }
  if (!emit_.empty()) {
    if (answer.skipped) return Fail("not tuned: " + answer.skip_reason);
    client::AppLauncher launcher = client::AppLauncher::kSrun;
    client::ParseAppLauncher(launcher_.empty() ? answer.app_launcher : launcher_, &launcher);
    std::string text, error;
    if (!EmitFramework(emit_, client::RunDecisionOf(answer, launcher), nullptr, &text, &error))
      return Fail(error);
    std::cout << text;
    return 0;
  }
  if (context.json) {
    std::cout << PlanJson(answer).dump(2) << "\n";
    return 0;
  }
  if (answer.skipped) {
    std::cout << "not tuned: " << answer.skip_reason << "\n";
    return 0;
  }
  const client::TableLayout layout{client::TerminalColumns(STDOUT_FILENO), wide_};
  for (const std::string& line : client::ExplainTable(answer, layout)) std::cout << line << "\n";
  if (!plot_.empty()) std::cout << "picture: " << plot_ << "\n";
  return 0;
}

}  // namespace xdeep::cli
