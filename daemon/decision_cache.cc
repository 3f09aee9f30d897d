// DecisionCache (see decision_cache.h).
#include "daemon/decision_cache.h"

#include <fmt/format.h>

#include "daemon/decision_maker.h"
#include "tuner/fingerprint.h"

namespace xdeep::daemon {
namespace {

// The workload's identity: what LoadWorkload reads, with separators no text
// field can fake (lengths first).
std::string WorkloadKey(const xdeep::v1::Workload& w) {
  const std::string& body = w.source_case() == xdeep::v1::Workload::kToml ? w.toml() : w.preset();
  return fmt::format("{}:{}:{}:{}{}", static_cast<int>(w.source_case()), w.source_name().size(),
                     body.size(), w.source_name(), body);
}

void AppendList(std::string* key, const std::vector<std::string>& list) {
  fmt::format_to(std::back_inserter(*key), "[{}", list.size());
  for (const std::string& s : list) fmt::format_to(std::back_inserter(*key), ":{}:{}", s.size(), s);
  key->push_back(']');
}

}  // namespace

absl::StatusOr<std::shared_ptr<const DecisionCache::ParsedWorkload>> DecisionCache::Workload(
    const xdeep::v1::Workload& w, const tuner::BuildPoll& poll) {
  const std::string key = WorkloadKey(w);
  if (auto hit = workloads_.Find(key)) return hit;
  auto parsed = LoadWorkload(w, poll);
  if (!parsed.ok()) return parsed.status();
  auto shared = std::make_shared<ParsedWorkload>();
  shared->workload = *std::move(parsed);
  if (shared->workload.layers.size() <= max_cached_layers_) {
    shared->fingerprint = tuner::ModelFingerprint(shared->workload);
    workloads_.Put(key, shared);
  }
  return shared;
}

// Every field of SearchLimits that changes a result must be in the key: a
// field added there fails this check until it is added to SearchKey (and the
// size here updated). x86-64 (the build and CI machines).
static_assert(sizeof(void*) != 8 || sizeof(tuner::SearchLimits) == 232,
              "SearchLimits changed: add the new field to DecisionCache::SearchKey, and to "
              "SpaceKey too when it shapes the enumeration (tuner/search.h, ScoredSpace)");

absl::StatusOr<std::shared_ptr<const FittedCorrection>> DecisionCache::Correction(
    Store& store, const LearningScope& scope) {
  // The generation is read before the runs: a run recorded meanwhile makes
  // the next request fit again, never the reverse.
  const uint64_t generation = store.learning_generation();
  const std::string key =
      fmt::format("{}|{}:{}|{}:{}|{}:{}|{}|{}:{}", generation, scope.fingerprint.size(),
                  scope.fingerprint, scope.hardware.size(), scope.hardware,
                  scope.partition.size(), scope.partition,
                  scope.uid ? static_cast<int64_t>(*scope.uid) : -1, scope.account.size(),
                  scope.account);
  if (auto hit = corrections_.Find(key)) return hit;
  auto fitted = FitCorrection(store, scope);
  if (!fitted.ok()) return fitted.status();
  auto shared = std::make_shared<const FittedCorrection>(*std::move(fitted));
  corrections_.Put(key, shared);
  return shared;
}

std::string DecisionCache::SearchKey(const xdeep::v1::Workload& w, uint64_t hardware_generation,
                                     const tuner::SearchLimits& l, const std::string& correction) {
  // %a: doubles exactly, so two limits share a key only when equal.
  std::string key = fmt::format(
      "{}|hw{}|{} {} {} {:a} {:a} {} {:a} {:a} {:a} {:a} {:a} {:a} {:a} {} {} {} {}|", WorkloadKey(w),
      hardware_generation, l.max_nodes, l.max_gpus_per_node, l.max_total_gpus,
      l.price_per_gpu_hour, l.price_per_node_hour, static_cast<int>(l.objective),
      l.cost_tolerance, l.time_value_per_hour, l.budget, l.deadline_s, l.min_parallel_efficiency,
      l.time_limit_s, l.segment_restart_s, l.max_alternatives, l.max_rejected_examples, l.try_interleaved, l.max_candidates);
  AppendList(&key, l.allowed_strategies);
  AppendList(&key, l.user_strategies);
  fmt::format_to(std::back_inserter(key), "|{}:{}", correction.size(), correction);
  return key;
}

std::string DecisionCache::SpaceKey(const xdeep::v1::Workload& w, uint64_t hardware_generation,
                                    const tuner::SearchLimits& l) {
  std::string key =
      fmt::format("{}|hw{}|{} {} {} {} {} {}|", WorkloadKey(w), hardware_generation, l.max_nodes,
                  l.max_gpus_per_node, l.max_total_gpus, l.max_rejected_examples,
                  l.try_interleaved, l.max_candidates);
  AppendList(&key, l.allowed_strategies);
  AppendList(&key, l.user_strategies);
  return key;
}

void DecisionCache::PutSearch(const std::string& key, const tuner::SearchResult& result) {
  auto kept = std::make_shared<tuner::SearchResult>();
  kept->best = result.best;
  kept->alternatives = result.alternatives;
  kept->rejected_examples = result.rejected_examples;
  kept->evaluated = result.evaluated;
  kept->pruned = result.pruned;
  kept->feasible = result.feasible;
  kept->rejected_memory = result.rejected_memory;
  kept->rejected_policy = result.rejected_policy;
  kept->rejected_budget = result.rejected_budget;
  kept->rejected_deadline = result.rejected_deadline;
  kept->rejected_efficiency = result.rejected_efficiency;
  kept->hardware_label = result.hardware_label;
  searches_.Put(key, std::move(kept));
}

}  // namespace xdeep::daemon
