// decisions_bench: authenticated Tune decisions per second against a running
// xdeepd, each request with a fresh MUNGE credential (as every srun sends),
// from several concurrent clients. Prints decisions/s, p50 and p99 latency,
// and as the baseline measured in the same run, the rate of the cheapest
// authenticated call (GetBudget: one MUNGE decode and one ledger read).
//
//   decisions_bench --daemon unix:///path/xdeepd.sock [--clients 16] [--seconds 5]
//                   [--client-threads 1] [--credentials-ahead 16]
//                   [--mode advise|auto] [--mix repeated|varied|unique]
//                   [--heavy N --heavy-workload FILE [--heavy-samples 4000]
//                    [--heavy-windows 8]]
//                   [--cpu-of NAME=PID ...]
//   decisions_bench --daemon ... --picks
//
// --clients calls stay in flight, issued by --client-threads threads
// (asynchronous gRPC); each call's credential is encoded for it alone, by a
// thread of its own up to --credentials-ahead calls ahead (0: by the client
// thread just before the call), so that no client thread waits for munged.
//
// Two readings of the rate, each with its verdict against issue #27's 5,000/s:
// * measured: requests answered per second of wall time, with the clients
//   running wherever this process may run (on the 2-core VM: the daemon's
//   own 2 cores, which the clients share);
// * the daemon's own 2 cores (with --cpu-of, e.g. xdeepd=PID munged=PID): 2 s
//   of CPU divided by the CPU those processes spent per request
//   (/proc/PID/stat): the rate the daemon's host sustains when its clients
//   run elsewhere (srun runs on submit hosts), and a figure that does not
//   depend on how busy the machine is.
// The clients' own CPU per request (this process's, getrusage) is printed
// too: 2 s divided by everyone's CPU per request is what the measured rate
// reaches on an otherwise idle 2-core machine.
//
// --mix: repeated = one request over and over; varied = a pool of 240
// distinct requests (4 presets x 12 node bounds x 5 objectives / budgets);
// unique = no two requests alike (a distinct --xdeep-budget each), so nothing
// any cache holds can answer them.
// --picks: instead of measuring, ten representative requests (four presets;
// cost, time, budget, deadline, tolerance, time limit; several sharing a
// preset and node bound, so that the daemon scores them from one recorded
// search space) decided once each, one line per decision without its ids:
// diff two daemons' output to show that they decide identically.
// --heavy N: after the ordinary run, N more clients send the worst-case
// request in FILE (each with a 3 s deadline, as the plugin's timeout) while
// the ordinary clients run again, in --heavy-windows windows alternating with
// as many without them, each window --heavy-samples / windows ordinary calls
// (or windows x --seconds at the most, a cap for a stalled daemon); prints the
// ordinary p99 with and without them and their ratio (issue #27: within 2x).
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "bench/daemon/call_driver.h"
#include "bench/daemon/credential_supply.h"
#include "client/munge_credential.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace {

namespace v1 = xdeep::v1;
namespace bench = xdeep::bench;
using Clock = std::chrono::steady_clock;
using bench::TuningClient;

// utime + stime of a process and all its threads, in seconds.
double ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Context switches (voluntary and not) of a process's threads alive now: on
// a 2-core VM each hand-off between threads costs more than most of the
// work, and their count per request does not depend on how busy the
// machine is.
double ProcessSwitches(int pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  double total = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream in(task.path() / "status");
    for (std::string line; std::getline(in, line);) {
      if (line.find("ctxt_switches:") != std::string::npos) {
        total += std::atof(line.c_str() + line.find(':') + 1);
      }
    }
  }
  return total;
}

// Context switches of this process, its ended threads included (the client
// threads of a run end with it).
double OwnSwitches() {
  rusage use{};
  getrusage(RUSAGE_SELF, &use);
  return static_cast<double>(use.ru_nvcsw + use.ru_nivcsw);
}

// CPU time of this process (every client thread), in seconds.
double OwnCpuSeconds() {
  rusage use{};
  getrusage(RUSAGE_SELF, &use);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(use.ru_utime) + seconds(use.ru_stime);
}

