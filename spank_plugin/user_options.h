// The user's xdeep options: one table for the command line (--xdeep-*) and
// the environment (XDEEP_TUNE, XDEEP_WORKLOAD, ...). The environment applies
// only where the command line did not set a value, and only once a launch is
// tuned: a stale XDEEP_BUDGET must not break an srun that never asked for
// xdeep. Setters are idempotent: slurmstepd calls option callbacks more than once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xdeep::spank {

enum class TuneMode { kOff, kAuto, kAdvise, kExplain };

std::string_view TuneModeName(TuneMode mode);

struct UserOption {
  const char* name;     // long option without "--"
  const char* arginfo;  // shown by srun --help
  const char* usage;
  int has_arg;      // 1 required, 2 optional (SPANK's convention)
  const char* env;  // environment fallback
};

enum OptionId {
  kOptTune = 0,
  kOptWorkload,
  kOptBudget,
  kOptObjective,
  kOptDeadline,
  kOptCostTolerance,
  kOptStrategies,
  kOptLauncher,
  kOptCount
};

// Indexed by OptionId.
extern const UserOption kUserOptions[kOptCount];

class UserOptions {
 public:
  // From a callback; `value` may be null (has_arg == 2).
  // Returns false with a one-line `error` for a bad value.
  bool Set(OptionId id, const char* value, std::string* error);
  // XDEEP_TUNE where --xdeep-tune was not given. An empty value is unset; a
  // bad one is ignored with a one-line `warning` (the launch did not clearly
  // ask for tuning, so it must still run).
  void ApplyTuneEnvironment(std::string* warning);
  // The other XDEEP_* variables where the command line was silent; false
  // with one line naming the variable for a bad value.
  bool ApplyEnvironment(std::string* error);

  std::optional<TuneMode> mode() const { return mode_; }
  // --xdeep-tune was given with no "=MODE" on the command line.
  bool bare_tune() const { return bare_tune_; }
  const std::string& workload() const { return workload_; }
  double budget() const { return budget_; }
  const std::string& objective() const { return objective_; }
  double deadline_s() const { return deadline_s_; }
  // Percent over the least cost the default objective may spend for time;
  // unset: the site's [policy] cost_tolerance_pct.
  std::optional<double> cost_tolerance_pct() const { return cost_tolerance_pct_; }
  // The only strategies the script runs (--xdeep-strategies=dp,zero3); empty: any.
  const std::vector<std::string>& strategies() const { return strategies_; }
  // --xdeep-launcher: srun, torchrun, accelerate, deepspeed; empty: the
  // workload's [parallel] launcher, else srun.
  const std::string& launcher() const { return launcher_; }

 private:
  bool SetFrom(OptionId id, const char* value, const std::string& label, std::string* error);

  bool set_[kOptCount] = {};
  bool bare_tune_ = false;
  std::optional<TuneMode> mode_;
  std::string workload_;
  double budget_ = 0;
  std::string objective_;
  double deadline_s_ = 0;
  std::optional<double> cost_tolerance_pct_;
  std::vector<std::string> strategies_;
  std::string launcher_;
};

}  // namespace xdeep::spank
