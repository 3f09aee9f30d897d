// The user's xdeep options: one table for the command line (--xdeep-*) and
// the environment (XDEEP_TUNE, XDEEP_WORKLOAD, ...). The environment applies
// only where the command line did not set a value. Setters are idempotent:
// slurmstepd calls option callbacks more than once.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

enum OptionId { kOptTune = 0, kOptWorkload, kOptBudget, kOptObjective, kOptDeadline, kOptCount };

// Indexed by OptionId.
extern const UserOption kUserOptions[kOptCount];

class UserOptions {
 public:
  // From a callback or the environment; `value` may be null (has_arg == 2).
  // Returns false with a one-line `error` for a bad value.
  bool Set(OptionId id, const char* value, std::string* error);
  // Fills options the command line left unset from the environment.
  bool ApplyEnvironment(std::string* error);

  std::optional<TuneMode> mode() const { return mode_; }
  const std::string& workload() const { return workload_; }
  double budget() const { return budget_; }
  const std::string& objective() const { return objective_; }
  double deadline_s() const { return deadline_s_; }

 private:
  bool set_[kOptCount] = {};
  std::optional<TuneMode> mode_;
  std::string workload_;
  double budget_ = 0;
  std::string objective_;
  double deadline_s_ = 0;
};

}  // namespace xdeep::spank