struct Options {
  std::string daemon;
  int clients = 16;            // calls in flight
  int client_threads = 1;      // threads issuing them
  int credentials_ahead = 16;  // > 0: a thread encodes the credentials ahead
  // > 0: before each timed run, this many credentials per second of it are
  // encoded (the rest, if the run uses more, by the thread above during it).
  int credentials_before = 0;
  double seconds = 5;
  std::string mode = "advise";
  std::string mix = "varied";
  std::string partition;
  int heavy = 0;
  std::string heavy_workload;
  int heavy_deadline_ms = 3000;
  uint64_t heavy_samples = 4000;    // ordinary calls timed with, and as many without
  int heavy_windows = 8;            // of each kind, alternating
  std::vector<std::string> cpu_of;  // NAME=PID
};

struct Watched {
  std::string name;
  int pid;
};

struct Stats {
  std::vector<double> latency_ms;
  uint64_t ok = 0, errors = 0;
  std::string first_error;
  double seconds = 0;
  std::vector<double> cpu_s;  // per watched process, during the run
  std::vector<double> switches;  // per watched process, during the run
  double client_cpu_s = 0;    // this process's, during the run
  double client_switches = 0;
  size_t credentials_left = 0;  // of those encoded before the run (--credentials-before)
  double Rate() const { return seconds > 0 ? ok / seconds : 0; }
  void Add(const Stats& more) {
    latency_ms.insert(latency_ms.end(), more.latency_ms.begin(), more.latency_ms.end());
    ok += more.ok;
    errors += more.errors;
    if (first_error.empty()) first_error = more.first_error;
    seconds += more.seconds;
    client_cpu_s += more.client_cpu_s;
    client_switches += more.client_switches;
    cpu_s.resize(std::max(cpu_s.size(), more.cpu_s.size()), 0.0);
    for (size_t i = 0; i < more.cpu_s.size(); ++i) cpu_s[i] += more.cpu_s[i];
    switches.resize(std::max(switches.size(), more.switches.size()), 0.0);
    for (size_t i = 0; i < more.switches.size(); ++i) switches[i] += more.switches[i];
  }
  double Percentile(double q) const {
    if (latency_ms.empty()) return 0;
    std::vector<double> v = latency_ms;
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
    std::nth_element(v.begin(), v.begin() + i, v.end());
    return v[i];
  }
};

v1::TuneRequest OrdinaryRequest(const Options& o, uint64_t n) {
  static const char* const kPresets[] = {"gpt-125m", "gpt-350m", "gpt-1.3b", "llama-7b"};
  static const v1::Objective kObjectives[] = {v1::OBJECTIVE_COST, v1::OBJECTIVE_TIME};
  v1::TuneRequest r;
  r.set_mode(o.mode == "auto" ? v1::TUNE_MODE_AUTO : v1::TUNE_MODE_ADVISE);
  r.set_launcher(v1::LAUNCHER_SRUN);
  r.set_partition(o.partition);
  r.set_client_version("bench");
  r.mutable_workload()->set_preset("gpt-125m");
  r.mutable_workload()->set_source_name("gpt-125m");
  if (o.mix == "repeated") return r;
  // varied: 4 presets x 12 node bounds x 5 (2 objectives, 3 budgets) = 240.
  const uint64_t k = o.mix == "unique" ? n : n % 240;
  const char* preset = kPresets[k % 4];
  r.mutable_workload()->set_preset(preset);
  r.mutable_workload()->set_source_name(preset);
  r.mutable_bounds()->set_nodes(static_cast<int>(1 + (k / 4) % 12));
  const uint64_t variant = (k / 48) % 5;
  if (variant < 2) {
    r.set_objective(kObjectives[variant]);
  } else {
    r.set_budget(1e6 * static_cast<double>(variant));
  }
  // A budget no other request has: no cache can answer it.
  if (o.mix == "unique") r.set_budget(1e6 + static_cast<double>(n));
  return r;
}

std::vector<Watched> g_watched;
Options g_options;  // as parsed
// The ordinary calls' credentials (null: each call encodes its own).
xdeep::bench::CredentialSupply* g_credentials = nullptr;

std::string FreshCredential() {
  return g_credentials != nullptr ? g_credentials->Take() : xdeep::client::MungeCredential();
}

