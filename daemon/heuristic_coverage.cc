// HeuristicCoverage (heuristic_coverage.h).
#include "daemon/heuristic_coverage.h"

#include "tuner/gemm_kernel_table.h"

namespace xdeep::daemon {

std::shared_ptr<const HeuristicGap> HeuristicCoverage::Compute(const tuner::HardwareProfile& hw,
                                                               const tuner::Workload& workload,
                                                               int gpus_per_node) {
  const tuner::GemmKernelTable* table = hw.gemm_kernels.get();
  if (table == nullptr) return nullptr;
  auto gap = std::make_shared<HeuristicGap>();
  // The micro-batches the search may try on this profile (SearchMicroBatchLimit).
  const int largest_probed = tuner::LargestProbedMicroBatch(workload, hw);
  std::vector<tuner::HeuristicGemm> all =
      tuner::HeuristicGemms(std::span(&workload, 1), gpus_per_node, std::span(&largest_probed, 1));
  gap->asked = all.size();
  gap->shape_set = tuner::ShapeSetFingerprint(all);
  for (tuner::HeuristicGemm& g : all) {
    // A precision without a kernel-aware fit uses no answer: not a gap.
    if (!table->fit(g.dtype).valid) continue;
    if (table->Find(g.dtype, g.layout, g.m, g.n, g.k) == nullptr) {
      gap->missing.push_back(std::move(g));
    }
  }
  if (gap->missing.empty()) return nullptr;
  return gap;
}

std::shared_ptr<const HeuristicGap> HeuristicCoverage::Check(
    const std::shared_ptr<const tuner::HardwareProfile>& hw, const tuner::Workload& workload,
    const std::string& fingerprint, int gpus_per_node) {
  if (hw == nullptr || hw->gemm_kernels == nullptr) return nullptr;
  const std::pair<std::string, int> key(fingerprint, gpus_per_node);
  {
    std::lock_guard lock(mu_);
    if (profile_ != hw) {
      profile_ = hw;
      cache_.clear();
    }
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  // Outside the lock: the lookups take a millisecond or two; two decisions of
  // one new workload may both compute it, and store the same answer.
  std::shared_ptr<const HeuristicGap> gap = Compute(*hw, workload, gpus_per_node);
  std::lock_guard lock(mu_);
  if (profile_ == hw) {
    if (cache_.size() >= kMaxEntries) cache_.clear();
    cache_.emplace(key, gap);
  }
  return gap;
}

}  // namespace xdeep::daemon
