// `xdeep budget`, `xdeep history` (see account_commands.h).
#include "daemon/cli/account_commands.h"

#include <cstdio>
#include <iostream>

#include "client/munge_credential.h"
#include "daemon/cli/gnuplot_plot.h"
#include "daemon/cli/json_output.h"

namespace xdeep::cli {
namespace {

// The most decisions one request asks for (the --limit bound).
constexpr int kMostDecisions = 10000;

}  // namespace

BudgetCommand::BudgetCommand(CLI::App& app) {
  command_ = app.add_subcommand("budget", "spent, reserved and remaining budget per period");
  command_->add_option("-u,--user", user_, "another user (admins only)");
}

int BudgetCommand::Run(const CliContext& context) const {
  v1::BudgetRequest req;
  req.set_credential(client::MungeCredential());
  req.set_user(user_);
  v1::BudgetResponse resp;
  grpc::ClientContext ctx;
  context.SetDeadline(&ctx);
  grpc::Status s = context.Stub()->GetBudget(&ctx, req, &resp);
  if (!s.ok()) return Fail(s, context);
  if (context.json) {
    std::cout << BudgetJson(resp).dump(2) << "\n";
    return 0;
  }
  std::printf("%-8s %-16s %-8s %-17s %12s %12s %12s %12s\n", "scope", "name", "period", "since",
              "limit", "spent", "reserved", "remaining");
  for (const v1::BudgetLine& l : resp.lines()) {
    char limit[32] = "none", remaining[32] = "-";
    if (l.limit() > 0) {
      std::snprintf(limit, sizeof limit, "%.2f", l.limit());
      std::snprintf(remaining, sizeof remaining, "%.2f", l.remaining());
    }
    std::printf("%-8s %-16s %-8s %-17s %12s %12.2f %12.2f %12s\n", l.scope().c_str(),
                l.name().c_str(), l.period().c_str(), Day(l.period_start_unix()).c_str(), limit,
                l.spent(), l.reserved(), remaining);
  }
  std::printf("amounts in %s\n", resp.currency().c_str());
  return 0;
}

HistoryCommand::HistoryCommand(CLI::App& app) {
  command_ = app.add_subcommand("history", "recent decisions, predicted against measured");
  command_->add_option("-u,--user", user_, "another user, or '*' for everyone (admins only)");
  command_->add_option("-l,--limit", limit_, "at most this many decisions, newest first")
      ->check(CLI::Range(1, kMostDecisions));
  command_->add_flag("--launched", launched_,
                     "only decisions that ran as a Slurm job (no plans or explains)");
  command_->add_option("--workload", workload_, "only decisions for this workload name");
  command_->add_option("--state", state_, "only decisions in this state")
      ->check(CLI::IsMember({"none", "reserved", "bound", "settled", "released", "expired"}));
  command_->add_option("--plot", plot_,
                       "also draw predicted against measured step time into FILE (.svg or .png)");
  command_->add_option("--forget", forget_,
                       "decision id (or its first 8+ characters): its runs stop correcting "
                       "predictions (owner or admin; docs/learning.md)");
}

int HistoryCommand::Run(const CliContext& context) const {
  if (!forget_.empty()) {
    v1::ForgetRunsRequest forget;
    forget.set_credential(client::MungeCredential());
    forget.set_decision_id(forget_);
    v1::ForgetRunsResponse forgotten;
    grpc::ClientContext forget_ctx;
    context.SetDeadline(&forget_ctx);
    grpc::Status fs = context.Stub()->ForgetRuns(&forget_ctx, forget, &forgotten);
    if (!fs.ok()) return Fail(fs, context);
    std::printf("decision %s: %d reported run(s) no longer correct predictions\n",
                forgotten.decision_id().c_str(), forgotten.outcomes());
    return 0;
  }
  v1::ListDecisionsRequest req;
  req.set_credential(client::MungeCredential());
  req.set_user(user_);
  // Filters apply here, so ask for the most the daemon gives, then keep --limit.
  const bool filtered = launched_ || !workload_.empty() || !state_.empty();
  req.set_limit(filtered ? kMostDecisions : limit_);
  v1::ListDecisionsResponse all;
  grpc::ClientContext ctx;
  context.SetDeadline(&ctx);
  grpc::Status s = context.Stub()->ListDecisions(&ctx, req, &all);
  if (!s.ok()) return Fail(s, context);
  v1::ListDecisionsResponse resp;
  for (const v1::DecisionSummary& d : all.decisions()) {
    if (resp.decisions_size() >= limit_) break;
    if (launched_ && d.job_id() == 0) continue;
    if (!workload_.empty() && d.workload() != workload_) continue;
    if (!state_.empty() && d.state() != state_) continue;
    *resp.add_decisions() = d;
  }
  if (!plot_.empty()) {
    std::string error;
    if (!PlotHistory(resp, plot_, &error)) return Fail("--plot " + plot_ + ": " + error);
  }
  if (context.json) {
    std::cout << HistoryJson(resp).dump(2) << "\n";
    return 0;
  }
  std::printf("%-16s %-12s %-10s %-14s %-20s %5s %5s %8s %10s %10s %9s %9s  %s\n", "when",
              "decision", "user", "workload", "strategy", "nodes", "gpu/n", "job", "state", "cost",
              "pred s", "meas s", "learning");
  for (const v1::DecisionSummary& d : resp.decisions()) {
    char job[16] = "-", measured[16] = "-";
    if (d.job_id() > 0) std::snprintf(job, sizeof job, "%u", d.job_id());
    if (d.measured_step_time_s() > 0) {
      std::snprintf(measured, sizeof measured, "%.4f", d.measured_step_time_s());
    }
    std::printf("%-16s %-12s %-10s %-14s %-20s %5d %5d %8s %10s %10.2f %9.4f %9s  %s\n",
                Day(d.created_unix()).c_str(), d.decision_id().substr(0, 12).c_str(),
                d.user().c_str(), d.workload().c_str(), d.strategy().c_str(), d.nodes(),
                d.gpus_per_node(), job, d.state().c_str(),
                d.state() == "settled" ? d.settled_cost() : d.predicted_cost(),
                d.predicted_step_time_s(), measured, d.learning().c_str());
  }
  if (!plot_.empty()) std::printf("picture: %s\n", plot_.c_str());
  return 0;
}

}  // namespace xdeep::cli
