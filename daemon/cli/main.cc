// xdeep: the command-line tool for users and admins. It talks to xdeepd with
// the caller's MUNGE identity:
//   xdeep plan --workload FILE [...]   what xdeep would run, and the alternatives
//   xdeep budget [--user U]            spent / reserved / remaining per period
//   xdeep history [--user U|*]         recent decisions and their outcomes
//   xdeep history --forget ID          stop a decision's runs from correcting predictions
//   xdeep reload                       re-read the daemon's policy (admins)
//   xdeep probe [-p P] [...]           run a probe job through Slurm now (admins)
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "spank_plugin/daemon_client.h"
#include "spank_plugin/decision_output.h"
#include "spank_plugin/munge_credential.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace {

namespace v1 = xdeep::v1;
using xdeep::spank::MungeCredential;

int Fail(const std::string& what) {
  std::cerr << "xdeep: " << what << "\n";
  return 1;
}

int Fail(const grpc::Status& s, const std::string& address) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
      s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Fail("cannot reach xdeepd at " + address + " (" + s.error_message() +
                "); is it running? set --daemon or XDEEP_DAEMON");
  }
  return Fail(s.error_message());
}

std::string Day(int64_t unix_time) {
  std::time_t t = static_cast<std::time_t>(unix_time);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M", std::gmtime(&t));
  return buffer;
}

void Deadline(grpc::ClientContext* ctx, int timeout_ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
}

