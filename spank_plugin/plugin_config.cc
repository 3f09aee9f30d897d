// Plugstack argument parsing (see plugin_config.h).
#include "spank_plugin/plugin_config.h"

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
               "' must be key=value; known keys: daemon, default, timeout_ms, fail";
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
    } else {
      *error = "plugstack.conf: unknown argument '" + key +
               "'; known keys: daemon, default, timeout_ms, fail";
      return false;
    }
  }
  *config = result;
  return true;
}

}  // namespace xdeep::spank
