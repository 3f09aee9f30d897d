// Turns a TuneRequest into a Decision: parses the workload, bounds the search
// by policy, partition, the user's own limits and any enclosing allocation,
// runs the tuner's search and records the result. Protocol-level logic only;
// all modelling lives in tuner/.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/slurm_inventory.h"
#include "daemon/store.h"
#include "tuner/hardware_profile.h"
#include "tuner/search.h"
#include "xdeep/v1/tuning.pb.h"

namespace xdeep::daemon {

using ProgressFn = std::function<void(const xdeep::v1::Progress&)>;

// Where the cluster's shape comes from; sinfo in production, fixed in tests.
using ShapeFn = std::function<absl::StatusOr<PartitionShape>(const std::string& partition)>;

class DecisionMaker {
 public:
  DecisionMaker(PolicyConfig policy, tuner::HardwareProfile hardware, ShapeFn shape, Store* store)
      : policy_(std::move(policy)),
        hardware_(std::move(hardware)),
        shape_(std::move(shape)),
        store_(store) {}

  // `uid` is the caller as MUNGE vouched for it.
  absl::StatusOr<xdeep::v1::Decision> Decide(const xdeep::v1::TuneRequest& request, uint32_t uid,
                                             const ProgressFn& progress) const;

 private:
  PolicyConfig policy_;
  tuner::HardwareProfile hardware_;
  ShapeFn shape_;
  Store* store_;
};

// Search limits from policy, partition, user bounds and allocation (exposed for tests).
tuner::SearchLimits BuildLimits(const PolicyConfig& policy, const PartitionShape& shape,
                                const xdeep::v1::TuneRequest& request);

}  // namespace xdeep::daemon
