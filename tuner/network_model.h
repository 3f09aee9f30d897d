// Collective time across nodes, with the structure of a real cluster:
// NVLink inside a node, the node's NICs shared by every group that talks at
// once, the leaf groups and oversubscription of the switch fabric above, and
// NCCL's choice between ring and tree and between its Simple and LL128
// protocols, each with latency terms that grow with the rank and node counts
// as NCCL's own tuning model has them (fabric.h cites the figures).
#ifndef XDEEP_TUNER_NETWORK_MODEL_H_
#define XDEEP_TUNER_NETWORK_MODEL_H_

#include "tuner/fabric.h"
#include "tuner/hardware_profile.h"

namespace xdeep::tuner {

// What the network model takes from the node: its size, its NVLink figures
// (the probe's intra-node fits, or the built-in profile's) and the NIC rate
// the probe measured across nodes, where it did.
struct NodeLinks {
  int gpus_per_node = 8;
  double nvlink_busbw = 0;  // bytes/s, all-reduce bus bandwidth among the group's GPUs of a node
  // Bytes/s one NIC carried in the probe's inter-node collectives; 0: the
  // fabric's line rate x efficiency.
  double measured_nic_bw = 0;
  // Measured inter-node latency over the model's at the same rank count
  // (probe), 1 where not measured.
  double latency_scale = 1;
};

// Time of `op` over `ranks` ranks on ranks / ranks_per_node nodes, as the
// lower envelope of NCCL's algorithms and protocols (CollectiveLine::At).
// Every group of this kind on a node is assumed to talk at once (data-
// parallel groups reduce together; pipeline stages send together), so a
// group's share of the node's NICs is its share of the node's GPUs.
CollectiveLine NetworkCollective(const Fabric& f, const NodeLinks& node, CollectiveOp op, int ranks,
                                 int ranks_per_node);

// Bytes/s a group with `ranks_per_node` GPUs on each of `nodes` nodes gets
// across nodes: its share of the node's NICs, less what an oversubscribed
// spine takes from traffic leaving the leaf group (`tree`: every edge of
// NCCL's double binary tree may leave it; a ring leaves it twice per group).
double InterNodeBandwidth(const Fabric& f, const NodeLinks& node, int ranks_per_node, int nodes,
                          bool tree);

// Share of a GPU's compute a collective across nodes takes while it runs
// beside compute: NCCL runs one thread block per channel on the SMs and
// opens about two channels per NIC the group uses (its NICs' share, as in
// InterNodeBandwidth), so overlapped compute loses channels / SMs of its
// rate for as long as the collective runs. `sm_count`: the GPU's SMs.
double OverlapComputeShare(const Fabric& f, int gpus_per_node, int sm_count, int ranks_per_node);

// The same for a collective whose ranks are all inside one node: NCCL's ring
// over NVLink / NVSwitch runs on kNvlinkRingChannels thread blocks whatever
// the group's size (its topology search, [NVCH] in network_model.cc), so the
// compute beside it loses that share of the GPU's SMs for as long as it runs.
inline constexpr int kNvlinkRingChannels = 24;
double InNodeOverlapComputeShare(int sm_count);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_NETWORK_MODEL_H_
