// The decision as the application receives it: the XDEEP_* variables of a
// tuned launch and the versioned decision file (docs/decision-file.md) built
// from them. Both come from one RunDecision, so the compute node (which sees
// only its environment) and `xdeep plan --emit json` write the same document.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "client/daemon_client.h"

namespace xdeep::client {

// Version of the decision file's layout ("schema": "xdeep.decision/1").
inline constexpr int kDecisionFileVersion = 1;

// How ranks map to groups: tensor-parallel ranks vary fastest, then context,
// data and pipeline (Megatron-LM's default order), so a TP group shares a node.
inline constexpr const char* kRankOrder = "tp-cp-dp-pp";

// Per-node launchers start one Slurm task per node, which starts the GPUs'
// processes itself; srun starts one task per GPU.
enum class AppLauncher { kSrun, kTorchrun, kAccelerate, kDeepspeed };

std::string_view AppLauncherName(AppLauncher launcher);
// "torchrun" -> kTorchrun; false for an unknown name.
bool ParseAppLauncher(std::string_view name, AppLauncher* launcher);
inline bool PerNode(AppLauncher l) { return l != AppLauncher::kSrun; }
// The per-node launcher a command starts ("/usr/bin/torchrun" -> "torchrun"),
// or "" for anything else.
std::string LauncherOfProgram(std::string_view program);

struct RunDecision {
  std::string decision_id, workload, strategy;
  AppLauncher launcher = AppLauncher::kSrun;
  int nodes = 1, gpus_per_node = 1, tasks = 1;
  int dp = 1, tp = 1, pp = 1, cp = 1, sharding_stage = 0;
  std::string pipeline_schedule;  // "1f1b", "interleaved"; empty without pp
  int virtual_stages = 1;
  int micro_batch = 1, grad_accumulation = 1;
  int64_t global_batch = 1;
  bool recompute = false;
  bool selective_recompute = false;  // only the attention core recomputed (Megatron's selective)
  bool sequence_parallel = false;  // Megatron sequence parallelism inside the tp group
  double predicted_step_time_s = 0, predicted_cost = 0, predicted_time_to_solution_s = 0;
  int64_t predicted_memory_per_gpu_bytes = 0;
  // Each job's time limit (0: none) and the checkpointed segments (jobs) the
  // run is planned as (docs/user.md, "Time limits").
  double time_limit_s = 0;
  int segments = 1;
};

using Variables = std::vector<std::pair<std::string, std::string>>;

RunDecision RunDecisionOf(const TuneAnswer& answer, AppLauncher launcher);

// The XDEEP_* variables every task of a tuned launch gets (docs/user.md).
Variables DecisionVariables(const RunDecision& d);

// Reads the variables back through `get` (empty: unset); false with one
// line naming the variable that is missing, malformed or inconsistent.
bool ReadDecisionVariables(const std::function<std::string(const char*)>& get, RunDecision* d,
                           std::string* error);

// The decision file: pretty-printed JSON, schema xdeep.decision/1.
std::string DecisionFileJson(const RunDecision& d);

// Parses a decision file; false with one line saying what is wrong.
bool ParseDecisionFile(const std::string& text, RunDecision* d, std::string* error);

}  // namespace xdeep::client
