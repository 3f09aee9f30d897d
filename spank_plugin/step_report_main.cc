// xdeep-step-report: a tuned step's outcome, sent from its compute node.
// slurmstepd (step_runtime.cc) forks, drops to the job's user and execs this
// when the node's last task has ended, so gRPC's threads never live in
// slurmstepd and nothing here runs as root. It reads the step times the
// application wrote into the step's private directory, removes that
// directory, and reports (MUNGE: the user's identity). Exit 0 when the daemon
// has the outcome or there was nothing to add, 3 when it could not be reached
// or refused it, 2 for bad arguments.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "client/daemon_client.h"
#include "client/socket_daemon_client.h"
#include "spank_plugin/step_runtime.h"

int main(int argc, char** argv) {
  CLI::App app{"xdeep-step-report: report a tuned step from its compute node"};
  std::string daemon, directory;
  int timeout_ms = 3000, node_id = 0;
  xdeep::client::ReportQuery q;
  app.add_option("--daemon", daemon)->required();
  app.add_option("--timeout-ms", timeout_ms)->check(CLI::Range(1, 600000));
  app.add_option("--decision", q.decision_id)->required();
  app.add_option("--job", q.job_id)->required();
  app.add_option("--exit-code", q.exit_code);
  app.add_option("--elapsed-s", q.elapsed_s);
  app.add_option("--node", node_id);
  app.add_option("--directory", directory)->required();
  app.set_version_flag("--version", "xdeep-step-report " XDEEP_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --version, --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "xdeep: xdeep-step-report: bad arguments: " << e.what() << "\n";
    return 2;
  }
  q.step_times_s = xdeep::spank::ReadStepTimes(directory + "/" + xdeep::spank::kStepTimesName);
  std::error_code ec;
  std::filesystem::remove_all(directory, ec);
  // The first node speaks for the step (Slurm's record has every node's
  // state); others only add the step times their ranks wrote.
  if (node_id != 0 && q.step_times_s.empty()) return 0;
  // The daemon's local client socket when it has one (no gRPC channel to set
  // up, issue #27), else gRPC (a daemon on another host).
  const std::string socket = xdeep::client::ClientSocketPath(daemon);
  struct stat st {};
  std::unique_ptr<xdeep::client::DaemonClient> client =
      !socket.empty() && stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)
          ? xdeep::client::ConnectDaemonSocket(socket)
          : xdeep::client::ConnectDaemon(daemon);
  xdeep::client::ClientError error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (!client->Report(q, deadline, &error)) {
    std::cerr << "xdeep: the step's outcome did not reach the daemon: " << error.message << "\n";
    return 3;
  }
  return 0;
}
