// xdeep_spank_socket.so: the client of the daemon's local client socket
// (client/socket_daemon_client.h) as the module the plugin dlopens on demand
// when the daemon listens on a unix socket: protobuf and MUNGE, no gRPC.
#include "client/socket_daemon_client.h"
#include "spank_plugin/daemon_client_loader.h"

extern "C" xdeep::client::DaemonClient* xdeep_spank_socket_create(const char* path) {
  return xdeep::client::ConnectDaemonSocket(path).release();
}
