// `xdeep emit` (see emit_command.h).
#include "daemon/cli/emit_command.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "daemon/cli/framework_config.h"

namespace xdeep::cli {

EmitCommand::EmitCommand(CLI::App& app) {
  command_ =
      app.add_subcommand("emit",
                         "inside a tuned job: the decision as json, torchrun, deepspeed, megatron, "
                         "lightning or accelerate settings");
  command_->add_option("format", format_, "what to write")
      ->required()
      ->check(CLI::IsMember(EmitFormats()));
  command_->add_option("--decision", file_,
                       "the decision file (default: $XDEEP_DECISION_FILE, set in tuned jobs)");
}

int EmitCommand::Run(const CliContext& /*context*/) const {
  std::string path = file_;
  if (path.empty()) {
    const char* env = std::getenv("XDEEP_DECISION_FILE");
    if (env == nullptr || *env == '\0') {
      return Fail(
          "XDEEP_DECISION_FILE is not set: run this inside a tuned job, or pass "
          "--decision FILE (xdeep plan --emit json writes one)");
    }
    path = env;
  }
  std::ifstream in(path);
  if (!in) return Fail("cannot read the decision file " + path);
  std::stringstream text;
  text << in.rdbuf();
  client::RunDecision decision;
  std::string error;
  if (!client::ParseDecisionFile(text.str(), &decision, &error))
    return Fail(path + ": " + error + "; write it again with xdeep plan --emit json");
  std::string out;
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v == nullptr ? "" : v);
  };
  if (!EmitFramework(format_, decision, env, &out, &error)) return Fail(error);
  std::cout << out;
  return 0;
}

}  // namespace xdeep::cli
