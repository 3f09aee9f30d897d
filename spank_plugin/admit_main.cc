// xdeep-admit: slurmctld's job_submit.lua runs it for a submission to a
// strictly enforced partition (or one that carries an admission token) and
// asks xdeepd whether the job may be submitted, consuming the token. It asks
// on the daemon's admission socket, where the kernel names the caller
// (client/admit_client.h): no gRPC threads in slurmctld or here, no MUNGE
// round trip. Prints one line: the decision the job is bound to (exit 0,
// admitted), the reason for the user (exit 1, refused), or why the daemon
// could not answer (exit 3).
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "client/admit_client.h"

int main(int argc, char** argv) {
  CLI::App app{"xdeep-admit: may this Slurm job be submitted?"};
  std::string socket_path;
  int timeout_ms = 3000;
  xdeep::client::AdmitQuery q;
  app.add_option("--socket", socket_path, "the daemon's admission socket ([server] admit_socket)")
      ->required();
  app.add_option("--timeout-ms", timeout_ms)->check(CLI::Range(1, 600000));
  app.add_option("--uid", q.job_uid)->required();
  app.add_option("--partition", q.partition)->required();
  app.add_option("--nodes", q.nodes);
  app.add_option("--token", q.token);
  app.add_option("--array", q.array);
  app.add_option("--tres-per-node", q.tres_per_node);
  app.add_option("--tres-per-job", q.tres_per_job);
  app.add_option("--tres-per-task", q.tres_per_task);
  app.add_flag("--heterogeneous", q.heterogeneous);
  app.add_option("--time-limit-s", q.time_limit_s)->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--account", q.account);
  app.set_version_flag("--version", "xdeep-admit " XDEEP_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --version, --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cout << "xdeep-admit: bad arguments: " << e.what() << "\n";
    return 3;
  }
  xdeep::client::AdmitAnswer answer;
  xdeep::client::ClientError error;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (!xdeep::client::AskAdmission(socket_path, q, deadline, &answer, &error)) {
    std::cout << error.message << "\n";
    return error.kind == xdeep::client::ClientError::kRefused ? 1 : 3;
  }
  std::cout << (answer.admitted ? answer.decision_id : answer.reason) << "\n";
  return answer.admitted ? 0 : 1;
}
