// ledger_load: many users launching at once against a real xdeepd, for the
// ledger's concurrency and crash tests (tests/integration/test_ledger.py).
//
// Users (default): forks one process per user, each switching to its own uid
// so that MUNGE vouches for a distinct user, then runs Tune like a tuned srun
// would, and a hostile Report (negative elapsed time, "launch failed") that
// must change nothing; retries through daemon restarts. Each process writes
// what the daemon told it to OUT/<uid>.txt:
//   reserved <decision> <token> <gpus> <nodes>   refused <reason>   lost <decision|-> <why>
// Controller (--controller, as root): plays slurmctld for every reserved
// decision in OUT: Admit (job_submit.lua's call), then a job-completion record
// in SPOOL as xdeep-jobcomp.sh writes it, one job per decision, some records
// delivered twice. Writes OUT/jobs/<n>.txt: job <id> <decision> <uid> <cost>.
// Replay (--replay, as root): as user --uid-base, one MUNGE credential sent
// twice (GetBudget), as a captured credential would be; prints both outcomes.
#include <fmt/format.h>
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

#include "client/munge_credential.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace {

namespace v1 = xdeep::v1;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string daemon, out, spool, partition = "strict", workload = "gpt-125m";
  int users = 50, launches = 20, uid_base = 20001, retry_s = 60, controllers = 4;
  double price_per_gpu_hour = 2.5;
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
  const std::string path = o.out + "/" + std::to_string(uid) + ".txt";
  std::ofstream out(path);
  if (!out) {  // e.g. a /tmp without its sticky 1777 mode: the user cannot reach OUT
    std::perror(("ledger_load: cannot write " + path + " as uid " + std::to_string(uid)).c_str());
    return 2;
  }
  out.precision(17);
  auto stub =
      v1::Tuning::NewStub(grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
  std::mt19937 rng(uid);
  std::uniform_real_distribution<double> fraction(0.3, 1.0);
  for (int k = 0; k < o.launches; ++k) {
    v1::Decision decision;
    grpc::Status s = WithRetry(o, [&] {
      v1::TuneRequest req;
      req.set_credential(xdeep::client::MungeCredential());
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
    // The client's word settles nothing: a report that the launch failed,
    // with a negative run time, for a decision whose job will run.
    const uint32_t job = static_cast<uint32_t>(uid) * 1000 + static_cast<uint32_t>(k);
    s = WithRetry(o, [&] {
      v1::ReportRequest req;
      req.set_credential(xdeep::client::MungeCredential());
      req.set_decision_id(decision.decision_id());
      req.set_job_id(job);
      req.set_elapsed_s(-1e6);
      req.set_final(true);
      v1::ReportResponse resp;
      grpc::ClientContext ctx;
      Deadline(ctx);
      return stub->Report(&ctx, req, &resp);
    });
    if (!s.ok()) {
      out << "lost " << decision.decision_id() << " report " << s.error_message() << "\n";
      continue;
    }
    out << "reserved " << decision.decision_id() << " " << decision.admission_token() << " "
        << decision.config().nodes() * decision.config().gpus_per_node() << " "
        << decision.config().nodes() << "\n";
    out.flush();
  }
  return 0;
}

int RunReplay(const Options& o) {
  const uid_t uid = static_cast<uid_t>(o.uid_base);
  if (setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0) {
    std::perror("ledger_load: cannot switch uid (run as root)");
    return 2;
  }
  auto stub =
      v1::Tuning::NewStub(grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
  const std::string credential = xdeep::client::MungeCredential();
  for (const char* which : {"first", "replayed"}) {
    v1::BudgetRequest req;
    req.set_credential(credential);
    v1::BudgetResponse resp;
    grpc::ClientContext ctx;
    Deadline(ctx);
    grpc::Status s = stub->GetBudget(&ctx, req, &resp);
    std::cout << which << " " << (s.ok() ? "OK" : std::to_string(s.error_code())) << " "
              << s.error_message() << "\n";
  }
  return 0;
}

struct Reserved {
  std::string decision, token;
  uint32_t uid = 0;
  int gpus = 0;
  int nodes = 1;
};

std::vector<Reserved> ReadReserved(const Options& o) {
  std::vector<Reserved> all;
  for (int i = 0; i < o.users; ++i) {
    const uint32_t uid = static_cast<uint32_t>(o.uid_base + i);
    std::ifstream in(o.out + "/" + std::to_string(uid) + ".txt");
    std::string kind;
    while (in >> kind) {
      if (kind == "reserved") {
        Reserved r;
        r.uid = uid;
        in >> r.decision >> r.token >> r.gpus >> r.nodes;
        all.push_back(r);
      }
      std::string rest;
      std::getline(in, rest);
    }
  }
  return all;
}

// Admits and completes every `stride`-th reserved decision from `first`.
int RunController(const Options& o, const std::vector<Reserved>& all, int first, int stride) {
  const std::string path = o.out + "/jobs/" + std::to_string(first) + ".txt";
  std::ofstream out(path);
  if (!out) {
    std::perror(("ledger_load: cannot write " + path).c_str());
    return 2;
  }
  out.precision(17);
  auto stub =
      v1::Tuning::NewStub(grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
  std::mt19937 rng(static_cast<unsigned>(first) + 7);
  std::uniform_int_distribution<int> run_s(1, 7200);
  for (size_t i = static_cast<size_t>(first); i < all.size(); i += static_cast<size_t>(stride)) {
    const Reserved& r = all[i];
    v1::AdmitResponse resp;
    grpc::Status s = WithRetry(o, [&] {
      v1::AdmitRequest req;
      req.set_credential(xdeep::client::MungeCredential());
      req.set_token(r.token);
      req.set_job_uid(r.uid);
      req.set_partition(o.partition);
      grpc::ClientContext ctx;
      Deadline(ctx);
      return stub->Admit(&ctx, req, &resp);
    });
    if (!s.ok()) {
      std::cerr << "ledger_load: admit failed for good: " << s.error_message() << "\n";
      return 1;
    }
    // "Already used": an earlier try got through before the daemon died.
    if (!resp.admitted() && resp.reason().find("already used") == std::string::npos) {
      std::cerr << "ledger_load: " << r.decision << " refused: " << resp.reason() << "\n";
      return 1;
    }
    const uint32_t job = 100000 + static_cast<uint32_t>(i);
    const int64_t start = 1700000000 + static_cast<int64_t>(i);
    const int seconds = run_s(rng);
    const std::string name = std::to_string(job) + "." + std::to_string(start);
    const std::string record = fmt::format(
        "JOBID={}\nUID={}\nSTART={}\nEND={}\nNODECNT={}\nPARTITION={}\nJOBSTATE=COMPLETED\n"
        "BATCH=yes\nUSERNAME=u{}\nACCOUNT=\nSCONTROL=JobId={} JobName=load "
        "AdminComment=xdeep:{} JOB_GRES=gpu:{}\n",
        job, r.uid, start, start + seconds, r.nodes, o.partition, r.uid, job, r.decision, r.gpus);
    // Written aside and renamed, as xdeep-jobcomp.sh does; every fifth twice.
    for (int copy = 0; copy < (i % 5 == 0 ? 2 : 1); ++copy) {
      const std::string tmp = o.spool + "/." + name + "." + std::to_string(copy);
      std::ofstream(tmp) << record;
      std::rename(tmp.c_str(), (o.spool + "/" + name + ".job").c_str());
      if (copy == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    out << "job " << job << " " << r.decision << " " << r.uid << " "
        << r.gpus * seconds / 3600.0 * o.price_per_gpu_hour << "\n";
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
  bool controller = false, replay = false;
  app.add_flag("--replay", replay, "send one credential of --uid-base twice");
  app.add_flag("--controller", controller, "play slurmctld for the decisions in --out");
  app.add_option("--spool", o.spool, "the daemon's jobcomp spool (--controller)");
  app.add_option("--controllers", o.controllers, "concurrent controller processes");
  app.add_option("--price", o.price_per_gpu_hour);
  CLI11_PARSE(app, argc, argv);

  if (replay) return RunReplay(o);
  std::vector<Reserved> reserved;
  if (controller) {
    reserved = ReadReserved(o);
    std::filesystem::create_directories(o.out + "/jobs");
  }
  const int processes = controller ? o.controllers : o.users;
  // No gRPC before fork: every child builds its own channel.
  std::vector<pid_t> children;
  for (int i = 0; i < processes; ++i) {
    pid_t pid = fork();
    if (pid == 0) _exit(controller ? RunController(o, reserved, i, processes) : RunUser(o, i));
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
  std::cout << "ledger_load: " << processes << (controller ? " controller" : " user")
            << " processes done, " << failures << " failed\n";
  return failures == 0 ? 0 : 1;
}
