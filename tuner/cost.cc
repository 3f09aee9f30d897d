// Slurm TRES billing weights to prices per GPU-hour and node-hour.
#include "tuner/cost.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace xdeep::tuner {

absl::StatusOr<Pricing> PricingFromTresBillingWeights(std::string_view weights_view,
                                                      const NodeShape& node, double price_per_unit,
                                                      bool max_tres) {
  const std::string weights(weights_view);
  if (node.gpus <= 0 || node.cpus < 0 || node.memory_gb < 0) {
    return absl::InvalidArgumentError("node shape needs gpus > 0 and non-negative cpus and memory");
  }
  if (!(price_per_unit > 0)) {
    return absl::InvalidArgumentError("price per billing unit must be positive");
  }
  // Node-level amounts of one GPU's share and of the whole node.
  double cpu_w = 0, mem_w_per_gb = 0, gpu_w = 0, node_w = 0;
  for (absl::string_view item : absl::StrSplit(weights, ',', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("TRESBillingWeights: '", item,
                       "' is not TRES=weight; write e.g. CPU=1.0,Mem=0.25G,GRES/gpu=2.0"));
    }
    const std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(kv[0]));
    std::string value(absl::StripAsciiWhitespace(kv[1]));
    double per_unit_scale = 1;  // memory: weight per MB by default
    if (key == "mem" && !value.empty() && std::isalpha(static_cast<unsigned char>(value.back()))) {
      const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(value.back())));
      value.pop_back();
      switch (unit) {
        case 'K':
          per_unit_scale = 1024.0 * 1024;
          break;  // per KB -> per GB
        case 'M':
          per_unit_scale = 1024.0;
          break;
        case 'G':
          per_unit_scale = 1;
          break;
        case 'T':
          per_unit_scale = 1.0 / 1024;
          break;
        default:
          return absl::InvalidArgumentError(absl::StrCat(
              "TRESBillingWeights: unknown memory unit in '", item, "'; use K, M, G or T"));
      }
    } else if (key == "mem") {
      per_unit_scale = 1024.0;  // per MB
    }
    double w;
    if (!absl::SimpleAtod(value, &w) || w < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("TRESBillingWeights: weight of '", item, "' is not a non-negative number"));
    }
    if (key == "cpu")
      cpu_w = w;
    else if (key == "mem")
      mem_w_per_gb = w * per_unit_scale;
    else if (key == "gres/gpu" || key == "gres/gpu:" || key.rfind("gres/gpu:", 0) == 0)
      gpu_w = w;
    else if (key == "node")
      node_w = w;
    // Other TRES (licenses, energy, billing itself) do not scale with the
    // choice of GPUs and nodes the tuner makes; they are ignored.
  }
  const double cpu_node = cpu_w * node.cpus, mem_node = mem_w_per_gb * node.memory_gb,
               gpu_node = gpu_w * node.gpus;
  double node_units, gpu_units;
  if (max_tres) {
    node_units = std::max({cpu_node, mem_node, gpu_node}) + node_w;
    gpu_units = node_units / node.gpus;
  } else {
    node_units = cpu_node + mem_node + gpu_node + node_w;
    gpu_units = node_units / node.gpus;
  }
  if (node_units <= 0) {
    return absl::InvalidArgumentError(
        "TRESBillingWeights bill nothing for this node shape; give CPU, Mem or GRES/gpu weights");
  }
  Pricing p;
  p.per_node_hour = node_units * price_per_unit;
  p.per_gpu_hour = gpu_units * price_per_unit;
  p.source = absl::StrCat("TRESBillingWeights ", weights, max_tres ? " (MAX_TRES)" : "");
  return p;
}

void ApplyPricing(const Pricing& pricing, bool whole_nodes, SearchLimits& limits) {
  limits.price_per_gpu_hour = pricing.per_gpu_hour;
  limits.price_per_node_hour = whole_nodes ? pricing.per_node_hour : 0;
}

}  // namespace xdeep::tuner
