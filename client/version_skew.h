// The one line the plugin and `xdeep` print when they meet an xdeepd of
// another version: parts of one release are tested together, others are not.
#pragma once

#include <string>
#include <string_view>

namespace xdeep::client {

// "" when `daemon_version` is `mine`; else the warning (without "xdeep: ").
// An empty `daemon_version` is a daemon older than the version report.
inline std::string VersionSkew(std::string_view what, std::string_view mine,
                               std::string_view daemon_at, std::string_view daemon_version) {
  if (daemon_version == mine) return "";
  const std::string theirs = daemon_version.empty()
                                 ? "older than " + std::string(mine) + " (it does not say)"
                                 : std::string(daemon_version);
  return "warning: version skew: " + std::string(what) + " is " + std::string(mine) +
         ", xdeepd at " + std::string(daemon_at) + " is " + theirs +
         "; install the same xdeep version on the daemon's host, submit hosts and compute nodes";
}

}  // namespace xdeep::client
