// Hardware profile: what one GPU type and its fabrics can do, as the tuner's
// performance model needs it. GEMM time as a function of shape, layout and
// precision (tuner/gemm_model.h, fitted to the measured shapes), memory
// bandwidth and capacity,
// and per fabric scope (inside a node / across nodes) collective time as
// latency + size / bandwidth per rank count. Built from a probe report
// (docs/probe_report.md) or from a built-in profile of common hardware, which
// is always labelled "built-in" so no one mistakes it for a measurement.
#ifndef XDEEP_TUNER_HARDWARE_PROFILE_H_
#define XDEEP_TUNER_HARDWARE_PROFILE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/fabric.h"
#include "tuner/gemm_model.h"

namespace xdeep::tuner {

class GemmKernelTable;  // tuner/gemm_kernel_table.h

std::string_view DTypeName(DType d);

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kSendRecv };

// Bytes a rank moves per byte of message in a ring of n ranks (NCCL's bus factor).
double BusFactor(CollectiveOp op, int n);
enum class FabricScope { kIntraNode, kInterNode };

// One fitted line t(bytes) = latency_s + bytes * bus_factor(op, n) / busbw for a
// given op, scope and rank count. Inter-node fits come from the probe only
// (built-in profiles describe their network by `fabric`): busbw is per GPU
// taking part on each node, the rate of one NIC rail, which the network
// model shares among a node's groups (network_model.h); the latency scales
// NCCL's latency model to match.
struct CollectiveFit {
  CollectiveOp op = CollectiveOp::kAllReduce;
  FabricScope scope = FabricScope::kIntraNode;
  int ranks = 2;
  double latency_s = 0;
  double busbw_gbps = 0;  // 1e9 B/s, nccl-tests bus bandwidth
};

// Host seconds of one optimizer step: a fixed part (its calls over the tensor
// lists) and a part per parameter tensor (HardwareProfile::optimizer_host).
struct StepHostCost {
  double fixed_s = 0;
  double per_tensor_s = 0;
  bool measured() const { return fixed_s > 0 || per_tensor_s > 0; }
  double For(double tensors) const { return fixed_s + tensors * per_tensor_s; }
};

