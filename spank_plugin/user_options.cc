// User option table and parsing (see user_options.h).
#include "spank_plugin/user_options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "client/time_span.h"

namespace xdeep::spank {

using client::ParseTimeSpan;

const UserOption kUserOptions[kOptCount] = {
    {"xdeep-tune", "auto|advise|explain|off",
     "Let xdeep choose nodes, GPUs, parallelism and batch size (default: auto); give a mode "
     "as --xdeep-tune=MODE, since a separate word is read as the program",
     2, "XDEEP_TUNE"},
    {"xdeep-workload", "FILE|PRESET", "Workload description (TOML) or preset name", 1,
     "XDEEP_WORKLOAD"},
    {"xdeep-budget", "AMOUNT", "Most this job may cost, in the site's currency", 1, "XDEEP_BUDGET"},
    {"xdeep-objective", "cost|time|deadline|budget",
     "What to optimise: least cost (default), least time, least cost by --xdeep-deadline, "
     "least time within --xdeep-budget",
     1, "XDEEP_OBJECTIVE"},
    {"xdeep-deadline", "TIME",
     "Time to solution the job must meet (with objective=deadline): hours (12), 90min or "
     "Slurm's 2:00:00",
     1,
     "XDEEP_DEADLINE"},
    {"xdeep-cost-tolerance", "PCT",
     "With objective=cost: the fastest configuration that costs at most PCT % more than the "
     "cheapest (default: the site's, usually 5; 0: the cheapest, however slow)",
     1, "XDEEP_COST_TOLERANCE"},
    {"xdeep-strategies", "LIST",
     "The only parallel strategies your script implements, comma-separated: dp, tp, pp, zero1, "
     "zero2, zero3 (fsdp)",
     1, "XDEEP_STRATEGIES"},
    {"xdeep-launcher", "srun|torchrun|accelerate|deepspeed",
     "What starts the training processes: srun (one task per GPU, default) or a per-node "
     "launcher that gets one task per node and starts the GPUs' processes itself",
     1, "XDEEP_LAUNCHER"},
};

std::string_view TuneModeName(TuneMode mode) {
  switch (mode) {
    case TuneMode::kOff:
      return "off";
    case TuneMode::kAuto:
      return "auto";
    case TuneMode::kAdvise:
      return "advise";
    case TuneMode::kExplain:
      return "explain";
  }
  return "?";
}

namespace {

bool ParsePositive(const char* text, double max, double* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(v) || v <= 0 || v > max) return false;
  *out = v;
  return true;
}

bool ParseInRange(const char* text, double min, double max, double* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(v) || v < min || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

bool UserOptions::Set(OptionId id, const char* value, std::string* error) {
  if (id == kOptTune) bare_tune_ = value == nullptr;
  return SetFrom(id, value, std::string("--") + kUserOptions[id].name, error);
}

// `name` is how the user gave the value (--xdeep-budget or XDEEP_BUDGET).
bool UserOptions::SetFrom(OptionId id, const char* value, const std::string& name,
                          std::string* error) {
  switch (id) {
    case kOptTune: {
      // srun passes NULL for a bare --xdeep-tune; slurmstepd passes "" too;
      // sbatch exports it into the job as the literal "(null)", which every
      // srun inside the job then parses again.
      std::string_view v = value == nullptr ? "" : value;
      if (v.empty() || v == "(null)" || v == "auto" || v == "on") {
        mode_ = TuneMode::kAuto;
      } else if (v == "advise") {
        mode_ = TuneMode::kAdvise;
      } else if (v == "explain") {
        mode_ = TuneMode::kExplain;
      } else if (v == "off") {
        mode_ = TuneMode::kOff;
      } else {
        *error = name + "=" + std::string(v) + " is not a mode; use auto, advise, explain or off";
        return false;
      }
      break;
    }
    case kOptWorkload:
      if (value == nullptr || *value == '\0') {
        *error = name + " is empty; it needs a file name or a preset name";
        return false;
      }
      workload_ = value;
      break;
    case kOptBudget:
      if (!ParsePositive(value, 1e12, &budget_)) {
        *error = name + "=" + (value ? value : "") +
                 " is not a valid amount; give a positive number such as 250";
        return false;
      }
      break;
    case kOptObjective: {
      std::string_view v = value == nullptr ? "" : value;
      if (v != "cost" && v != "time" && v != "deadline" && v != "budget") {
        *error = name + "=" + std::string(v) + " is unknown; use cost, time, deadline or budget";
        return false;
      }
      objective_ = v;
      break;
    }
    case kOptDeadline: {
      std::string why;
      if (!ParseTimeSpan(value ? value : "", &deadline_s_, &why)) {
        *error = name + ": " + why;
        return false;
      }
      break;
    }
    case kOptCostTolerance: {
      double pct = 0;
      if (!ParseInRange(value, 0, 1000, &pct)) {
        *error = name + "=" + (value ? value : "") +
                 " is not a valid percentage; give a number from 0 to 1000 such as 5";
        return false;
      }
      cost_tolerance_pct_ = pct;
      break;
    }
    case kOptStrategies: {
      static constexpr std::string_view kKnown[] = {"dp",    "tp",    "pp",   "zero1",
                                                    "zero2", "zero3", "fsdp"};
      std::vector<std::string> names;
      std::string_view rest = value == nullptr ? "" : value;
      while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        if (std::find(std::begin(kKnown), std::end(kKnown), item) == std::end(kKnown)) {
          *error = name + "=" + (value ? value : "") + ": '" + std::string(item) +
                   "' is not a strategy; list some of dp, tp, pp, zero1, zero2, zero3, fsdp "
                   "separated by commas";
          return false;
        }
        names.emplace_back(item);
        rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
        if (comma != std::string_view::npos && rest.empty()) rest = ",";  // trailing comma
      }
      if (names.empty()) {
        *error = name + " is empty; list some of dp, tp, pp, zero1, zero2, zero3, fsdp";
        return false;
      }
      strategies_ = std::move(names);
      break;
    }
    case kOptLauncher: {
      std::string_view v = value == nullptr ? "" : value;
      if (v != "srun" && v != "torchrun" && v != "accelerate" && v != "deepspeed") {
        *error = name + "=" + std::string(v) +
                 " is not a launcher; use srun, torchrun, accelerate or deepspeed";
        return false;
      }
      launcher_ = v;
      break;
    }
    case kOptCount:
      return false;
  }
  set_[id] = true;
  return true;
}

void UserOptions::ApplyTuneEnvironment(std::string* warning) {
  if (set_[kOptTune]) return;
  const char* value = std::getenv(kUserOptions[kOptTune].env);
  if (value == nullptr || *value == '\0') return;
  std::string error;
  if (!SetFrom(kOptTune, value, kUserOptions[kOptTune].env, &error)) {
    *warning = error + "; XDEEP_TUNE is ignored";
  }
}

bool UserOptions::ApplyEnvironment(std::string* error) {
  for (int i = 0; i < kOptCount; ++i) {
    if (i == kOptTune || set_[i]) continue;
    const char* env = kUserOptions[i].env;
    const char* value = std::getenv(env);
    if (value == nullptr) continue;
    if (!SetFrom(static_cast<OptionId>(i), value, env, error)) {
      *error += " (or unset " + std::string(env) + ")";
      return false;
    }
  }
  return true;
}

}  // namespace xdeep::spank
