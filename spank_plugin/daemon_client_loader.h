// The plugin reaches the daemon through a client module dlopen'ed only when a
// request is made, so that srun, sbatch, slurmstepd and slurmd load the plugin
// itself without protobuf, MUNGE or gRPC: xdeep_spank_socket.so (protobuf and
// MUNGE) when the daemon's local client socket is there, else
// xdeep_spank_client.so (gRPC, for a daemon on another host).
#pragma once

#include <memory>
#include <string>

#include "client/daemon_client.h"

namespace xdeep::spank {

// The directory holding xdeep_spank.so and its companions (ends with '/').
std::string PluginDirectory();

// dlopens the client module that sits next to the plugin for `address`;
// null and `error` when the module cannot be loaded.
std::unique_ptr<client::DaemonClient> LoadDaemonClient(const std::string& address,
                                                       std::string* error);

}  // namespace xdeep::spank

// Entry points of xdeep_spank_client.so (client_module.cc, a gRPC address)
// and xdeep_spank_socket.so (socket_client_module.cc, a socket path), found by dlsym.
extern "C" xdeep::client::DaemonClient* xdeep_spank_client_create(const char* address);
extern "C" xdeep::client::DaemonClient* xdeep_spank_socket_create(const char* path);
