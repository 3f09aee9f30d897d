// What every `xdeep` command shares: where the daemon is, how long to wait,
// how to print (table or --json), and one way to fail.
#pragma once

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "xdeep/v1/tuning.grpc.pb.h"

namespace xdeep::cli {

struct CliContext {
  std::string address;  // --daemon, else $XDEEP_DAEMON, else the default socket
  int timeout_ms = 10000;
  bool json = false;  // --json: one JSON document on stdout (docs/json.md)

  std::unique_ptr<v1::Tuning::Stub> Stub() const;
  // A ClientContext that gives up after `timeout_ms` (or `at_least_ms`).
  void SetDeadline(grpc::ClientContext* ctx, int at_least_ms = 0) const;
};

// Adds --daemon, --timeout-ms and --json to `app` (and, through fallthrough,
// to every subcommand: `xdeep plan --daemon X` works like `xdeep --daemon X plan`).
void AddCommonOptions(CLI::App& app, CliContext* context);

// Prints "xdeep: <what>" on stderr; returns the exit status 1.
int Fail(const std::string& what);
// The same for a failed call, naming the daemon when it could not be reached.
int Fail(const grpc::Status& status, const CliContext& context);

// "2026-11-26 21:30" (UTC).
std::string Day(int64_t unix_time);

// A -w argument: a TOML file's text, else a preset name.
struct WorkloadArg {
  std::string toml, preset;
};
// False (with the message printed) when `arg` names a file that is not there.
bool ReadWorkloadArg(const std::string& arg, WorkloadArg* out);

}  // namespace xdeep::cli
