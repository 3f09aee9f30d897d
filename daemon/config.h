// Daemon configuration: the TOML file xdeepd reads at start (and on SIGHUP).
//
// Parsing is strict, pyxis-style: an unknown key, a value of the wrong type or
// out of range is an error that names the file, the line and the fix, so a
// typo never silently falls back to a default.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace xdeep::daemon {

struct ServerConfig {
  // "unix:///path/to.sock" or "host:port" (TCP).
  std::string listen = "unix:///run/xdeep/xdeepd.sock";
  int worker_threads = 4;        // concurrent Tune computations
  int shutdown_grace_ms = 5000;  // in-flight calls get this long on SIGTERM
};

struct StoreConfig {
  std::string path = "/var/lib/xdeep/xdeep.db";  // SQLite database (WAL)
};

struct LogConfig {
  std::string level = "info";  // trace, debug, info, warn, error
  std::string file;            // empty: stderr
};

struct HardwareConfig {
  // Built-in profile used when no probe report covers the partition.
  std::string profile = "h100-sxm";
  // Probe reports (JSON, docs/probe_report.md) that override the built-in.
  std::vector<std::string> probe_reports;
};

struct PolicyConfig {
  int max_nodes = 1024;             // per job
  double price_per_gpu_hour = 1.0;  // in `currency`
  std::string currency = "EUR";
  std::string default_partition;  // empty: Slurm's default partition
};

struct IdentityConfig {
  // "munge": every request must carry a valid MUNGE credential (the uid comes
  // from it). "none": no credential is checked (single-user test setups only).
  std::string mode = "munge";
  std::string munge_socket;  // empty: libmunge's default socket
};

struct DaemonConfig {
  ServerConfig server;
  StoreConfig store;
  LogConfig log;
  HardwareConfig hardware;
  PolicyConfig policy;
  IdentityConfig identity;
  std::string source;  // where it was read from, for messages
};

// Parses `text`; errors read "<source>:<line>: <what>; <fix>".
absl::StatusOr<DaemonConfig> ParseDaemonConfig(std::string_view text, std::string_view source);

// Reads and parses the file at `path`.
absl::StatusOr<DaemonConfig> LoadDaemonConfig(const std::string& path);

}  // namespace xdeep::daemon
