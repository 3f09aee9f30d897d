// Shared CLI plumbing (see cli_context.h).
#include "daemon/cli/cli_context.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

namespace xdeep::cli {

std::unique_ptr<v1::Tuning::Stub> CliContext::Stub() const {
  return v1::Tuning::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

void CliContext::SetDeadline(grpc::ClientContext* ctx, int at_least_ms) const {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(std::max(timeout_ms, at_least_ms)));
}

void AddCommonOptions(CLI::App& app, CliContext* context) {
  const char* env_address = std::getenv("XDEEP_DAEMON");
  context->address = env_address && *env_address ? env_address : "unix:///run/xdeep/xdeepd.sock";
  app.add_option("--daemon", context->address,
                 "xdeepd address, e.g. unix:///run/xdeep/xdeepd.sock or host:port "
                 "(default: $XDEEP_DAEMON, else unix:///run/xdeep/xdeepd.sock)");
  app.add_option("--timeout-ms", context->timeout_ms, "longest wait for the daemon's answer")
      ->check(CLI::Range(1, 600000));
  app.add_flag("--json", context->json,
               "print one JSON document instead of a table (docs/json.md)");
  app.fallthrough();
}

int Fail(const std::string& what) {
  // One line, whatever the message held (a daemon's error may quote a tool's output).
  std::string line;
  for (char c : what) {
    if (c != '\n') {
      line += c;
    } else if (!line.empty() && line.back() != ' ') {
      line += ' ';
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::cerr << "xdeep: " << line << "\n";
  return 1;
}

int Fail(const grpc::Status& s, const CliContext& context) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
      s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Fail("cannot reach xdeepd at " + context.address + " (" + s.error_message() +
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

bool ReadWorkloadArg(const std::string& arg, WorkloadArg* out) {
  std::ifstream in(arg);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    out->toml = text.str();
  } else if (arg.find('/') != std::string::npos || arg.ends_with(".toml")) {
    Fail(arg + " does not exist; check the path (or name a preset: xdeep presets)");
    return false;
  } else {
    out->preset = arg;
  }
  return true;
}

}  // namespace xdeep::cli
