// What slurmctld's job_submit.lua asks through xdeep-admit, and the client
// that asks it on the daemon's admission socket (daemon/admit_socket.h,
// framing in client/admit_wire.h). No gRPC and no MUNGE: the kernel tells the
// daemon who connected, so a strict submission's check stays within ~1-2 ms.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "client/daemon_client.h"

namespace xdeep::client {

struct AdmitQuery {
  std::string token;  // from the job's SPANK environment, may be empty or forged
  uint32_t job_uid = 0;
  std::string partition;
  int nodes = 0;
  std::string array;                                       // job array indices, empty = none
  std::string tres_per_node, tres_per_job, tres_per_task;  // GPU request ("gres:gpu:4")
  bool heterogeneous = false;  // a heterogeneous job's component: held from its time limit
  int64_t time_limit_s = 0;
  std::string account;
};

struct AdmitAnswer {
  bool admitted = false;
  std::string reason, decision_id;
};

// Asks the daemon listening on `socket_path` whether the job may be
// submitted; false and `error` when it refused the caller or could not
// answer before `deadline` (kUnavailable).
bool AskAdmission(const std::string& socket_path, const AdmitQuery& query,
                  std::chrono::steady_clock::time_point deadline, AdmitAnswer* answer,
                  ClientError* error);

}  // namespace xdeep::client
