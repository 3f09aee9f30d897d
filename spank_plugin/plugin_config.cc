// Plugstack argument parsing (see plugin_config.h).
#include "spank_plugin/plugin_config.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace xdeep::spank {

bool ParsePluginConfig(const std::vector<std::string>& args, PluginConfig* config,
                       std::string* error) {
  PluginConfig result;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    auto bad = [&](std::string_view want) {
      *error = "plugstack.conf: " + key + "=" + value + " is invalid; " + std::string(want);
      return false;
    };
    if (eq == std::string::npos || value.empty()) {
      *error = "plugstack.conf: argument '" + arg +
               "' must be key=value; known keys: daemon, default, timeout_ms, fail, job_tmp, "
               "rendezvous_ports";
      return false;
    }
    if (key == "daemon") {
      result.daemon = value;
    } else if (key == "default") {
      if (value != "on" && value != "off") return bad("use default=on or default=off");
      result.default_on = value == "on";
    } else if (key == "timeout_ms") {
      int ms = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec != std::errc() || end != value.data() + value.size() || ms < 1 || ms > 600000) {
        return bad("use a whole number of milliseconds from 1 to 600000");
      }
      result.timeout_ms = ms;
    } else if (key == "fail") {
      if (value != "open" && value != "closed") return bad("use fail=open or fail=closed");
      result.fail_closed = value == "closed";
    } else if (key == "job_tmp") {
      if (value.front() != '/' || value.find("..") != std::string::npos)
        return bad("give an absolute node-local directory such as job_tmp=/tmp");
      result.job_tmp = value;
    } else if (key == "rendezvous_ports") {
      int first = 0, last = 0;
      const size_t dash = value.find('-');
      const char* end = value.data() + value.size();
      auto a = std::from_chars(value.data(), value.data() + std::min(dash, value.size()), first);
      auto b = dash == std::string::npos ? a : std::from_chars(value.data() + dash + 1, end, last);
      if (dash == std::string::npos || a.ec != std::errc() || b.ec != std::errc() ||
          a.ptr != value.data() + dash || b.ptr != end || first < 1024 || last > 65535 ||
          first > last) {
        return bad("use a port range such as rendezvous_ports=29500-30499 (1024-65535)");
      }
      result.port_first = first;
      result.port_last = last;
    } else {
      *error = "plugstack.conf: unknown argument '" + key +
               "'; known keys: daemon, default, timeout_ms, fail, job_tmp, rendezvous_ports";
      return false;
    }
  }
  *config = result;
  return true;
}

}  // namespace xdeep::spank
