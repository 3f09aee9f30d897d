// ledger_load: many users launching at once against a real xdeepd, for the
// ledger's concurrency and crash tests (tests/integration/test_ledger.py).
//
// Forks one process per user, each switching to its own uid so that MUNGE
// vouches for a distinct user, then runs Tune -> Bind -> Report like a tuned
// srun would, retrying through daemon restarts. Each process writes what the
// daemon told it to OUT/<uid>.txt:
//   settled <decision> <cost>   refused <reason>   lost <decision|-> <why>
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

#include "spank_plugin/munge_credential.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace {

namespace v1 = xdeep::v1;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string daemon, out, partition = "strict", workload = "gpt-125m";
  int users = 50, launches = 20, uid_base = 20001, retry_s = 60;
};

bool Retryable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::CANCELLED ||
         s.error_code() == grpc::StatusCode::UNKNOWN ||
         s.error_code() == grpc::StatusCode::INTERNAL;
}

// Calls `rpc` until it succeeds, fails for good, or retry_s passes.
template <typename Rpc>
grpc::Status WithRetry(const Options& o, Rpc&& rpc) {
  const auto give_up = Clock::now() + std::chrono::seconds(o.retry_s);
  for (;;) {
    grpc::Status s = rpc();
    if (s.ok() || !Retryable(s) || Clock::now() > give_up) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void Deadline(grpc::ClientContext& ctx) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
}

int RunUser(const Options& o, int index) {
  const uid_t uid = static_cast<uid_t>(o.uid_base + index);
  if (setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0) {
    std::perror("ledger_load: cannot switch uid (run as root)");
    return 2;
  }
  std::ofstream out(o.out + "/" + std::to_string(uid) + ".txt");
  out.precision(17);
  auto stub =
      v1::Tuning::NewStub(grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
  std::mt19937 rng(uid);
  std::uniform_real_distribution<double> fraction(0.3, 1.0);
  for (int k = 0; k < o.launches; ++k) {
    v1::Decision decision;
    grpc::Status s = WithRetry(o, [&] {
      v1::TuneRequest req;
      req.set_credential(xdeep::spank::MungeCredential());
      req.set_mode(v1::TUNE_MODE_AUTO);
      req.mutable_workload()->set_preset(o.workload);
      req.set_partition(o.partition);
      req.set_objective(v1::OBJECTIVE_COST);
      req.mutable_bounds()->set_nodes(1 + k % 2);
      grpc::ClientContext ctx;
      Deadline(ctx);
      auto reader = stub->Tune(&ctx, req);
      v1::TuneEvent event;
      while (reader->Read(&event)) {
        if (event.has_decision()) decision = event.decision();
      }
      return reader->Finish();
    });
    if (!s.ok()) {
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        out << "refused " << s.error_message().substr(0, 60) << "\n";
      } else {
        out << "lost - tune " << s.error_message() << "\n";
      }
      continue;
    }
    const uint32_t job = static_cast<uint32_t>(uid) * 1000 + static_cast<uint32_t>(k);
    s = WithRetry(o, [&] {
      v1::BindRequest req;
      req.set_credential(xdeep::spank::MungeCredential());
      req.set_decision_id(decision.decision_id());
      req.set_job_id(job);
      v1::BindResponse resp;
      grpc::ClientContext ctx;
      Deadline(ctx);
      return stub->Bind(&ctx, req, &resp);
    });
    if (!s.ok()) {
      out << "lost " << decision.decision_id() << " bind " << s.error_message() << "\n";
      continue;
    }
    // The job ran for part of its predicted time.
    const double elapsed = decision.prediction().time_to_solution_s() * fraction(rng);
    v1::ReportResponse resp;
    s = WithRetry(o, [&] {
      v1::ReportRequest req;
      req.set_credential(xdeep::spank::MungeCredential());
      req.set_decision_id(decision.decision_id());
      req.set_job_id(job);
      req.set_exit_code(0);
      req.set_elapsed_s(elapsed);
      req.set_final(true);
      grpc::ClientContext ctx;
      Deadline(ctx);
      return stub->Report(&ctx, req, &resp);
    });
    if (!s.ok()) {
      out << "lost " << decision.decision_id() << " report " << s.error_message() << "\n";
      continue;
    }
    out << "settled " << decision.decision_id() << " " << resp.settled_cost() << "\n";
    out.flush();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ledger_load: concurrent tuned launches from many users"};
  Options o;
  app.add_option("--daemon", o.daemon)->required();
  app.add_option("--out", o.out)->required();
  app.add_option("--users", o.users);
  app.add_option("--launches", o.launches);
  app.add_option("--uid-base", o.uid_base);
  app.add_option("--partition", o.partition);
  app.add_option("--workload", o.workload);
  app.add_option("--retry-s", o.retry_s);
  CLI11_PARSE(app, argc, argv);

  // No gRPC before fork: every child builds its own channel.
  std::vector<pid_t> children;
  for (int i = 0; i < o.users; ++i) {
    pid_t pid = fork();
    if (pid == 0) _exit(RunUser(o, i));
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  std::cout << "ledger_load: " << o.users << " users x " << o.launches << " launches done, "
            << failures << " user processes failed\n";
  return failures == 0 ? 0 : 1;
}
