// The requests of daemon_client.h as xdeep.v1 messages and back, shared by
// both transports: gRPC (grpc_daemon_client.cc) and the daemon's local client
// socket (socket_daemon_client.cc). Protobuf only, no gRPC.
#pragma once

#include <string>

#include "client/daemon_client.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::client {

// The request carrying `credential`: a fresh MUNGE credential, the daemon's
// only proof of who asks (client/munge_credential.h).
xdeep::v1::TuneRequest ToTuneRequest(const TuneQuery& query, std::string credential);
xdeep::v1::ReportRequest ToReportRequest(const ReportQuery& query, std::string credential);

// One streamed event into `answer`; `progress` gets progress events.
// `decided` tells whether a decision arrived (the first one counts).
void ReadTuneEvent(const xdeep::v1::TuneEvent& event, const ProgressCallback& progress,
                   TuneAnswer* answer, bool* decided);

// A failed call's status code (gRPC's and absl's are the same numbers) as
// the plugin acts on it: refused (the daemon said no) or unavailable.
ClientError ErrorOfStatus(int code, const std::string& message);

// After the stream ended well: false and `error` when it held neither a skip
// nor a usable decision.
bool UsableAnswer(const TuneAnswer& answer, bool decided, ClientError* error);

}  // namespace xdeep::client