struct HardwareProfile {
  std::string name;
  bool builtin = true;
  std::string gpu_name;
  int gpus_per_node = 0;
  int64_t memory_bytes = 0;    // per GPU, as the driver reports it
  int64_t reserved_bytes = 0;  // CUDA context, NCCL buffers, library handles: not usable
  // Library workspaces PyTorch takes from its caching allocator and keeps for
  // the process's life, so they count in max_memory_allocated: one cuBLAS
  // workspace per (handle, stream), 32 MiB on Hopper and Blackwell, 8.125 MiB
  // before (ATen CublasHandlePool.cpp, CUBLAS_WORKSPACE_CONFIG default), and
  // training uses two handles (the Python thread's forward, the autograd
  // engine's device thread's backward). Measured: 64 MiB in every fresh
  // process on H200 (bench/memory_validation/data/*_fresh.json).
  int64_t allocator_workspace_bytes = 0;
  double memory_bandwidth_gbps = 0;  // measured device copy bandwidth, 1e9 B/s
  // The bandwidth an eager framework's elementwise kernels reach, over the
  // bytes the model counts for them (ElementwiseBytes): from the framework
  // probe's GPT at a training size. Not the copy bandwidth: from 2x H200 to
  // 2x H100 (copy 4063 -> 2868 GB/s) training's elementwise time grew 1.2x,
  // not 1.4x (bench/validate/data/calibration/2026-11-26_h100x2_heldout4). 0: not
  // measured, memory_bandwidth_gbps.
  double elementwise_bandwidth_gbps = 0;
  // The bandwidth the fused AdamW update reaches (7 fp32 arrays moved per element):
  // from the Kokkos adam_update probe on the device where the report has one
  // (profiler/kokkos_probes.h). 0: not measured, memory_bandwidth_gbps.
  double optimizer_bandwidth_gbps = 0;
  int sm_count = 132;
  std::vector<GemmPoint> gemm;  // the probe's points (none in a built-in profile)
  // Shapes the probe asked cuBLASLt's heuristic about without timing them: their
  // kernels only (GemmPoint::kernel; tflops 0).
  std::vector<GemmPoint> gemm_heuristic;
  // The kernels of `gemm` and `gemm_heuristic` and the model fitted to their tile
  // grids (FitGemmModels); null where the report recorded no kernels.
  std::shared_ptr<const GemmKernelTable> gemm_kernels;
  // The GEMM model per precision (indexed by DType), fitted to `gemm`
  // (FitGemmModels) or, built in, from the datasheet-like figures.
  std::array<GemmFit, 4> gemm_fits;
  std::vector<CollectiveFit> collectives;
  // The fabric between nodes (tuner/fabric.h): the GPU's DGX SuperPOD
  // reference architecture until the site describes its own in xdeepd.toml's
  // [fabric] table. Collectives across nodes follow it (network_model.h), at
  // the NIC rate and latency the probe measured where it ran across nodes.
  Fabric fabric;
  // Attention throughput relative to GEMM at the same size; probes fill it from
  // the attention section, built-in profiles from published FlashAttention-2/3.
  double attention_efficiency = 0.6;
  // Host time to launch one kernel from an eager framework (Python, dispatcher,
  // launch), per kernel as the model counts them. Measured where the report has
  // a framework section (profiler/framework_probe.py); else this: ResNet-50 and
  // GPT-125M at micro-batch 1 were launch-bound at about 25 us per kernel with
  // PyTorch 2.11 on this project's H200 hosts (bench/memory_validation/data).
  double host_overhead_per_kernel_s = 25e-6;
  // The same for convolutional networks, whose kernels may cost the host less
  // each (cuDNN's convolution, BatchNorm and ReLU against a transformer's
  // views, casts and attention: on 2x H200 ResNet-50 trained at ~16 us per
  // profiled kernel where the probe's GPT took ~21,
  // bench/validate/data/calibration/2026-11-26_h200x2_heldout2). From the framework
  // probe's ResNet entry; 0: host_overhead_per_kernel_s x cnn_host_op_ratio.
  // Counted per op the host issues: cuDNN's layout transforms inside a 16-bit
  // NCHW convolution call are not (LayerCost::library_kernels), and per such
  // op a CNN costs the host more than a transformer (cuDNN's convolution and
  // BatchNorm dispatch): 1.14x the probe's GPT figure on a 2x H200 host
  // (24 against 21 us, bench/validate/data/calibration/2026-11-26_h200x2_heldout2), 1.37x
  // on a 2x H100 one (39 against 28.6, _h100x2_library_heldout2). Where the
  // probe has both networks, both figures are one host speed (the geometric
  // mean of the GPT's and the ResNet's over this ratio) times each network's
  // cost per op; where it has no ResNet entry the ratio stands in for it.
  // The ratio: the median of the ResNet's over the GPT's figure in the 39
  // framework-probe entries of the 21 calibration library runs of 2x H100 and
  // 2x H200 (1.10, 1-rank entries 1.13, 2-rank 1.08; bench/validate/README.md,
  // "h23h, session 23"; it was 1.25 from the two hosts above).
  double host_overhead_per_kernel_cnn_s = 0;
  double cnn_host_op_ratio = 1.10;
  // FSDP2's host work per micro-batch (hooks, all-gather copy-in and copy-out,
  // reduce-scatter staging), in kernel launches' worth so that it follows the
  // host's measured speed: per unit, and per parameter tensor it shards. Fitted
  // to the micro-batch-1 runs of three 2x H200 machines (FSDP minus single-GPU
  // step time; bench/validate/data/calibration/2026-11-26_h200x2_{validation,bound,heldout2}):
  // a GPT block (8 tensors) ~140 launches, 3.5 ms at 25 us; ResNet-50 (5 units,
  // 161 tensors) ~1200, where a per-unit figure alone gave 20-40 % short.
  double fsdp_unit_host_kernels = 108;
  double fsdp_tensor_host_kernels = 4;
  // The same measured in seconds, where the framework probe timed its GPT and
  // ResNet-50 under FSDP2 (fsdp_median_s), on two ranks where it could: the
  // two networks' unit and tensor counts differ, so their FSDP-minus-plain
  // pass times give both. FSDP's hooks follow the host's speed apart from its
  // launches (on one 2x H100 host it added ~1.8 ms per GPT block where the
  // counts above gave ~3), and its per-unit collectives wait for every rank:
  // on the next H100 host training added ~2.4-3.4 ms per block where one
  // rank's passes showed 1.45 (bench/validate/data/calibration/2026-11-26_h100x2_heldout4,
  // _heldout5). 0: not measured.
  double fsdp_host_per_unit_s = 0;
  double fsdp_host_per_tensor_s = 0;
  // The ranks those FSDP passes ran on (0: not measured). One rank's passes
  // meet no other process at the collectives: the model does not price a
  // multi-rank FSDP step with them (StrategyModel::Time).
  int fsdp_host_ranks = 0;
  // Host time DDP's reducer spends per launch it adds: each gradient copied
  // into its bucket and scaled (two per parameter tensor, in backward) and each
  // buffer copied out of the forward's broadcast (BatchNorm statistics). From
  // the framework probe's DDP-wrapped passes where measured, on the most ranks
  // it ran (there each bucket's all-reduce is a real NCCL call the ranks meet
  // at: on the library runs' two-rank probes 0.7-2.5x the one-rank figure,
  // median 1.23x; their DDP steps 10.2 -> 8.8 % off, LibraryCalibrationTest);
  // else this: on 2x H200 ResNet-50's DDP minus single-GPU step time averaged
  // ~5.3 ms over its 481 such launches
  // (bench/validate/data/calibration/2026-11-26_h200x2_*).
  double ddp_host_per_launch_s = 11e-6;
  // Host time of each DDP bucket's all-reduce call (ProcessGroupNCCL's work
  // object, its events and stream waits, NCCL's launch), in reducer launches:
  // the step model charges it per bucket (StrategyModel::Time), and the probe's
  // DDP passes above hold their own networks' buckets (its GPT 2 over 72
  // launches, ResNet-50 5 over 481), so the figure per launch is read net of
  // them. Measured on 2x H200 by the same models under DDP at bucket caps of
  // 25 and 1 MB (the same launches, more buckets): llama2.c-42M, RegNetY-8GF
  // and ViT-L/16 training steps 131-136 us a bucket, the probe's GPT and
  // ResNet-50 passes 147 and 100, where the probe's networks read 19 us a
  // launch net of their buckets (22 and 16) in the same session: 7
  // (bench/validate/data/checks/2026-11-28_h200x2_ddp_bucket_check).
  double ddp_bucket_host_launches = 7;
  // The optimizer step's host time per parameter tensor (AdamW's Python loop
  // over the parameters, its foreach launches, zero_grad; over FSDP2's DTensors
  // a dispatch per tensor and op), which a launch-bound step pays after its
  // backward: on three 2x H100 hosts ResNet-50 (161 tensors, 0.9 ms of
  // optimizer kernels) spent 2.8-5.6 ms from its last backward launch to the
  // step's end, 7-15 ms under FSDP2 (bench/validate/data/calibration/
  // 2026-11-26_h100x2_heldout{4,5,6}). Measured by the framework probe (its
  // passes' AdamW step, plain and under FSDP2; a fixed part and a part per
  // tensor, FitStepHost). Zero: not measured, and then part of the figures
  // above, which were fitted to whole steps.
  StepHostCost optimizer_host;
  StepHostCost fsdp_optimizer_host;
  // The host's pass-to-pass spread (coefficient of variation of one launch-
  // bound forward + backward): synchronous ranks wait for the slowest. From
  // the framework probe's ranks' straggle where it ran several, else its p95;
  // else this, the median of its p95 entries on 2x H200 (0.11-0.19,
  // bench/validate/data/calibration/2026-11-26_h200x2_heldout{2,3}).
  double host_step_cv = 0.13;
  // Each rank's host time when the ranks of one job run side by side on a
  // node, over one process's: the framework probe's plain passes on the most
  // ranks over its one-rank passes (median per network, then over networks).
  // On two 2x H100 hosts ResNet-50's two-rank pass took 1.20x, the GPT's
  // 1.13x and 0.97x (bench/validate/data/calibration/2026-11-26_h100x2_heldout6,
  // _heldout7_subset); two independent single-GPU processes did not slow each
  // other (_lanes_check). Over the ten library runs it read 0.95-1.12x and
  // training's DDP, TP and PP launches did not follow it (the two processes
  // ran minutes apart, at the host's speed of their moment); nor did FSDP's
  // (2x H200, run 13: 1.48x from a one-rank ResNet-50 pass faster than any
  // other run's, FSDP over-predicted 32-46 % at micro-batch 1), so the
  // step-time model no longer applies it (StrategyModel::Time); it stays in
  // the profile's label as the probe's reading. 1: not measured.
  double side_by_side_host_factor = 1;
  // Host time tensor parallelism adds per split Linear in one forward +
  // backward (PyTorch's DTensor tensor parallelism: each split Linear's op
  // dispatched through DTensor, sharding propagation, the hooks that wrap and
  // unwrap its input and output, the redistributions): on 2x H100 the Llama-1B
  // blocks split over 2 ranks trained at 280-300 ms per step at micro-batch 1
  // to 16 where their GPU work is 35-140 ms (bench/validate/data/calibration/
  // 2026-11-26_h100x2_library_heldout2). Measured by the framework probe (its
  // GPT's blocks split as torch.distributed.tensor.parallel splits them,
  // tp_median_s); else tp_linear_host_kernels launches' worth at the host's
  // time per kernel, fitted to that run's micro-batch-1 step over the five
  // split Linears a Llama block had to the model (its gate and up projections
  // are two modules; 100 when it counted four, one per GEMM), and kept per
  // block as the model counts seven (q, k and v are three modules too):
  // 80 x 5 / 7.
  double tp_host_per_linear_s = 0;
  double tp_linear_host_kernels = 57;
  // The probe's TP pass on several ranks over its one-rank TP pass (its plain
  // launches and dispatch both), straggle and side-by-side speed out: the
  // ranks' meetings at the split Linears' all-reduces, carried in
  // tp_host_per_linear_s (one-rank dispatch x this); the blocks' other
  // launches run at the host's own speed (bench/validate/data/checks/
  // 2026-11-28_h200x2_tp_host_check). 1 where the probe did not time both.
  double tp_rank_sync_factor = 1;
  std::string host;  // measured profiles: where and when
  std::string date;

