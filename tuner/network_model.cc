// Network model: NCCL's ring / tree choice over a rail or fat-tree fabric.
//
//  [NCCL]  src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime:
//          ring latency = base + (steps - inter-node steps) x NVLink hop +
//          inter-node steps x network hop, steps = 2 (n - 1) for all-reduce
//          and n - 1 for all-gather / reduce-scatter, inter-node steps the
//          same in nodes; x 1.9 for a large Simple all-reduce across nodes
//          ("plateau effect of ring"); tree latency = base + 2 ((n/N - 1) x
//          NVLink hop + log2 N x network hop); tree bus bandwidth 0.9 of the
//          ring's and algorithm bandwidth half of it; LL128 at 0.92 of the
//          bandwidth (0.7 with one rank per node).
//  [RAIL]  NVIDIA DGX SuperPOD reference architectures: one NIC per GPU on
//          its rail; NCCL runs one ring channel per NIC, so a group's bus
//          bandwidth across nodes is its NICs' (nccl-tests multi-node
//          all-reduce ~ 8 x per-rail busbw on 8-GPU nodes), never more than
//          NVLink's inside the node.
//  [CHAN]  NCCL's environment documentation (NCCL_MIN_NCHANNELS /
//          NCCL_MAX_NCHANNELS): each channel is one CUDA block on one SM;
//          over InfiniBand NCCL opens two channels per NIC by default.
//  [NVCH]  NCCL's ring channels inside an NVSwitch node (src/graph/search.cc,
//          ncclTopoCompute and ncclTopoDupChannels; src/graph/connect.cc,
//          ncclTopoPostset; read at NVIDIA/nccl 5067397): the search packs
//          rings at the highest per-channel speed the GPU's NVLinks carry
//          (A100: 12 links x 20 GB/s, 6 rings at 40 GB/s; H100 / H200: 18 x
//          20.6 GB/s, 6 at 60), duplicates them once (12) and the postset
//          doubles them again: 24 channels, one thread block each.
#include "tuner/network_model.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace xdeep::tuner {

double InterNodeBandwidth(const Fabric& f, const NodeLinks& node, int ranks_per_node, int nodes,
                          bool tree) {
  // A node has at least as many GPUs as NICs (rails; a probe's profile may
  // count only the GPUs its job held).
  const int g = std::max({1, node.gpus_per_node, f.nics_per_node});
  const int k = std::clamp(ranks_per_node, 1, g);
  const double nic = node.measured_nic_bw > 0 ? node.measured_nic_bw : f.NicBytesPerSecond();
  // The group's share of the node's NICs: every group on the node talks at
  // once, each GPU's traffic on its rail (a node with fewer NICs than GPUs
  // shares them).
  double bw = nic * f.nics_per_node * double(k) / g;
  if (nodes > f.nodes_per_leaf && f.oversubscription > 1) {
    // A ring ordered by node leaves each leaf group twice, so its uplinks
    // carry 2 / (the group's nodes in that leaf) of what the downlinks do;
    // a tree's edges all may leave it.
    const double in_leaf = std::min(nodes, f.nodes_per_leaf);
    const double need = tree ? 1.0 : std::min(1.0, 2.0 / in_leaf);
    const double have = 1.0 / f.oversubscription;
    if (need > have) bw *= have / need;
  }
  if (k > 1 && node.nvlink_busbw > 0) bw = std::min(bw, node.nvlink_busbw);
  return bw;
}

CollectiveLine NetworkCollective(const Fabric& f, const NodeLinks& node, CollectiveOp op, int ranks,
                                 int ranks_per_node) {
  CollectiveLine line;
  if (ranks <= 1) return line;
  const int k = std::clamp(ranks_per_node, 1, ranks);
  const int nodes = (ranks + k - 1) / k;
  const double us = 1e-6 * node.latency_scale;
  if (op == CollectiveOp::kSendRecv) {
    // One network hop: Simple for large messages, LL128 for small.
    const double bw = InterNodeBandwidth(f, node, 1, 2, false);
    line.Add((f.base_ring_simple_us + f.net_hop_ring_simple_us) * us, 1.0 / bw);
    line.Add((f.base_ring_ll128_us + f.net_hop_ring_ll128_us) * us, 1.0 / (bw * 0.7));
    return line;
  }
  const bool all_reduce = op == CollectiveOp::kAllReduce;
  const int steps = all_reduce ? 2 * (ranks - 1) : ranks - 1;
  const int inter_steps = all_reduce ? 2 * (nodes - 1) : nodes - 1;
  const int intra_steps = steps - inter_steps;
  const double factor = BusFactor(op, ranks);
  const double ring_bw = InterNodeBandwidth(f, node, k, nodes, false);
  // Ring, Simple: the plateau factor applies to large all-reduces, the
  // sizes Simple wins at.
  const double ring_simple_lat = (f.base_ring_simple_us + intra_steps * f.nvlink_hop_simple_us +
                                  inter_steps * f.net_hop_ring_simple_us) *
                                 (all_reduce ? 1.9 : 1.0) * us;
  line.Add(ring_simple_lat, factor / ring_bw);
  const double ll128_lat = (f.base_ring_ll128_us + intra_steps * f.nvlink_hop_ll128_us +
                            inter_steps * f.net_hop_ring_ll128_us) *
                           us;
  line.Add(ll128_lat, factor / (ring_bw * (k < 2 ? 0.7 : 0.92)));
  if (all_reduce && nodes > 1) {
    // Double binary tree: logarithmic in nodes, at half the bandwidth.
    const double tree_bw = 0.9 * InterNodeBandwidth(f, node, k, nodes, true);
    const double depth = std::floor(std::log2(double(nodes)));
    const double tree_simple_lat =
        2 * ((k - 1) * f.nvlink_hop_simple_us + depth * f.net_hop_tree_simple_us) * us;
    line.Add(tree_simple_lat, 1.0 / (0.5 * tree_bw));
    const double tree_ll128_lat = (f.base_tree_ll128_us + 2 * ((k - 1) * f.nvlink_hop_ll128_us +
                                                               depth * f.net_hop_tree_ll128_us)) *
                                  us;
    line.Add(tree_ll128_lat, 1.0 / (0.5 * tree_bw * 0.915));
  }
  return line;
}

double OverlapComputeShare(const Fabric& f, int gpus_per_node, int sm_count, int ranks_per_node) {
  const int g = std::max(1, gpus_per_node);
  const double nics = f.nics_per_node * double(std::clamp(ranks_per_node, 1, g)) / g;
  const double channels = std::max(1.0, 2 * nics);  // [CHAN]
  return std::min(0.5, channels / std::max(1, sm_count));
}

double InNodeOverlapComputeShare(int sm_count) {
  return std::min(0.5, double(kNvlinkRingChannels) / std::max(1, sm_count));  // [NVCH]
}

}  // namespace xdeep::tuner
