// The fabric of a cluster as the network model needs it: NICs per node and
// their rate, the switch topology above the nodes (rail-optimised or plain
// fat tree, how many nodes share a leaf group, oversubscription above it) and
// NCCL's per-hop latencies. Built-in descriptions of published clusters, each
// citing its source; a site describes its own in xdeepd.toml's [fabric]
// table (docs/admin.md), which ParseFabricTable reads.
#ifndef XDEEP_TUNER_FABRIC_H_
#define XDEEP_TUNER_FABRIC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace xdeep::tuner {

enum class FabricTopology { kRailOptimized, kFatTree };

struct Fabric {
  std::string name;    // "dgx-h100-superpod", or "site" for xdeepd.toml's
  std::string source;  // where the figures come from, in words
  int nics_per_node = 8;
  double nic_gbit = 400;  // line rate of one NIC, Gbit/s
  // Bus bandwidth NCCL reaches over one NIC on large messages, over its line
  // rate: ~0.92 on InfiniBand (nccl-tests on DGX A100: ~23 GB/s a 200 Gb/s
  // HDR rail; DGX H100: ~46 GB/s a 400 Gb/s NDR rail).
  double nic_efficiency = 0.92;
  FabricTopology topology = FabricTopology::kRailOptimized;
  // Nodes under one leaf group: a rail-optimised scalable unit (each GPU's
  // NIC on its rail's leaf) or the nodes on one leaf switch of a fat tree.
  // Traffic between groups climbs to the spine.
  int nodes_per_leaf = 32;
  double oversubscription = 1;  // above the leaf group, downlink : uplink (1 = non-blocking)
  // NCCL's latency model (src/graph/tuning.cc, ncclTopoTuneModel): a base
  // per algorithm and protocol plus a per-hop figure per step, for the
  // network (NET) and NVLink. Microseconds; Simple protocol, and LL128 for
  // small messages.
  double net_hop_ring_simple_us = 9.6, net_hop_tree_simple_us = 50;
  double net_hop_ring_ll128_us = 4.0, net_hop_tree_ll128_us = 8.5;
  double nvlink_hop_simple_us = 3.4, nvlink_hop_ll128_us = 1.9;
  double base_ring_simple_us = 8.4, base_ring_ll128_us = 14.0, base_tree_ll128_us = 14.0;

  // Bytes per second one NIC carries for NCCL.
  double NicBytesPerSecond() const { return nic_gbit / 8 * 1e9 * nic_efficiency; }
};

// Built-in fabrics: "dgx-h100-superpod", "dgx-a100-superpod" (= "selene"),
// "meta-roce" (Llama 3's cluster), "jean-zay" (BLOOM's).
absl::StatusOr<Fabric> BuiltinFabric(std::string_view name);
std::vector<std::string> BuiltinFabricNames();
// The fabric a built-in or probed profile of this GPU assumes until the site
// describes its own: the GPU's DGX SuperPOD reference architecture.
Fabric DefaultFabricFor(std::string_view gpu_name);

// One [fabric] table of xdeepd.toml, as key = value pairs already read by the
// caller (numbers as doubles, strings as text), applied over `base`. Unknown
// keys and absurd values are errors naming the key and its range.
struct FabricKey {
  std::string key;
  double number = 0;
  std::string text;
  bool is_text = false;
};
absl::StatusOr<Fabric> FabricFromKeys(const std::vector<FabricKey>& keys, Fabric base,
                                      std::string_view source);
// The keys FabricFromKeys accepts, for messages and docs.
std::vector<std::string> FabricKeyNames();

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_FABRIC_H_