  // "built-in profile h100-sxm" or "measured node01 2026-11-26T01:30:00Z".
  std::string Label() const;
};

// Fits the GEMM model of every precision to the profile's points (those the
// probe measured; the others scaled from a measured one, bf16 first). Call
// after changing `gemm`; probe-report profiles come fitted.
void FitGemmModels(HardwareProfile* hw);

// The profile's GEMM model of one precision: time of any shape. Cheap per
// call (no allocation); where the profile was not fitted (points added by
// hand) it fits on construction.
class GemmModel {
 public:
  GemmModel(const HardwareProfile& hw, DType dtype);
  // The kernel-aware fit where the profile knows this shape's kernel, else
  // the fit that takes the best tile.
  double Seconds(double m, double n, double k, GemmLayout layout = GemmLayout::kForward) const;
  double Tflops(double m, double n, double k, GemmLayout layout = GemmLayout::kForward) const {
    return 2.0 * m * n * k / Seconds(m, n, k, layout) / 1e12;
  }
  const GemmFit& fit() const { return fit_; }

 private:
  GemmFit fit_;
  DType dtype_;
  std::shared_ptr<const GemmKernelTable> kernels_;
};

// GemmModel(hw, dtype).Tflops(m, n, k, layout), for one-off lookups.
double GemmTflops(const HardwareProfile& hw, DType dtype, double m, double n, double k,
                  GemmLayout layout = GemmLayout::kForward);

