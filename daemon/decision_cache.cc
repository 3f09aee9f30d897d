// DecisionCache (see decision_cache.h).
#include "daemon/decision_cache.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>

#include "daemon/decision_maker.h"
#include "tuner/fingerprint.h"

namespace xdeep::daemon {
namespace {

// A correction's key: the state of the store's runs and of the hardware
// profile, and the learning scope.
std::string CorrectionKey(uint64_t generation, uint64_t hardware_generation,
                          const LearningScope& scope) {
  return fmt::format("{}|{}|{}:{}|{}:{}|{}:{}|{}|{}:{}", generation, hardware_generation,
                     scope.fingerprint.size(),
                     scope.fingerprint, scope.hardware.size(), scope.hardware,
                     scope.partition.size(), scope.partition,
                     scope.uid ? static_cast<int64_t>(*scope.uid) : -1, scope.account.size(),
                     scope.account);
}

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

std::shared_ptr<const DecisionCache::ParsedWorkload> DecisionCache::CachedWorkload(
    const xdeep::v1::Workload& w) {
  return workloads_.Find(WorkloadKey(w));
}

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

absl::StatusOr<std::shared_ptr<const LearnedCorrection>> DecisionCache::Correction(
    Store& store, const LearningScope& scope, uint64_t hardware_generation,
    const tuner::Workload& workload, const tuner::HardwareProfile& hardware) {
  // The generation is read before the runs: a run recorded meanwhile makes
  // the next request learn again, never the reverse.
  const std::string key = CorrectionKey(store.learning_generation(), hardware_generation, scope);
  if (auto hit = corrections_.Find(key)) return hit;
  auto fitted = FitCorrection(store, scope);
  if (!fitted.ok()) return fitted.status();
  auto learned = LearnStepTime(*fitted, workload, hardware);
  if (!learned.ok()) return learned.status();
  auto shared = std::make_shared<const LearnedCorrection>(*std::move(learned));
  corrections_.Put(key, shared);
  return shared;
}

std::shared_ptr<const LearnedCorrection> DecisionCache::CachedCorrection(
    const Store& store, const LearningScope& scope, uint64_t hardware_generation) {
  return corrections_.Find(CorrectionKey(store.learning_generation(), hardware_generation, scope));
}

std::string DecisionCache::SearchKey(const xdeep::v1::Workload& w, uint64_t hardware_generation,
                                     const tuner::SearchLimits& l, const std::string& correction) {
  // Doubles by their bits, so two limits share a key only when equal ("{:a}"
  // went through snprintf: 1.5 % of the daemon's CPU on unique requests,
  // perf on the 2-core VM).
  const auto exact = [](double v) { return std::bit_cast<uint64_t>(v); };
  std::string key = fmt::format(
      "{}|hw{}|{} {} {} {:x} {:x} {} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {} {} {} {}|",
      WorkloadKey(w), hardware_generation, l.max_nodes, l.max_gpus_per_node, l.max_total_gpus,
      exact(l.price_per_gpu_hour), exact(l.price_per_node_hour), static_cast<int>(l.objective),
      exact(l.cost_tolerance), exact(l.time_value_per_hour), exact(l.budget), exact(l.deadline_s),
      exact(l.min_parallel_efficiency), exact(l.time_limit_s), exact(l.segment_restart_s),
      l.max_alternatives, l.max_rejected_examples, l.try_interleaved, l.max_candidates);
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

}  // namespace xdeep::daemon
