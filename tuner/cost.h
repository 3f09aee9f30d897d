// Prices for the search's cost model: per GPU-hour or per node-hour, from a
// site's policy or derived from Slurm's TRESBillingWeights of a partition.
#ifndef XDEEP_TUNER_COST_H_
#define XDEEP_TUNER_COST_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tuner/search.h"

namespace xdeep::tuner {

// What a whole node of the partition offers.
struct NodeShape {
  int cpus = 0;
  double memory_gb = 0;
  int gpus = 0;
};

struct Pricing {
  double per_gpu_hour = 0;   // one GPU with its share of the node's CPUs and memory
  double per_node_hour = 0;  // a whole node
  std::string source;        // e.g. "TRESBillingWeights CPU=1.0,Mem=0.25G,GRES/gpu=2.0"
};

// Slurm's billing: billing = sum over TRES of weight x amount (or, with
// PriorityFlags=MAX_TRES, the largest single node-level term plus the others),
// as documented for TRESBillingWeights in slurm.conf(5). Memory weights are
// per MB unless suffixed (K, M, G, T: per KB, MB, GB, TB). `price_per_unit`
// converts billing units x hours into money. Errors name the weight at fault.
absl::StatusOr<Pricing> PricingFromTresBillingWeights(std::string_view weights,
                                                      const NodeShape& node, double price_per_unit,
                                                      bool max_tres = false);

// Copies a pricing into the search limits: per node-hour when the partition
// allocates whole nodes (`whole_nodes`), else per GPU-hour.
void ApplyPricing(const Pricing& pricing, bool whole_nodes, SearchLimits& limits);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_COST_H_
