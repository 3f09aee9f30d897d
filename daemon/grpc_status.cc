// absl -> gRPC status conversion (see grpc_status.h). The codes share values.
#include "daemon/grpc_status.h"

#include <string>

namespace xdeep::daemon {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace xdeep::daemon