// A Tune call: the request, then its events until the decision (or skip),
// then its status (the daemon finishes the stream with the decision).
class TuneCall final : public bench::PendingCall {
 public:
  TuneCall(const Options& o, int deadline_ms) : o_(o), deadline_ms_(deadline_ms) {}
  void Start(TuningClient& client, grpc::CompletionQueue* cq, uint64_t n) override {
    v1::TuneRequest request = OrdinaryRequest(o_, n);
    request.set_credential(FreshCredential());
    // The reader lives in its call's memory, which the context's end frees.
    reader_.reset();
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms_));
    decided_ = false;
    stage_ = Stage::kStarting;
    reader_ = client.AsyncTune(ctx_.get(), request, cq, this);
  }
  bool Step(bool ok) override {
    switch (stage_) {
      case Stage::kStarting:
      case Stage::kReading:
        if (stage_ == Stage::kReading && ok) {
          decided_ = event_.has_decision() || event_.has_skip();
        }
        if (ok && !decided_) {
          stage_ = Stage::kReading;
          reader_->Read(&event_, this);
          return false;
        }
        stage_ = Stage::kFinishing;
        reader_->Finish(&status_, this);
        return false;
      case Stage::kFinishing:
        succeeded = status_.ok() && decided_;
        error = !status_.ok() ? status_.error_message() : decided_ ? "" : "no decision";
        return true;
    }
    return true;
  }

 private:
  enum class Stage { kStarting, kReading, kFinishing };
  const Options& o_;
  int deadline_ms_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientAsyncReader<v1::TuneEvent>> reader_;
  v1::TuneEvent event_;
  grpc::Status status_;
  bool decided_ = false;
  Stage stage_ = Stage::kStarting;
};

// The baseline: GetBudget, one MUNGE decode and one ledger read.
class BudgetCall final : public bench::PendingCall {
 public:
  void Start(TuningClient& client, grpc::CompletionQueue* cq, uint64_t) override {
    v1::BudgetRequest request;
    request.set_credential(FreshCredential());
    reader_.reset();  // before the context that holds its memory
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    reader_ = client.AsyncGetBudget(ctx_.get(), request, cq);
    reader_->Finish(&response_, &status_, this);
  }
  bool Step(bool) override {
    succeeded = status_.ok();
    error = status_.error_message();
    return true;
  }

 private:
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::BudgetResponse>> reader_;
  v1::BudgetResponse response_;
  grpc::Status status_;
};

enum class CallKind { kTune, kBudget };

// --clients calls in flight from --client-threads threads for `seconds` (or
// `calls` counted calls), with the watched processes' CPU and this one's.
Stats Run(const Options& o, CallKind kind, double seconds, bool warm = false, uint64_t calls = 0) {
  if (g_credentials != nullptr && o.credentials_before > 0 && calls == 0) {
    g_credentials->Prefill(static_cast<size_t>(seconds * o.credentials_before), 2);
  }
  std::vector<double> cpu_before, switches_before;
  for (const Watched& w : g_watched) {
    cpu_before.push_back(ProcessCpuSeconds(w.pid));
    switches_before.push_back(ProcessSwitches(w.pid));
  }
  const double client_cpu_before = OwnCpuSeconds();
  const double client_switches_before = OwnSwitches();
  const auto t0 = Clock::now();
  bench::CallStats calls_made =
      bench::DriveCalls({.daemon = o.daemon,
                         .in_flight = o.clients,
                         .threads = o.client_threads,
                         .seconds = std::chrono::duration<double>(seconds),
                         .warm = warm,
                         .calls = calls},
                        [&o, kind]() -> std::unique_ptr<bench::PendingCall> {
                          if (kind == CallKind::kBudget) return std::make_unique<BudgetCall>();
                          return std::make_unique<TuneCall>(o, 10000);
                        });
  Stats total;
  total.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  total.client_cpu_s = OwnCpuSeconds() - client_cpu_before;
  total.client_switches = OwnSwitches() - client_switches_before;
  for (size_t i = 0; i < g_watched.size(); ++i) {
    total.cpu_s.push_back(ProcessCpuSeconds(g_watched[i].pid) - cpu_before[i]);
    total.switches.push_back(ProcessSwitches(g_watched[i].pid) - switches_before[i]);
  }
  if (g_credentials != nullptr && o.credentials_before > 0 && calls == 0) {
    total.credentials_left = g_credentials->ready();
  }
  total.latency_ms = std::move(calls_made.latency_ms);
  total.ok = calls_made.ok;
  total.errors = calls_made.errors;
  total.first_error = std::move(calls_made.first_error);
  return total;
}

