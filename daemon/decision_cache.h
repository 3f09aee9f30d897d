// What repeated Tune requests share, kept so that only the first pays for it:
// parsed workloads (by the request's workload text or preset), corrections
// learned from real runs (by learning scope, until the store's runs or the
// hardware profile change),
// search results (by workload, hardware profile, search limits and the
// learned correction in force) and the model's figures of every configuration
// a search scored (by workload, hardware and the limits that shape the
// enumeration: requests that differ only in objective, budget and the like). Both are pure functions of their keys, so a hit
// returns exactly what a fresh computation would. Bounded LRU maps, safe to
// use from every worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "daemon/learning.h"
#include "tuner/search.h"
#include "tuner/workload.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

// A map of at most `capacity` entries that forgets the least recently used.
template <typename Value>
class LruMap {
 public:
  explicit LruMap(size_t capacity) : capacity_(capacity) {}

  std::shared_ptr<const Value> Find(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  void Put(const std::string& key, std::shared_ptr<const Value> value) {
    std::lock_guard lock(mu_);
    if (capacity_ == 0) return;
    auto it = index_.find(key);
    if (it != index_.end()) {
      it->second->second = std::move(value);
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

  size_t size() {
    std::lock_guard lock(mu_);
    return order_.size();
  }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Value>>;
  size_t capacity_;
  std::mutex mu_;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
};

class DecisionCache {
 public:
  // Workloads of more layers than `max_cached_layers` are parsed each time:
  // their tables are large and such requests rare.
  explicit DecisionCache(size_t workloads = 256, size_t searches = 1024,
                         size_t max_cached_layers = 4096)
      : workloads_(workloads), searches_(searches), max_cached_layers_(max_cached_layers) {}

  // A parsed workload and, for one kept here, its tuner::ModelFingerprint
  // (empty for a workload too large to keep: the caller computes it).
  struct ParsedWorkload {
    tuner::Workload workload;
    std::string fingerprint;
  };
  // The request's workload, parsed once per distinct text; parse errors are
  // returned (and not kept), as is a non-OK status of `poll` (called while
  // the layers are built, tuner::BuildPoll).
  absl::StatusOr<std::shared_ptr<const ParsedWorkload>> Workload(
      const xdeep::v1::Workload& w, const tuner::BuildPoll& poll = nullptr);
  // The parsed workload if it is kept here (null otherwise): no parsing.
  std::shared_ptr<const ParsedWorkload> CachedWorkload(const xdeep::v1::Workload& w);

  // The correction learned from `scope`'s runs for this workload and
  // hardware, learned once per state of the store's runs
  // (Store::learning_generation) and of the hardware profile.
  absl::StatusOr<std::shared_ptr<const LearnedCorrection>> Correction(
      Store& store, const LearningScope& scope, uint64_t hardware_generation,
      const tuner::Workload& workload, const tuner::HardwareProfile& hardware);
  // The correction if it is kept here for the store's current runs (null
  // otherwise): no learning, no read of the store.
  std::shared_ptr<const LearnedCorrection> CachedCorrection(const Store& store,
                                                            const LearningScope& scope,
                                                            uint64_t hardware_generation);

  // What a search result depends on besides the workload, as one string:
  // every scalar and list of `limits` (not its functions: the caller adds
  // what the correction is, `correction`), and the hardware's generation.
  static std::string SearchKey(const xdeep::v1::Workload& w, uint64_t hardware_generation,
                               const tuner::SearchLimits& limits, const std::string& correction);
  std::shared_ptr<const tuner::SearchResult> FindSearch(const std::string& key) {
    return searches_.Find(key);
  }
  // Keeps `result` without its Pareto front (decisions never read it).
  // Kept as given: the decision that computed it shares it (no copy).
  void PutSearch(const std::string& key, std::shared_ptr<const tuner::SearchResult> result) {
    searches_.Put(key, std::move(result));
  }

  // What a search's ScoredSpace depends on: the workload, the hardware's
  // generation and the limits that shape the enumeration (tuner/search.h).
  static std::string SpaceKey(const xdeep::v1::Workload& w, uint64_t hardware_generation,
                              const tuner::SearchLimits& limits);
  std::shared_ptr<const tuner::ScoredSpace> FindSpace(const std::string& key) {
    return spaces_.Find(key);
  }
  void PutSpace(const std::string& key, std::shared_ptr<const tuner::ScoredSpace> space) {
    spaces_.Put(key, std::move(space));
  }

 private:
  LruMap<ParsedWorkload> workloads_;
  LruMap<LearnedCorrection> corrections_{1024};
  LruMap<tuner::SearchResult> searches_;
  // At most 32 x 32,768 entries of 120 bytes (ScoredSpace::kMaxEntries): a
  // search on 64 nodes of 8 GPUs scores ~20-30k; one on a few nodes ~1k.
  LruMap<tuner::ScoredSpace> spaces_{32};
  size_t max_cached_layers_;
};

}  // namespace xdeep::daemon
