// decisions_bench: authenticated Tune decisions per second against a running
// xdeepd, each request with a fresh MUNGE credential (as every srun sends),
// from several concurrent clients. Prints decisions/s, p50 and p99 latency,
// and as the baseline measured in the same run, the rate of the cheapest
// authenticated call (GetBudget: one MUNGE decode and one ledger read).
//
//   decisions_bench --daemon unix:///path/xdeepd.sock [--clients 16] [--seconds 5]
//                   [--mode advise|auto] [--mix repeated|varied|unique]
//                   [--heavy N --heavy-workload FILE [--heavy-samples 4000]
//                    [--heavy-windows 8]]
//                   [--cpu-of NAME=PID ...]
//   decisions_bench --daemon ... --picks
//
// --cpu-of (e.g. xdeepd=PID munged=PID): each process's CPU time per request
// (/proc/PID/stat), and the rate those processes alone would sustain on 2
// cores: the figure that does not depend on how busy the machine is (the
// clients and everything else running here share the same cores).
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
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "client/munge_credential.h"
#include "xdeep/v1/tuning.grpc.pb.h"

namespace {

namespace v1 = xdeep::v1;
using Clock = std::chrono::steady_clock;
// gRPC names its generated client class "Stub".
using TuningClient = v1::Tuning::Stub;

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

struct Options {
  std::string daemon;
  int clients = 16;
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
  double Rate() const { return seconds > 0 ? ok / seconds : 0; }
  void Add(const Stats& more) {
    latency_ms.insert(latency_ms.end(), more.latency_ms.begin(), more.latency_ms.end());
    ok += more.ok;
    errors += more.errors;
    if (first_error.empty()) first_error = more.first_error;
    seconds += more.seconds;
    cpu_s.resize(std::max(cpu_s.size(), more.cpu_s.size()), 0.0);
    for (size_t i = 0; i < more.cpu_s.size(); ++i) cpu_s[i] += more.cpu_s[i];
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

// Runs `clients` threads calling `call(client, n)` until `seconds` pass.
std::vector<Watched> g_watched;

template <typename Call>
// `warm`: each client's first call (its connection's set-up) is not counted:
// short windows would otherwise count every connect among their slowest calls.
// `calls` > 0: the run ends once that many calls are counted (or `seconds`
// pass), so that two kinds of window can be compared on equal samples.
Stats Run(const Options& o, int clients, double seconds, Call call, bool warm = false,
          uint64_t calls = 0) {
  Stats total;
  std::vector<double> cpu_before;
  for (const Watched& w : g_watched) cpu_before.push_back(ProcessCpuSeconds(w.pid));
  std::mutex mu;
  std::atomic<uint64_t> next{0}, counted{0};
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      auto client = v1::Tuning::NewStub(
          grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
      Stats mine;
      if (warm) {
        std::string ignored;
        call(*client, next.fetch_add(1), &ignored);
      }
      while (Clock::now() < end && (calls == 0 || counted.fetch_add(1) < calls)) {
        const uint64_t n = next.fetch_add(1);
        const auto a = Clock::now();
        std::string error;
        const bool ok = call(*client, n, &error);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
        if (ok) {
          ++mine.ok;
          mine.latency_ms.push_back(ms);
        } else {
          ++mine.errors;
          if (mine.first_error.empty()) mine.first_error = error;
        }
      }
      std::lock_guard lock(mu);
      total.ok += mine.ok;
      total.errors += mine.errors;
      if (total.first_error.empty()) total.first_error = mine.first_error;
      total.latency_ms.insert(total.latency_ms.end(), mine.latency_ms.begin(),
                              mine.latency_ms.end());
    });
  }
  for (auto& t : threads) t.join();
  total.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (size_t i = 0; i < g_watched.size(); ++i) {
    total.cpu_s.push_back(ProcessCpuSeconds(g_watched[i].pid) - cpu_before[i]);
  }
  return total;
}

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
               p.nodes, v1::Objective_Name(p.objective), p.budget, p.deadline_s,
               p.tolerance_pct, p.time_limit_s, line);
  }
  return rc;
}

auto OrdinaryCall(const Options& o) {
  return [&o](TuningClient& client, uint64_t n, std::string* error) {
    return Tune(client, OrdinaryRequest(o, n), 10000, error);
  };
}

void Print(const std::string& what, const Stats& s) {
  fmt::print("  {:<44} {:8.0f}/s  p50 {:7.2f} ms  p99 {:7.2f} ms  ({} ok, {} errors{})\n", what,
             s.Rate(), s.Percentile(0.5), s.Percentile(0.99), s.ok, s.errors,
             s.first_error.empty() ? "" : ": " + s.first_error);
  if (g_watched.empty() || s.ok == 0) return;
  double per_request = 0;
  std::string parts;
  for (size_t i = 0; i < g_watched.size(); ++i) {
    const double ms = 1e3 * s.cpu_s[i] / static_cast<double>(s.ok);
    per_request += ms;
    parts += fmt::format("{}{} {:.3f} ms", i ? ", " : "", g_watched[i].name, ms);
  }
  fmt::print("  {:<44} CPU per request: {} -> {:.0f}/s on 2 cores\n", "", parts,
             2000.0 / per_request);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Authenticated Tune decisions per second against a running xdeepd");
  app.add_option("--daemon", o.daemon, "unix:///path/xdeepd.sock or host:port")->required();
  app.add_option("--clients", o.clients, "concurrent clients")->check(CLI::Range(1, 1024));
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
  app.add_option("--cpu-of", o.cpu_of, "NAME=PID of a process whose CPU time to count");
  bool picks = false;
  app.add_flag("--picks", picks, "decide ten representative requests once each and print them");
  CLI11_PARSE(app, argc, argv);
  if (picks) return Picks(o);
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

  fmt::print("{} clients, {} s each, mode {}, mix {}, fresh MUNGE credential per request\n",
             o.clients, o.seconds, o.mode, o.mix);
  // Warm-up: connections, and whatever the daemon caches on first use.
  Run(o, o.clients, 0.5, OrdinaryCall(o));
  const Stats baseline = Run(o, o.clients, o.seconds, [](TuningClient& client, uint64_t,
                                                         std::string* error) {
    v1::BudgetRequest req;
    req.set_credential(xdeep::client::MungeCredential());
    v1::BudgetResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    const grpc::Status s = client.GetBudget(&ctx, req, &resp);
    if (!s.ok()) *error = s.error_message();
    return s.ok();
  });
  const Stats decisions = Run(o, o.clients, o.seconds, OrdinaryCall(o));
  Print("baseline: GetBudget (MUNGE decode + ledger read)", baseline);
  Print(fmt::format("Tune ({}, {})", o.mode, o.mix), decisions);
  fmt::print("  ratio decisions / baseline calls: {:.3f}\n",
             baseline.Rate() > 0 ? decisions.Rate() / baseline.Rate() : 0);
  fmt::print("  target 5000 decisions/s: {} ({:.2f} of target)\n",
             decisions.Rate() >= 5000 ? "MET" : "not met", decisions.Rate() / 5000);
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
        auto client = v1::Tuning::NewStub(
            grpc::CreateChannel(o.daemon, grpc::InsecureChannelCredentials()));
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
      const Stats window =
          Run(o, o.clients, o.seconds * windows, OrdinaryCall(o), true, per_window);
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