// A -w argument: a TOML file's text, else a preset name; false (with the
// message printed) when it names a file that is not there.
struct WorkloadArg {
  std::string toml, preset;
};
bool ReadWorkloadArg(const std::string& arg, WorkloadArg* out) {
  std::ifstream in(arg);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    out->toml = text.str();
  } else if (arg.find('/') != std::string::npos || arg.ends_with(".toml")) {
    Fail(arg + " does not exist; check the path");
    return false;
  } else {
    out->preset = arg;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xdeep: plans, budgets and history from the xdeep tuning daemon"};
  app.require_subcommand(1);
  const char* env_address = std::getenv("XDEEP_DAEMON");
  std::string address = env_address ? env_address : "unix:///run/xdeep/xdeepd.sock";
  int timeout_ms = 10000;
  app.add_option("--daemon", address, "xdeepd address (env XDEEP_DAEMON)");
  app.add_option("--timeout-ms", timeout_ms, "longest wait for an answer")
      ->check(CLI::Range(1, 600000));

  auto* plan = app.add_subcommand("plan", "show what xdeep would run and the alternatives");
  std::string workload, objective, partition;
  int nodes = 0, gpus_per_node = 0, tasks = 0;
  double budget = 0;
  plan->add_option("-w,--workload", workload, "workload TOML file or preset name")->required();
  plan->add_option("-N,--nodes", nodes, "at most this many nodes")->check(CLI::Range(1, 100000));
  plan->add_option("--gpus-per-node", gpus_per_node)->check(CLI::Range(1, 1024));
  plan->add_option("-n,--ntasks", tasks, "at most this many GPUs")->check(CLI::Range(1, 10000000));
  plan->add_option("-p,--partition", partition);
  plan->add_option("--objective", objective)
      ->check(CLI::IsMember({"cost", "time", "deadline", "budget"}));
  plan->add_option("--budget", budget)->check(CLI::PositiveNumber);
  double cost_tolerance = -1;
  plan->add_option("--cost-tolerance", cost_tolerance,
                   "percent over the least cost the default objective may spend for time "
                   "(default: the site's)")
      ->check(CLI::Range(0.0, 1000.0));

  std::string user;
  auto* budget_cmd = app.add_subcommand("budget", "spent, reserved and remaining budget");
  budget_cmd->add_option("-u,--user", user, "another user (admins only)");
  auto* history = app.add_subcommand("history", "recent decisions and their outcomes");
  int limit = 20;
  history->add_option("-u,--user", user, "another user, or '*' for everyone (admins only)");
  history->add_option("-l,--limit", limit)->check(CLI::Range(1, 10000));
  std::string forget;
  history->add_option("--forget", forget,
                      "decision id (or its first 8+ characters): its runs stop correcting "
                      "predictions (owner or admin)");
  auto* reload = app.add_subcommand("reload", "re-read the daemon's policy (admins only)");
  auto* probe = app.add_subcommand("probe", "run a probe job through Slurm now (admins only)");
  std::string probe_partition;
  bool collectives = false;
  int probe_nodes = 1, probe_gpus = 0;
  probe->add_option("-p,--partition", probe_partition, "default: [probes] partition");
  std::string probe_workload;
  probe->add_option("-w,--workload", probe_workload,
                    "compute set: measure this workload's GEMM shapes (TOML file or preset name)");
  probe->add_flag("--collectives", collectives, "NCCL collectives instead of the compute set");
  probe->add_option("-N,--nodes", probe_nodes)->check(CLI::Range(1, 100000));
  probe->add_option("--gpus-per-node", probe_gpus, "0: the CPU (Kokkos) suite")
      ->check(CLI::Range(0, 1024));
  CLI11_PARSE(app, argc, argv);

  auto tuning =
      v1::Tuning::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));

  if (*plan) {
    xdeep::spank::TuneQuery q;
    q.mode = "explain";
    q.launcher = "srun";
    WorkloadArg w;
    if (!ReadWorkloadArg(workload, &w)) return 1;
    q.workload_toml = w.toml;
    q.workload_preset = w.preset;
    q.workload_source = workload;
    q.max_nodes = nodes;
    q.max_gpus_per_node = gpus_per_node;
    q.max_tasks = tasks;
    q.partition = partition;
    q.objective = objective;
    q.budget = budget;
    q.cost_tolerance_pct = cost_tolerance;
    std::unique_ptr<xdeep::spank::DaemonClient> client(xdeep_spank_client_create(address.c_str()));
    xdeep::spank::TuneAnswer answer;
    xdeep::spank::ClientError error;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    if (!client->Tune(q, deadline, nullptr, &answer, &error)) {
      return Fail(error.kind == xdeep::spank::ClientError::kUnavailable
                      ? "cannot reach xdeepd at " + address + " (" + error.message + ")"
                      : error.message);
    }
    for (const std::string& line : xdeep::spank::ExplainTable(answer)) std::cout << line << "\n";
    return 0;
  }

  if (*budget_cmd) {
    v1::BudgetRequest req;
    req.set_credential(MungeCredential());
    req.set_user(user);
    v1::BudgetResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, timeout_ms);
    grpc::Status s = tuning->GetBudget(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, address);
    std::printf("%-8s %-16s %-8s %-17s %12s %12s %12s %12s\n", "scope", "name", "period", "since",
                "limit", "spent", "reserved", "remaining");
    for (const v1::BudgetLine& l : resp.lines()) {
      std::string limit_text = l.limit() > 0 ? std::to_string(l.limit()) : "none";
      char remaining[32] = "-";
      if (l.limit() > 0) std::snprintf(remaining, sizeof remaining, "%.2f", l.remaining());
      char lim[32] = "none";
      if (l.limit() > 0) std::snprintf(lim, sizeof lim, "%.2f", l.limit());
      std::printf("%-8s %-16s %-8s %-17s %12s %12.2f %12.2f %12s\n", l.scope().c_str(),
                  l.name().c_str(), l.period().c_str(), Day(l.period_start_unix()).c_str(), lim,
                  l.spent(), l.reserved(), remaining);
    }
    std::printf("amounts in %s\n", resp.currency().c_str());
    return 0;
  }

  if (*history && !forget.empty()) {
    v1::ForgetRunsRequest req;
    req.set_credential(MungeCredential());
    req.set_decision_id(forget);
    v1::ForgetRunsResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, timeout_ms);
    grpc::Status s = tuning->ForgetRuns(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, address);
    std::printf("decision %s: %d reported run(s) no longer correct predictions\n",
                resp.decision_id().c_str(), resp.outcomes());
    return 0;
  }

  if (*history) {
    v1::ListDecisionsRequest req;
    req.set_credential(MungeCredential());
    req.set_user(user);
    req.set_limit(limit);
    v1::ListDecisionsResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, timeout_ms);
    grpc::Status s = tuning->ListDecisions(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, address);
    std::printf("%-16s %-12s %-10s %-14s %-20s %5s %5s %8s %10s %10s %9s %9s  %s\n", "when",
                "decision", "user", "workload", "strategy", "nodes", "gpu/n", "job", "state",
                "cost", "pred s", "meas s", "learning");
    for (const v1::DecisionSummary& d : resp.decisions()) {
      std::printf("%-16s %-12s %-10s %-14s %-20s %5d %5d %8u %10s %10.2f %9.4f %9.4f  %s\n",
                  Day(d.created_unix()).c_str(), d.decision_id().substr(0, 12).c_str(),
                  d.user().c_str(), d.workload().c_str(), d.strategy().c_str(), d.nodes(),
                  d.gpus_per_node(), d.job_id(), d.state().c_str(),
                  d.state() == "settled" ? d.settled_cost() : d.predicted_cost(),
                  d.predicted_step_time_s(), d.measured_step_time_s(), d.learning().c_str());
    }
    return 0;
  }

  if (*probe) {
    v1::RunProbesRequest req;
    req.set_credential(MungeCredential());
    req.set_partition(probe_partition);
    req.set_collectives(collectives);
    req.set_nodes(probe_nodes);
    req.set_gpus_per_node(probe_gpus);
    if (!probe_workload.empty()) {
      WorkloadArg w;
      if (!ReadWorkloadArg(probe_workload, &w)) return 1;
      if (w.preset.empty()) {
        req.mutable_workload()->set_toml(w.toml);
      } else {
        req.mutable_workload()->set_preset(w.preset);
      }
      req.mutable_workload()->set_source_name(probe_workload);
    }
    v1::RunProbesResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, std::max(timeout_ms, 3600 * 1000));  // a probe job queues and runs
    grpc::Status s = tuning->RunProbes(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, address);
    std::cout << "xdeep: " << resp.summary() << "\nreport: " << resp.report_path()
              << (resp.ingested() ? "\nthe hardware profile now uses these measurements\n"
                                  : "\n(stored; no GPU figures to ingest)\n");
    return 0;
  }

  if (*reload) {
    v1::ReloadPolicyRequest req;
    req.set_credential(MungeCredential());
    v1::ReloadPolicyResponse resp;
    grpc::ClientContext ctx;
    Deadline(&ctx, timeout_ms);
    grpc::Status s = tuning->ReloadPolicy(&ctx, req, &resp);
    if (!s.ok()) return Fail(s, address);
    std::cout << "xdeep: policy reloaded\n";
    return 0;
  }
  return 0;
}
