// Configuration search: enumerate every feasible way of running a workload on
// up to the policy's number of nodes (nodes, GPUs per node, every dp x tp x pp
// factorisation, sharding stage, micro-batch, accumulation, recomputation,
// pipeline schedule, global batch within bounds), prune by memory and policy,
// score by the objective, and return the best, the runner-ups and examples of
// why the others lost. Deterministic: ties keep the first in enumeration order.
#ifndef XDEEP_TUNER_SEARCH_H_
#define XDEEP_TUNER_SEARCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/configuration.h"
#include "tuner/hardware_profile.h"
#include "tuner/strategy_model.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

struct SearchLimits {
  int max_nodes = 1;  // nodes available (min of policy, partition, user's -N, enclosing allocation)
  // GPUs per node the caller's nodes hold (partition, user's bound, enclosing
  // allocation); 0 = the profile's node shape. Given, it is the node size: a
  // measured profile counts the GPUs its probe job held, not the node's.
  int max_gpus_per_node = 0;
  int max_total_gpus = 0;  // 0 = no limit (user's --gpus / -n)
  // Price: cost = GPUs used x hours x price_per_gpu_hour, unless
  // price_per_node_hour > 0, then cost = nodes x hours x price_per_node_hour
  // (whole nodes billed, e.g. an exclusive partition or TRES billing per node).
  double price_per_gpu_hour = 1.0;
  double price_per_node_hour = 0;
  Objective objective = Objective::kCost;
  // kCost picks the fastest configuration whose value is within this
  // fraction of the least value (0.05: 5 %), where a configuration's value is
  // its cost plus time_value_per_hour x its hours to solution; 0 and 0: the
  // least cost, whatever it takes (docs/objectives.md).
  double cost_tolerance = 0;
  double time_value_per_hour = 0;
  double budget = 0;      // 0 = none; a hard limit for every objective
  double deadline_s = 0;  // 0 = none; a hard limit for every objective
  double min_parallel_efficiency = 0;
  // Longest a job may run (the launch's --time, the partition's MaxTime, an
  // enclosing allocation's time left); 0 = none. A run longer than this is
  // planned as checkpointed segments, each a job within it, and each segment
  // after the first spends segment_restart_s restarting from its checkpoint
  // (time and cost count it; queue waits between segments are not modelled).
  double time_limit_s = 0;
  double segment_restart_s = 0;
  std::vector<std::string>
      allowed_strategies;  // empty = all; "dp","tp","pp","zero1","zero2","zero3" ("fsdp" = zero3)
  // The launch's --xdeep-strategies (same names); with the site's list above
  // and the workload's [parallel] table, every list must allow a strategy.
  std::vector<std::string> user_strategies;
  int max_alternatives = 5;
  int max_rejected_examples = 8;
  bool try_interleaved = true;  // also evaluate the interleaved pipeline schedule
  // A configuration's analytical step time corrected from the outcomes of
  // real runs (tuner/step_time_correction.h); empty = none. Cost and
  // objectives see the corrected one.
  std::function<StepTime(const Configuration&, const StepTime&)> step_time_correction;
  // Bounds on one search's work (the daemon derives them from its policy):
  // past `max_candidates` configurations scored (0 = no cap) the search ends
  // with ResourceExhausted naming the limits to narrow. `interrupt` is asked
  // every few model evaluations (a few milliseconds apart at most); a non-OK
  // status (the client's deadline passed, it went away) ends the search with
  // that status.
  uint64_t max_candidates = 0;
  std::function<absl::Status()> interrupt;
};

struct Candidate {
  Configuration config;
  Prediction prediction;
  std::string why;  // reason it lost, or why it won
};

