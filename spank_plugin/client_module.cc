// xdeep_spank_client.so: the gRPC client of client/, packaged as the module
// the plugin dlopens on demand (daemon_client_loader.h).
#include "client/daemon_client.h"
#include "spank_plugin/daemon_client_loader.h"

extern "C" xdeep::client::DaemonClient* xdeep_spank_client_create(const char* address) {
  return xdeep::client::ConnectDaemon(address).release();
}
