// Whether the profile's cuBLASLt heuristic answers cover the GEMMs a workload
// may run (tuner::HeuristicGemms: every micro-batch, tensor- and
// context-parallel degree the search may pick): the decision path asks it on
// every decision, so the answer is cached per (workload fingerprint, GPUs per
// node) for the profile in use -- one hash lookup once a workload was seen --
// and the ~3,000 table lookups run once per workload and profile.
#ifndef XDEEP_DAEMON_HEURISTIC_COVERAGE_H_
#define XDEEP_DAEMON_HEURISTIC_COVERAGE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tuner/hardware_profile.h"
#include "tuner/probe_shapes.h"
#include "tuner/workload.h"

namespace xdeep::daemon {

// The GEMMs of a workload the profile has no heuristic answer for.
struct HeuristicGap {
  uint64_t shape_set = 0;                     // tuner::ShapeSetFingerprint of all its GEMMs
  size_t asked = 0;                           // how many GEMMs the workload may run
  std::vector<tuner::HeuristicGemm> missing;  // those without an answer
};

class HeuristicCoverage {
 public:
  // Entries kept per profile before the cache starts over.
  static constexpr size_t kMaxEntries = 4096;

  // Null when every GEMM of `workload` whose precision has a kernel-aware fit
  // has an answer in `hw`'s kernel table (or the profile has no table: a
  // heuristic answer would change nothing). `fingerprint` names the workload
  // (tuner::ModelFingerprint).
  std::shared_ptr<const HeuristicGap> Check(const std::shared_ptr<const tuner::HardwareProfile>& hw,
                                            const tuner::Workload& workload,
                                            const std::string& fingerprint, int gpus_per_node);

  // The gap as the lookups find it, uncached (exposed for tests and benches).
  static std::shared_ptr<const HeuristicGap> Compute(const tuner::HardwareProfile& hw,
                                                     const tuner::Workload& workload,
                                                     int gpus_per_node);

 private:
  std::mutex mu_;
  std::shared_ptr<const tuner::HardwareProfile> profile_;  // the cache's profile
  std::map<std::pair<std::string, int>, std::shared_ptr<const HeuristicGap>> cache_;
};

}  // namespace xdeep::daemon

#endif  // XDEEP_DAEMON_HEURISTIC_COVERAGE_H_