struct SearchResult {
  Candidate best;
  std::vector<Candidate> alternatives;
  std::vector<Candidate> rejected_examples;
  std::vector<Candidate> pareto;  // cost vs time front, ascending time
  uint64_t evaluated = 0;         // configurations scored (memory and/or time)
  uint64_t pruned = 0;            // rejected by a memory bound without being scored
  uint64_t feasible = 0;
  // Per-reason counts of rejected configurations.
  uint64_t rejected_memory = 0, rejected_policy = 0, rejected_budget = 0, rejected_deadline = 0,
           rejected_efficiency = 0;
  std::string hardware_label;  // "built-in profile <name>" or "measured <host> <date>"
};

absl::StatusOr<SearchResult> Search(const Workload& w, const HardwareProfile& hw,
                                    const SearchLimits& limits);

// The model's figures for every configuration one search scored, in the order
// it found them, with what it ruled out before scoring. They depend on the
// workload, the hardware and the limits that shape the enumeration (nodes,
// GPUs, strategies, interleaving, the candidate cap, examples kept), not on
// those that only score (objective, prices, budget, deadline, tolerance,
// value of time, efficiency floor, time limit, restarts, correction): a
// search that differs from the recorded one only in those gives the same
// result from the space as from scratch, without timing anything.
struct ScoredSpace {
  struct Entry {
    Configuration config;
    double memory = 0;  // per GPU; 0: fits, figured only for the candidates kept
    StepTime time;      // the model's, before any correction
  };
  std::vector<Entry> entries;
  double ideal_time_per_sample = 0;
  uint64_t evaluated = 0, pruned = 0, rejected_memory = 0, rejected_gpu_limit = 0;
  std::vector<Candidate> memory_examples;
  // Searches scoring more configurations record none (memory per space).
  static constexpr size_t kMaxEntries = size_t{1} << 15;
};

// Search, also recording its ScoredSpace into `*space` (left null when the
// search stopped early or scored more than ScoredSpace::kMaxEntries).
absl::StatusOr<SearchResult> SearchRecording(const Workload& w, const HardwareProfile& hw,
                                             const SearchLimits& limits,
                                             std::shared_ptr<const ScoredSpace>* space);
// Search's result under `limits` from a space a search of the same workload,
// hardware and enumeration limits recorded.
absl::StatusOr<SearchResult> SearchInSpace(const ScoredSpace& space, const Workload& w,
                                           const HardwareProfile& hw, const SearchLimits& limits);

// Scores one configuration the way Search does (memory, time, cost); exposed
// for brute-force tests and "explain". Does not check feasibility.
Prediction Evaluate(const Workload& w, const HardwareProfile& hw, const SearchLimits& limits,
                    const Configuration& c);

// The largest micro-batch the search considers: the workload's limit, and
// at most twice the largest micro-batch whose GEMMs the profile measured
// (LargestProbedMicroBatch), where it measured them at all.
int SearchMicroBatchLimit(const Workload& w, const HardwareProfile& hw);

// What a prediction for `c` extrapolates beyond the profile's measurements,
// as "; "-separated clauses; empty when nothing (Prediction::extrapolated).
std::string ExtrapolationNote(const Workload& w, const HardwareProfile& hw, const Configuration& c);

// Jobs a run of `run_s` seconds (without restarts) takes under
// limits.time_limit_s: ceil(run_s / (time_limit_s - segment_restart_s)), 1
// without a limit or when it fits. Search refuses limits that leave no time.
int SegmentsWithin(const SearchLimits& limits, double run_s);

// Predicted cost of one segment of `p` (the whole cost when it is one job):
// the hold a budget carries at a time.
double SegmentCost(const SearchLimits& limits, const Prediction& p);

// e.g. "dp4", "dp2xtp2", "fsdp8", "dp2xpp2 (1f1b)", "zero1-dp8xtp8xpp4 (interleaved)",
// "zero1-dp8xtp8spxcp16xpp16 (interleaved v2)" (sp: sequence parallel; cp: context parallel).
std::string StrategyName(const Configuration& c);

// Samples needed at global batch b: samples x (1 + b/B_noise) / (1 + b_ref/B_noise).
double SamplesNeeded(const Workload& w, int64_t global_batch);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_SEARCH_H_