// The worst-case requests' clients: one blocking call at a time each.
bool Tune(TuningClient& client, v1::TuneRequest request, int deadline_ms, std::string* error) {
  request.set_credential(xdeep::client::MungeCredential());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
  auto reader = client.Tune(&ctx, request);
  v1::TuneEvent event;
  bool decided = false;
  while (reader->Read(&event)) decided |= event.has_decision() || event.has_skip();
  const grpc::Status status = reader->Finish();
  if (!status.ok()) *error = status.error_message();
  if (status.ok() && !decided) *error = "no decision";
  return status.ok() && decided;
}

// The ten requests of --picks, and what the daemon decided for each.
int Picks(const Options& o) {
  struct Pick {
    const char* preset;
    int nodes;
    v1::Objective objective;
    double budget, deadline_s, tolerance_pct, time_limit_s;
  };
  constexpr double kNone = 0;
  const Pick picks[] = {
      {"gpt-125m", 4, v1::OBJECTIVE_COST, kNone, kNone, -1, kNone},
      {"gpt-125m", 4, v1::OBJECTIVE_TIME, kNone, kNone, -1, kNone},
      {"gpt-125m", 4, v1::OBJECTIVE_TIME_UNDER_BUDGET, 400, kNone, -1, kNone},
      {"gpt-350m", 8, v1::OBJECTIVE_COST, kNone, kNone, -1, kNone},
      {"gpt-350m", 8, v1::OBJECTIVE_COST_UNDER_DEADLINE, kNone, 86400, -1, kNone},
      {"gpt-1.3b", 2, v1::OBJECTIVE_TIME, kNone, kNone, -1, kNone},
      {"gpt-1.3b", 2, v1::OBJECTIVE_COST, kNone, kNone, 10, kNone},
      {"llama-7b", 8, v1::OBJECTIVE_COST, kNone, kNone, -1, kNone},
      {"llama-7b", 8, v1::OBJECTIVE_TIME, kNone, kNone, -1, 4 * 3600},
      {"llama-7b", 8, v1::OBJECTIVE_TIME, 50000, kNone, -1, kNone},
  };
  auto client =
      v1::Tuning::NewStub(grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
  int rc = 0;
  for (const Pick& p : picks) {
    v1::TuneRequest r;
    r.set_mode(v1::TUNE_MODE_ADVISE);
    r.set_launcher(v1::LAUNCHER_SRUN);
    r.set_partition(o.partition);
    r.set_client_version("bench");
    r.mutable_workload()->set_preset(p.preset);
    r.mutable_workload()->set_source_name(p.preset);
    r.mutable_bounds()->set_nodes(p.nodes);
    r.set_objective(p.objective);
    r.set_budget(p.budget);
    r.set_deadline_s(p.deadline_s);
    if (p.tolerance_pct >= 0) r.set_cost_tolerance_pct(p.tolerance_pct);
    r.set_time_limit_s(p.time_limit_s);
    r.set_credential(xdeep::client::MungeCredential());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto reader = client->Tune(&ctx, r);
    v1::TuneEvent event;
    std::string line = "no decision";
    while (reader->Read(&event)) {
      if (event.has_decision()) {
        v1::Decision d = event.decision();
        d.clear_decision_id();
        d.clear_admission_token();
        d.clear_server_version();
        line = d.ShortDebugString();
      } else if (event.has_skip()) {
        line = "skip: " + event.skip().reason();
      }
    }
    // A refusal is a decision too (compared like the others); a daemon that
    // cannot be reached is not.
    const grpc::Status status = reader->Finish();
    if (!status.ok()) line = "error: " + status.error_message();
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) rc = 1;
    fmt::print("{} N<={} {} budget {} deadline {} tolerance {} time limit {}: {}\n", p.preset,
               p.nodes, v1::Objective_Name(p.objective), p.budget, p.deadline_s, p.tolerance_pct,
               p.time_limit_s, line);
  }
  return rc;
}

