// The plugin reaches the daemon through xdeep_spank_client.so, dlopen'ed only
// when a request is made: srun, sbatch, slurmstepd and slurmd load the plugin
// itself without gRPC's libraries and threads.
#pragma once

#include <memory>
#include <string>

#include "client/daemon_client.h"

namespace xdeep::spank {

// The directory holding xdeep_spank.so and its companions (ends with '/').
std::string PluginDirectory();

// dlopens the client module that sits next to the plugin and connects it to
// `address`; null and `error` when the module cannot be loaded.
std::unique_ptr<client::DaemonClient> LoadDaemonClient(const std::string& address,
                                                       std::string* error);

}  // namespace xdeep::spank

// Entry point of xdeep_spank_client.so (client_module.cc), found by dlsym.
extern "C" xdeep::client::DaemonClient* xdeep_spank_client_create(const char* address);
