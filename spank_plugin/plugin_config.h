// Site settings for the plugin, from the plugstack.conf line:
//   required /usr/lib/slurm/xdeep_spank.so daemon=unix:///run/xdeep/xdeepd.sock
//            default=off timeout_ms=3000 fail=open job_tmp=/tmp
//            rendezvous_ports=29500-30499                  (all on one line)
// Parsing is strict: an unknown key or a bad value is an error naming it.
#pragma once

#include <string>
#include <vector>

namespace xdeep::spank {

struct PluginConfig {
  std::string daemon = "unix:///run/xdeep/xdeepd.sock";
  bool default_on = false;   // tune launches that did not ask for it
  int timeout_ms = 3000;     // longest wait for a decision before failing open/closed
  bool fail_closed = false;  // daemon unavailable: refuse the launch instead of running it
  // Where a tuned step's private directory (decision file, step times) is
  // made on the compute node; node-local, never the user's home.
  std::string job_tmp = "/tmp";
  // Ports a step's MASTER_PORT is drawn from (by job and step id).
  int port_first = 29500, port_last = 30499;
};

// Parses plugstack arguments; on error returns false and sets `error` to one
// line naming the argument and the fix.
bool ParsePluginConfig(const std::vector<std::string>& args, PluginConfig* config,
                       std::string* error);

}  // namespace xdeep::spank