// CPU per request of the watched processes (the daemon's side), in ms.
double DaemonCpuMsPerRequest(const Stats& s) {
  double ms = 0;
  for (double cpu : s.cpu_s) ms += 1e3 * cpu / static_cast<double>(std::max<uint64_t>(1, s.ok));
  return ms;
}

void Print(const std::string& what, const Stats& s) {
  fmt::print("  {:<44} {:8.0f}/s  p50 {:7.2f} ms  p99 {:7.2f} ms  ({} ok, {} errors{})\n", what,
             s.Rate(), s.Percentile(0.5), s.Percentile(0.99), s.ok, s.errors,
             s.first_error.empty() ? "" : ": " + s.first_error);
  if (s.ok == 0) return;
  std::string parts;
  for (size_t i = 0; i < g_watched.size(); ++i) {
    parts += fmt::format("{} {:.3f} ms, ", g_watched[i].name,
                         1e3 * s.cpu_s[i] / static_cast<double>(s.ok));
  }
  const double clients_ms = 1e3 * s.client_cpu_s / static_cast<double>(s.ok);
  const double daemon_ms = DaemonCpuMsPerRequest(s);
  fmt::print("  {:<44} CPU per request: {}clients {:.3f} ms", "", parts, clients_ms);
  if (!g_watched.empty()) {
    fmt::print(" -> daemon's own 2 cores {:.0f}/s, everyone on 2 cores {:.0f}/s",
               2000.0 / daemon_ms, 2000.0 / (daemon_ms + clients_ms));
  }
  fmt::print("\n");
  std::string switches;
  for (size_t i = 0; i < g_watched.size(); ++i) {
    switches += fmt::format("{} {:.2f}, ", g_watched[i].name,
                            s.switches[i] / static_cast<double>(s.ok));
  }
  fmt::print("  {:<44} context switches per request: {}clients {:.2f}\n", "", switches,
             s.client_switches / static_cast<double>(s.ok));
  if (g_credentials != nullptr && g_options.credentials_before > 0) {
    fmt::print("  {:<44} credentials encoded before the run: {} left at its end ({})\n", "",
               s.credentials_left,
               s.credentials_left > 0 ? "none encoded during it"
                                      : "used up: the rest were encoded during it");
  }
}

// Where the clients ran against the daemon's processes, for the measured
// reading's label: on the 2-core VM they share the daemon's 2 cores; on a
// larger machine the daemon may be pinned (taskset) to 2 and the clients to
// the others, and then the measured rate is the daemon's own 2 cores.
std::string PlacementLabel() {
  cpu_set_t clients;
  CPU_ZERO(&clients);
  sched_getaffinity(0, sizeof clients, &clients);
  if (g_watched.empty()) {
    return fmt::format("measured, clients on this machine's {} cores", CPU_COUNT(&clients));
  }
  cpu_set_t daemon;
  CPU_ZERO(&daemon);
  for (const Watched& w : g_watched) {
    cpu_set_t one;
    CPU_ZERO(&one);
    if (sched_getaffinity(w.pid, sizeof one, &one) == 0) CPU_OR(&daemon, &daemon, &one);
  }
  cpu_set_t shared;
  CPU_AND(&shared, &clients, &daemon);
  const int d = CPU_COUNT(&daemon), c = CPU_COUNT(&clients), both = CPU_COUNT(&shared);
  auto cores = [](int n) { return fmt::format("{} core{}", n, n == 1 ? "" : "s"); };
  if (both == d && both == c)
    return fmt::format("measured, clients sharing the daemon's {}", cores(d));
  if (both == 0) {
    return fmt::format("measured, daemon on {}, clients on {} other{}", cores(d), c,
                       c == 1 ? "" : "s");
  }
  return fmt::format("measured, daemon on {}, clients on {} ({} shared)", cores(d), cores(c), both);
}

