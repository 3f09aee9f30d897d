// Finds and dlopens xdeep_spank_client.so (see daemon_client_loader.h).
#include "spank_plugin/daemon_client_loader.h"

#include <dlfcn.h>

#include <string>

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
  // The client module is installed beside the plugin.
  const std::string dir = PluginDirectory();
  if (dir.empty()) {
    *error = "cannot locate xdeep_spank.so on disk";
    return nullptr;
  }
  const std::string path = dir + "xdeep_spank_client.so";
  // Never dlclose'd: gRPC does not support being unloaded. RTLD_LAZY: its
  // ~60 libraries' functions are bound when first called, not all at load
  // (RTLD_NOW cost every tuned srun ~2.5 ms of CPU, issue #27).
  void* module = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (module == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + path + ": " + (why ? why : "unknown error");
    return nullptr;
  }
  using CreateFn = DaemonClient* (*)(const char*);
  auto create = reinterpret_cast<CreateFn>(dlsym(module, "xdeep_spank_client_create"));
  if (create == nullptr) {
    *error = path + " lacks xdeep_spank_client_create; reinstall xdeep";
    return nullptr;
  }
  return std::unique_ptr<DaemonClient>(create(address.c_str()));
}

}  // namespace xdeep::spank