// Time of one collective of `bytes` (the per-rank buffer, nccl-tests "size")
// over `ranks` ranks of which `ranks_per_node` share a node.
double CollectiveTime(const HardwareProfile& hw, CollectiveOp op, double bytes, int ranks,
                      int ranks_per_node);

// The same as lines: time = latency_s + bytes * seconds_per_byte (both 0 for
// a single rank), so callers can cache it per (op, ranks, ranks_per_node).
// Across nodes NCCL chooses among algorithms and protocols by size
// (network_model.h): then up to four lines, and the time is the fastest's.
struct CollectiveLine {
  double latency_s = 0;
  double seconds_per_byte = 0;
  int lines = 0;  // beyond the first: 0 or 1 means latency_s / seconds_per_byte alone
  std::array<double, 4> line_latency_s{}, line_seconds_per_byte{};
  void Add(double latency, double per_byte) {
    if (lines == 0) {
      latency_s = latency;
      seconds_per_byte = per_byte;
    }
    if (lines < 4) {
      line_latency_s[lines] = latency;
      line_seconds_per_byte[lines] = per_byte;
      ++lines;
    }
  }
  double At(double bytes) const {
    if (bytes <= 0) return 0;
    double t = latency_s + bytes * seconds_per_byte;
    for (int i = 1; i < lines; ++i) {
      t = std::min(t, line_latency_s[i] + bytes * line_seconds_per_byte[i]);
    }
    return t;
  }
};
CollectiveLine CollectiveCoefficients(const HardwareProfile& hw, CollectiveOp op, int ranks,
                                      int ranks_per_node);

absl::StatusOr<HardwareProfile> BuiltinHardwareProfile(std::string_view name);
std::vector<std::string> BuiltinHardwareProfileNames();

// Builds a profile from a probe report (schema xdeep.probe_report/1). Errors name
// the source and the JSON path at fault.
absl::StatusOr<HardwareProfile> HardwareProfileFromProbeReport(std::string_view json_text,
                                                               std::string_view source_name);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_HARDWARE_PROFILE_H_
