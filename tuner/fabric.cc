// Built-in fabric descriptions and the [fabric] table's keys.
//
// Sources:
//  [DGXH]  NVIDIA DGX SuperPOD reference architecture, DGX H100 (RA-11333):
//          eight ConnectX-7 NDR 400 Gb/s compute NICs per node, one per GPU,
//          rail-optimised, scalable units of 32 nodes, full fat tree.
//  [DGXA]  NVIDIA DGX SuperPOD reference architecture, DGX A100 (RA-10187):
//          eight HDR 200 Gb/s compute NICs per node, rail-optimised, scalable
//          units of 20 nodes, full fat tree. Selene, where Megatron-LM,
//          MT-NLG and Korthikanti et al. ran, is such a SuperPOD.
//  [LLAMA3] Dubey et al., "The Llama 3 Herd of Models", 2024, sec. 3.3.1:
//          400 Gb/s RoCE per GPU; pods of 3,072 GPUs with full bisection,
//          1:7 oversubscription between pods at the aggregation layer.
//  [BLOOM] BigScience, "BLOOM", arXiv:2211.05100, sec. 3.4: Jean Zay, four
//          Omni-Path 100 Gb/s links per 8-GPU node.
//  [NCCL]  NCCL src/graph/tuning.cc (ncclTopoTuneModel): base and per-hop
//          latencies per algorithm and protocol (the defaults in fabric.h).
#include "tuner/fabric.h"

#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace xdeep::tuner {

namespace {

Fabric DgxH100() {
  Fabric f;
  f.name = "dgx-h100-superpod";
  f.source =
      "NVIDIA DGX H100 SuperPOD reference architecture: 8 x NDR 400 Gb/s, rails, 32-node units";
  f.nics_per_node = 8;
  f.nic_gbit = 400;
  f.nodes_per_leaf = 32;
  return f;
}

Fabric DgxA100() {
  Fabric f;
  f.name = "dgx-a100-superpod";
  f.source =
      "NVIDIA DGX A100 SuperPOD reference architecture: 8 x HDR 200 Gb/s, rails, 20-node units";
  f.nics_per_node = 8;
  f.nic_gbit = 200;
  f.nodes_per_leaf = 20;
  return f;
}

Fabric MetaRoce() {
  Fabric f;
  f.name = "meta-roce";
  f.source = "Llama 3 paper sec. 3.3.1: 400 Gb/s RoCE per GPU, 3,072-GPU pods, 1:7 between pods";
  f.nics_per_node = 8;
  f.nic_gbit = 400;
  f.topology = FabricTopology::kFatTree;
  f.nodes_per_leaf = 384;
  f.oversubscription = 7;
  return f;
}

Fabric JeanZay() {
  Fabric f;
  f.name = "jean-zay";
  f.source = "BLOOM paper sec. 3.4: Jean Zay, 4 x Omni-Path 100 Gb/s per 8-GPU node";
  f.nics_per_node = 4;
  f.nic_gbit = 100;
  f.topology = FabricTopology::kFatTree;
  f.nodes_per_leaf = 48;
  return f;
}

}  // namespace

absl::StatusOr<Fabric> BuiltinFabric(std::string_view name) {
  const std::string n = absl::AsciiStrToLower(std::string(name));
  if (n == "dgx-h100-superpod") return DgxH100();
  if (n == "dgx-a100-superpod" || n == "selene") return DgxA100();
  if (n == "meta-roce") return MetaRoce();
  if (n == "jean-zay") return JeanZay();
  return absl::NotFoundError(absl::StrCat("unknown built-in fabric '", std::string(name),
                                          "'; use one of ",
                                          absl::StrJoin(BuiltinFabricNames(), ", ")));
}

std::vector<std::string> BuiltinFabricNames() {
  return {"dgx-h100-superpod", "dgx-a100-superpod", "selene", "meta-roce", "jean-zay"};
}

Fabric DefaultFabricFor(std::string_view gpu_name) {
  if (std::string(gpu_name).find("A100") != std::string::npos) return DgxA100();
  return DgxH100();
}

namespace {

struct KeySpec {
  const char* key;
  double min, max;
  double Fabric::*field;
};

const KeySpec kNumbers[] = {
    {"nic_gbit", 1, 100000, &Fabric::nic_gbit},
    {"nic_efficiency", 0.05, 1, &Fabric::nic_efficiency},
    {"oversubscription", 1, 64, &Fabric::oversubscription},
    {"net_hop_ring_us", 0.01, 10000, &Fabric::net_hop_ring_simple_us},
    {"net_hop_tree_us", 0.01, 10000, &Fabric::net_hop_tree_simple_us},
    {"net_hop_ring_ll128_us", 0.01, 10000, &Fabric::net_hop_ring_ll128_us},
    {"net_hop_tree_ll128_us", 0.01, 10000, &Fabric::net_hop_tree_ll128_us},
};

}  // namespace

std::vector<std::string> FabricKeyNames() {
  std::vector<std::string> names = {"builtin", "nics_per_node", "nodes_per_leaf", "topology"};
  for (const KeySpec& k : kNumbers) names.emplace_back(k.key);
  return names;
}

absl::StatusOr<Fabric> FabricFromKeys(const std::vector<FabricKey>& keys, Fabric base,
                                      std::string_view source) {
  const std::string where(source);
  auto bad = [&](const FabricKey& k, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": [fabric] ", k.key, ": ", what));
  };
  std::set<std::string> seen;
  // A built-in named first is the base the other keys change.
  for (const FabricKey& k : keys) {
    if (k.key != "builtin") continue;
    if (!k.is_text) return bad(k, "must be a string naming a built-in fabric");
    auto b = BuiltinFabric(k.text);
    if (!b.ok()) return bad(k, b.status().message());
    base = *b;
  }
  base.source =
      absl::StrCat(where, " [fabric]", base.name.empty() ? "" : absl::StrCat(" over ", base.name));
  base.name = "site";
  for (const FabricKey& k : keys) {
    if (!seen.insert(k.key).second) return bad(k, "given twice; keep one");
    if (k.key == "builtin") continue;
    if (k.key == "topology") {
      if (!k.is_text || (k.text != "rail-optimized" && k.text != "fat-tree")) {
        return bad(k, "must be \"rail-optimized\" or \"fat-tree\"");
      }
      base.topology =
          k.text == "fat-tree" ? FabricTopology::kFatTree : FabricTopology::kRailOptimized;
      continue;
    }
    if (k.is_text) return bad(k, "must be a number");
    if (!std::isfinite(k.number)) return bad(k, "must be a finite number");
    if (k.key == "nics_per_node" || k.key == "nodes_per_leaf") {
      const double max = k.key == "nics_per_node" ? 64 : 1e6;
      if (k.number < 1 || k.number > max || k.number != std::floor(k.number)) {
        return bad(k, absl::StrCat("must be a whole number from 1 to ", max));
      }
      (k.key == "nics_per_node" ? base.nics_per_node : base.nodes_per_leaf) =
          static_cast<int>(k.number);
      continue;
    }
    bool known = false;
    for (const KeySpec& spec : kNumbers) {
      if (k.key != spec.key) continue;
      known = true;
      if (k.number < spec.min || k.number > spec.max) {
        return bad(k, absl::StrCat("must be from ", spec.min, " to ", spec.max));
      }
      base.*spec.field = k.number;
    }
    if (!known) {
      return bad(k,
                 absl::StrCat("unknown key; use one of ", absl::StrJoin(FabricKeyNames(), ", ")));
    }
  }
  return base;
}

}  // namespace xdeep::tuner