void PrintVerdicts(const Stats& s) {
  constexpr double kTarget = 5000;
  auto verdict = [](double rate) {
    return fmt::format("{:8.0f}/s  {} ({:.2f} of target)", rate,
                       rate >= kTarget ? "MET" : "not met", rate / kTarget);
  };
  fmt::print("  target {:.0f} decisions/s (issue #27 item 3), per reading:\n", kTarget);
  fmt::print("    {:<62} {}\n", PlacementLabel(), verdict(s.Rate()));
  if (!g_watched.empty() && s.ok > 0) {
    std::string names;
    for (const Watched& w : g_watched) names += (names.empty() ? "" : " + ") + w.name;
    fmt::print("    {:<62} {}\n",
               fmt::format("the daemon's own 2 cores (CPU of {} per request)", names),
               verdict(2000.0 / DaemonCpuMsPerRequest(s)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Authenticated Tune decisions per second against a running xdeepd");
  app.add_option("--daemon", o.daemon, "unix:///path/xdeepd.sock or host:port")->required();
  app.add_option("--clients", o.clients, "concurrent clients (calls in flight)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--client-threads", o.client_threads,
                 "threads issuing the clients' calls (asynchronous gRPC)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--seconds", o.seconds, "seconds per measurement")->check(CLI::Range(0.5, 600.0));
  app.add_option("--mode", o.mode, "advise or auto")->check(CLI::IsMember({"advise", "auto"}));
  app.add_option("--mix", o.mix, "repeated, varied or unique")
      ->check(CLI::IsMember({"repeated", "varied", "unique"}));
  app.add_option("--partition", o.partition, "partition to decide for (empty: default)");
  app.add_option("--heavy", o.heavy, "worst-case clients alongside (second run)")
      ->check(CLI::Range(0, 64));
  app.add_option("--heavy-workload", o.heavy_workload, "TOML of the worst-case request")
      ->check(CLI::ExistingFile);
  app.add_option("--heavy-deadline-ms", o.heavy_deadline_ms, "each worst-case request's deadline")
      ->check(CLI::Range(10, 600000));
  app.add_option("--heavy-samples", o.heavy_samples,
                 "ordinary calls timed beside the worst cases, and as many without them")
      ->check(CLI::Range(80, 1000000));
  app.add_option("--heavy-windows", o.heavy_windows,
                 "windows of each kind, alternating (more, shorter ones: a burst of the "
                 "machine's other work spans windows of both kinds)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--credentials-ahead", o.credentials_ahead,
                 "a thread of its own encodes up to N fresh credentials ahead of the calls "
                 "(0: each call encodes its own, on its client thread)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--credentials-before", o.credentials_before,
                 "before each timed run, encode N credentials per second of it (each still "
                 "used once, seconds later): munged's encodes and the encoding thread leave "
                 "the timed window, as srun's are made on submit hosts (0: none)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--cpu-of", o.cpu_of, "NAME=PID of a process whose CPU time to count");
  bool picks = false;
  app.add_flag("--picks", picks, "decide ten representative requests once each and print them");
  CLI11_PARSE(app, argc, argv);
  if (picks) return Picks(o);
  g_options = o;
  for (const std::string& item : o.cpu_of) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "decisions_bench: --cpu-of wants NAME=PID, not " << item << "\n";
      return 2;
    }
    g_watched.push_back({item.substr(0, eq), std::atoi(item.c_str() + eq + 1)});
  }
  if (o.heavy > 0 && o.heavy_workload.empty()) {
    std::cerr << "decisions_bench: --heavy needs --heavy-workload FILE\n";
    return 2;
  }

  fmt::print(
      "{} clients (calls in flight, from {} thread{}), {} s each, mode {}, mix {}, fresh MUNGE "
      "credential per request ({} encoded ahead{})\n",
      o.clients, o.client_threads, o.client_threads == 1 ? "" : "s", o.seconds, o.mode, o.mix,
      o.credentials_ahead,
      o.credentials_before > 0
          ? fmt::format(", {} per second of each run encoded before it", o.credentials_before)
          : "");
  std::unique_ptr<bench::CredentialSupply> credentials;
  if (o.credentials_ahead > 0) {
    credentials = std::make_unique<bench::CredentialSupply>(o.credentials_ahead);
    g_credentials = credentials.get();
  }
  // Warm-up: connections, and whatever the daemon caches on first use.
  Run(o, CallKind::kTune, 0.5);
  const Stats baseline = Run(o, CallKind::kBudget, o.seconds);
  const Stats decisions = Run(o, CallKind::kTune, o.seconds);
  Print("baseline: GetBudget (MUNGE decode + ledger read)", baseline);
  Print(fmt::format("Tune ({}, {})", o.mode, o.mix), decisions);
  fmt::print("  ratio decisions / baseline calls: {:.3f}\n",
             baseline.Rate() > 0 ? decisions.Rate() / baseline.Rate() : 0);
  PrintVerdicts(decisions);
  int rc = decisions.errors == 0 ? 0 : 1;

  if (o.heavy > 0) {
    std::ifstream in(o.heavy_workload);
    std::stringstream text;
    text << in.rdbuf();
    v1::TuneRequest heavy;
    heavy.set_mode(v1::TUNE_MODE_ADVISE);
    heavy.set_launcher(v1::LAUNCHER_SRUN);
    heavy.set_partition(o.partition);
    heavy.mutable_workload()->set_toml(text.str());
    heavy.mutable_workload()->set_source_name(o.heavy_workload);
    std::atomic<bool> stop{false}, active{false};
    std::atomic<uint64_t> heavy_done{0}, heavy_stopped{0};
    std::vector<std::thread> heavies;
    for (int h = 0; h < o.heavy; ++h) {
      heavies.emplace_back([&] {
        auto client =
            v1::Tuning::NewStub(grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
        while (!stop) {
          if (!active) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            continue;
          }
          std::string error;
          if (Tune(*client, heavy, o.heavy_deadline_ms, &error)) {
            ++heavy_done;
          } else {
            ++heavy_stopped;
          }
        }
      });
    }
    // Windows without and with the worst-case requests in turn, each kind's
    // latencies pooled: a change in the shared machine's load during the run
    // hits both sides alike (one run of each, one after the other, measured
    // the load as much as the daemon). Each window counts the same number of
    // calls, so both p99s come from equal samples (the ordinary rate falls
    // beside the worst cases: equal times would give them fewer).
    const int windows = o.heavy_windows;
    const uint64_t per_window = std::max<uint64_t>(1, o.heavy_samples / windows);
    Stats alone, loaded;
    std::string window_p99[2];
    for (int i = 0; i < 2 * windows; ++i) {
      const bool with = i % 2 == 1;
      active = with;
      // Let them start, or let the daemon finish what they left.
      std::this_thread::sleep_for(std::chrono::milliseconds(with ? 300 : 200));
      // Ended by its calls; the time is only a cap for a daemon that stalls.
      const Stats window = Run(o, CallKind::kTune, o.seconds * windows, /*warm=*/true, per_window);
      window_p99[with] += fmt::format(" {:.1f}", window.Percentile(0.99));
      (with ? loaded : alone).Add(window);
    }
    stop = true;
    for (auto& t : heavies) t.join();
    Print(fmt::format("Tune ({}, {}) alone, {} windows", o.mode, o.mix, windows), alone);
    Print(fmt::format("Tune ({}, {}) beside {} worst-case, {} windows between them", o.mode, o.mix,
                      o.heavy, windows),
          loaded);
    fmt::print("  p99 per window (ms), alone:{}  beside:{}\n", window_p99[0], window_p99[1]);
    const double ratio =
        alone.Percentile(0.99) > 0 ? loaded.Percentile(0.99) / alone.Percentile(0.99) : 0;
    fmt::print("  worst-case requests: {} answered, {} stopped (deadline {} ms or site limit)\n",
               heavy_done.load(), heavy_stopped.load(), o.heavy_deadline_ms);
    fmt::print("  ordinary p99 ratio with / without worst-case requests: {:.2f} ({} 2x)\n", ratio,
               ratio <= 2 ? "within" : "beyond");
    if (alone.errors > 0 || loaded.errors > 0) rc = 1;
  }
  return rc;
}
