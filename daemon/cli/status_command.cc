// `xdeep status` (see status_command.h).
#include "daemon/cli/status_command.h"

#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "client/version_skew.h"

namespace xdeep::cli {

StatusCommand::StatusCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "status", "whether xdeepd answers, its version and schema versions (no credential needed)");
}

int StatusCommand::Run(const CliContext& context) const {
  v1::HealthRequest req;
  req.set_client_version(XDEEP_VERSION);
  v1::HealthResponse resp;
  grpc::ClientContext ctx;
  context.SetDeadline(&ctx);
  grpc::Status s = context.Stub()->Health(&ctx, req, &resp);
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    // A daemon from before Health: it answers, and it is older than this xdeep.
    resp.clear_version();
  } else if (!s.ok()) {
    return Fail(s, context);
  }
  const std::string skew =
      client::VersionSkew("this xdeep", XDEEP_VERSION, context.address, resp.version());
  if (context.json) {
    nlohmann::json doc{{"schema", "xdeep.status/1"},
                       {"address", context.address},
                       {"daemon_version", resp.version().empty() ? nlohmann::json(nullptr)
                                                                 : nlohmann::json(resp.version())},
                       {"client_version", XDEEP_VERSION},
                       {"version_skew", !skew.empty()},
                       {"started_unix", resp.started_unix() ? nlohmann::json(resp.started_unix())
                                                            : nlohmann::json(nullptr)},
                       {"store_schema", resp.store_schema()},
                       {"ledger_schema", resp.ledger_schema()}};
    std::cout << doc.dump(2) << "\n";
  } else {
    const int64_t up = resp.started_unix() ? std::time(nullptr) - resp.started_unix() : 0;
    std::cout << "xdeepd " << (resp.version().empty() ? "(version unknown)" : resp.version())
              << " at " << context.address << ": serving";
    if (resp.started_unix())
      std::cout << " since " << Day(resp.started_unix()) << " (" << up << " s)";
    std::cout << "\nschema versions: store " << resp.store_schema() << ", ledger "
              << resp.ledger_schema() << "\n";
  }
  if (!skew.empty()) std::cerr << "xdeep: " << skew << "\n";
  return 0;
}

}  // namespace xdeep::cli
