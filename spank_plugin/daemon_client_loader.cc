// Finds and dlopens a client module (see daemon_client_loader.h).
#include "spank_plugin/daemon_client_loader.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <string>

#include "client/socket_daemon_client.h"

namespace xdeep::spank {

using client::DaemonClient;

std::string PluginDirectory() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&PluginDirectory), &self) == 0 || self.dli_fname == nullptr) {
    return "";
  }
  std::string dir = self.dli_fname;
  return dir.substr(0, dir.rfind('/') + 1);
}

std::unique_ptr<DaemonClient> LoadDaemonClient(const std::string& address, std::string* error) {
  // The client modules are installed beside the plugin.
  const std::string dir = PluginDirectory();
  if (dir.empty()) {
    *error = "cannot locate xdeep_spank.so on disk";
    return nullptr;
  }
  // The daemon's local client socket when it has one: no gRPC to map
  // (~6 ms of CPU per tuned srun, issue #27).
  const std::string socket = client::ClientSocketPath(address);
  struct stat st {};
  const bool local = !socket.empty() && stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
  const std::string path = dir + (local ? "xdeep_spank_socket.so" : "xdeep_spank_client.so");
  const char* entry = local ? "xdeep_spank_socket_create" : "xdeep_spank_client_create";
  // Never dlclose'd: gRPC does not support being unloaded. RTLD_LAZY: the
  // libraries' functions are bound when first called, not all at load
  // (RTLD_NOW cost every tuned srun ~2.5 ms of CPU with gRPC, issue #27).
  void* module = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (module == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + path + ": " + (why ? why : "unknown error");
    return nullptr;
  }
  using CreateFn = DaemonClient* (*)(const char*);
  auto create = reinterpret_cast<CreateFn>(dlsym(module, entry));
  if (create == nullptr) {
    *error = path + " lacks " + entry + "; reinstall xdeep";
    return nullptr;
  }
  return std::unique_ptr<DaemonClient>(create(local ? socket.c_str() : address.c_str()));
}

}  // namespace xdeep::spank
