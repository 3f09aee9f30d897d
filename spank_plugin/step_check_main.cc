// xdeep-step-check: asks xdeepd whether a Slurm step may run (strict
// enforcement). slurmstepd's plugin spawns it so that gRPC's threads never
// live inside slurmstepd. Prints one line; exits 0 allowed, 1 refused,
// 3 when the daemon could not answer.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "spank_plugin/daemon_client.h"

int main(int argc, char** argv) {
  CLI::App app{"xdeep-step-check: may this Slurm step run?"};
  std::string daemon;
  int timeout_ms = 3000;
  xdeep::spank::StepQuery q;
  app.add_option("--daemon", daemon)->required();
  app.add_option("--timeout-ms", timeout_ms);
  app.add_option("--job", q.job_id)->required();
  app.add_option("--step", q.step_id);
  app.add_option("--uid", q.job_uid)->required();
  app.add_option("--nodes", q.nodes);
  app.add_option("--tasks", q.tasks);
  app.add_option("--decision", q.decision_id);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::cout << "bad arguments: " << e.what() << "\n";
    return 3;
  }
  std::unique_ptr<xdeep::spank::DaemonClient> client(xdeep_spank_client_create(daemon.c_str()));
  bool allowed = false;
  std::string reason;
  xdeep::spank::ClientError error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (!client->VerifyStep(q, deadline, &allowed, &reason, &error)) {
    std::cout << error.message << "\n";
    return 3;
  }
  std::cout << reason << "\n";
  return allowed ? 0 : 1;
}
