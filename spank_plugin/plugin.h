// The plugin's behaviour in each context, with no SPANK types: spank_entry.cc
// translates the hooks into these calls, so GoogleTest can drive all of it.
//
//   srun (local):        Init -> option callbacks -> InitPostOpt (ask, re-exec)
//                        -> LocalExit (report; the daemon binds the job from it)
//   sbatch/salloc:       Init -> option callbacks -> InitPostOpt (ask, re-exec)
//   slurmstepd (remote): Init -> option callbacks (the environment passes on);
//                        nothing that could fail a step (a failed batch step
//                        drains its node): strict partitions are enforced at
//                        submission by slurmctld's job_submit.lua instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/daemon_client.h"
#include "spank_plugin/daemon_client_loader.h"
#include "spank_plugin/launch_args.h"
#include "spank_plugin/plugin_config.h"
#include "spank_plugin/user_options.h"

namespace xdeep::spank {

// What the plugin needs from its host process.
struct Host {
  std::function<void(const std::string&)> info;   // a line for the user
  std::function<void(const std::string&)> error;  // a line for the user, as an error
  // Replaces the process with `argv` (execv of /proc/self/exe); returns only on failure.
  std::function<void(const std::vector<std::string>&)> reexec;
  // Ends the process without launching (explain mode).
  std::function<void()> exit_without_launch;
  // Puts NAME=value in the job's SPANK environment, which slurmctld's
  // job_submit.lua reads (spank_job_control_setenv); false on failure.
  std::function<bool(const std::string& name, const std::string& value)> set_job_env;
  // Writes raw bytes to the user's terminal (progress redrawn in place);
  // empty where stderr is no terminal.
  std::function<void(std::string_view)> terminal;
  // Loads the gRPC client (dlopen); replaced in tests.
  std::function<std::unique_ptr<client::DaemonClient>(const std::string&, std::string*)>
      load_client = LoadDaemonClient;
};

class Plugin {
 public:
  explicit Plugin(Host host) : host_(std::move(host)) {}

  // Plugstack arguments; 0 or -1 (after printing why).
  int Init(const std::vector<std::string>& args);
  // srun, before it reads its input environment: an srun inside a tuned job
  // whose --export=NONE (SLURM_EXPORT_ENV) would hide the decision from its
  // tasks passes the XDEEP_* variables as well.
  void PrepareStepEnvironment();
  // An --xdeep-* option callback; 0 or -1.
  int OnOption(OptionId id, const char* value);
  // After option parsing in srun / sbatch / salloc. `read_argv` gives the
  // process's command line, read only when a launch is actually tuned (every
  // srun passes here); `first_command` is the index of the user's command (optind).
  int InitPostOpt(Launcher launcher, const std::function<std::vector<std::string>()>& read_argv,
                  int first_command);
  // srun, at the end.
  void LocalExit(uint32_t job_id);
  const PluginConfig& config() const { return config_; }
  // This process re-executed itself with a decision it must bind and settle.
  bool owns_launch() const { return owns_launch_; }

 private:
  int Refuse(const std::string& message);
  client::DaemonClient* Client(std::string* error);
  // Deadline of the next daemon call: the launch's leftover budget (the
  // re-executed launch) or a fresh timeout_ms.
  std::chrono::steady_clock::time_point WaitDeadline() const;
  bool BuildQuery(Launcher launcher, TuneMode mode, const std::vector<std::string>& argv,
                  int first_command, client::TuneQuery* query, std::string* error, bool* skip);
  // The launch's limits from #SBATCH lines, the input environment and the
  // command line; false with `error` when they cannot be read or tuned.
  bool ReadBounds(Launcher launcher, const std::vector<std::string>& argv, int first_command,
                  std::string* error);
  // The workload file or preset; false with `error`, or true with `skip` set
  // when a site-default launch names none.
  bool ReadWorkload(client::TuneQuery* q, std::string* error, bool* skip);
  // Limits only sinfo knows: nodes with -C's features and --mem, GPUs whose
  // tasks' --mem-per-gpu / --mem-per-cpu fit a node; false with `error` when
  // none fit.
  bool NodeBounds(client::TuneQuery* q, std::string* error);
  // Removes every XDEEP_* variable from this process's environment.
  static void UnsetXdeepEnvironment();

  Host host_;
  PluginConfig config_;
  UserOptions options_;
  LaunchBounds bounds_;
  bool script_on_stdin_ = false;  // sbatch read its script from a redirected file
  bool post_opt_seen_ = false;    // InitPostOpt ran (srun: once per het component)
  // --xdeep-launcher, else the launcher the command starts ("torchrun"); empty: the workload's.
  std::string launcher_;
  std::unique_ptr<client::DaemonClient> client_;
  std::string decision_id_;  // set in a re-executed (tuned) launch or a tuned job's srun
  bool owns_launch_ = false;
  bool reported_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::optional<std::chrono::milliseconds> wait_left_;
};

}  // namespace xdeep::spank
