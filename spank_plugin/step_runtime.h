// The plugin in slurmstepd (remote context) for a tuned step: the decision
// file and a private scratch directory on the compute node, the rendezvous
// variables, and the step's outcome sent to the daemon from where it ran.
//
//   user_init (slurmstepd, before the tasks fork)  -> Begin
//   task_init (each task, before exec)             -> TaskEnvironment
//   task_exit (slurmstepd, per task)               -> TaskExited (End after the
//                                                     node's last task)
//   exit      (slurmstepd, step end)               -> End (if not done yet)
//
// The scratch directory is /tmp/xdeep-<job>.<step>-XXXXXX (plugstack
// job_tmp=), mode 0700 and owned by the job's user. End forks, drops to that
// user and execs xdeep-step-report (beside the plugin), which reads the step
// times, removes the directory (never as root: the user controls its
// contents) and reports with the user's own MUNGE identity. Nothing is
// written to the user's home. A failure here never fails the step.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "client/daemon_client.h"
#include "client/run_decision.h"
#include "spank_plugin/plugin_config.h"
#include "spank_plugin/rendezvous.h"

namespace xdeep::spank {

// Slurm's step id of a batch script (SLURM_BATCH_SCRIPT in slurm.h).
inline constexpr uint32_t kBatchStepId = 0xfffffffb;

// $XDEEP_REPORT's name in the step's directory.
inline constexpr const char* kStepTimesName = "step_times";

// The positive finite step times in `path`, one per line; lines that are not
// one are skipped (the user writes this file); at most `limit`, the last ones.
std::vector<double> ReadStepTimes(const std::string& path, size_t limit = 100000);

struct StepHost {
  // The job's environment (spank_getenv); empty when unset.
  std::function<std::string(const char*)> getenv;
  // Sets a variable in the job's (user_init) or task's (task_init) environment.
  std::function<bool(const std::string&, const std::string&)> setenv;
  std::function<void(const std::string&)> error;
  // The reporter executable; default: xdeep-step-report beside the plugin.
  std::string reporter;
};

struct StepIdentity {
  uint32_t job_id = 0, step_id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  int node_id = 0, nnodes = 1, ntasks = 1, tasks_on_node = 1;
};

class StepRuntime {
 public:
  StepRuntime(PluginConfig config, StepHost host)
      : config_(std::move(config)), host_(std::move(host)) {}

  void Begin(const StepIdentity& id);
  void TaskEnvironment(int global_rank, int local_rank);
  void TaskExited(int wait_status);
  void End();
  bool active() const { return active_; }
  const std::string& directory() const { return dir_; }

 private:
  // MASTER_ADDR: the first node's name when it resolves, else 127.0.0.1 for
  // a one-node step, else its NodeAddr from scontrol (several slurmd on one
  // host: names that DNS does not know).
  std::string MasterAddress(const std::string& nodelist) const;
  bool MakeDirectory(std::string* error);
  // In the forked child: the user's identity, then exec the reporter.
  [[noreturn]] void ExecReporter(const std::vector<std::string>& argv) const;

  PluginConfig config_;
  StepHost host_;
  StepIdentity id_;
  client::RunDecision decision_;
  StepFacts facts_;
  std::string dir_;
  bool active_ = false;
  bool rendezvous_ = false;
  int worst_exit_ = 0;
  int exited_ = 0;
  std::chrono::steady_clock::time_point began_;
};

}  // namespace xdeep::spank
