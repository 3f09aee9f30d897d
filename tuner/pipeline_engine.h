// What the software running a pipeline does around the schedule's compute
// ([model] pipeline_parallel). The strategy model charges these traits where
// pp > 1; with one stage only Megatron's release matters (below).
//
// DeepSpeed's PipelineEngine, from its source (github.com/microsoft/DeepSpeed
// at 38327e0: deepspeed/runtime/pipe/engine.py, schedule.py, p2p.py;
// deepspeed/runtime/bf16_optimizer.py):
//  * TrainSchedule runs stage s's forward of micro-batch i at step 2i + s and
//    its backward at 2i + 2p - 1 - s, exchanging with one neighbour at the
//    start of each step. That is 1F1B's order with 1F1B's dependencies: its
//    makespan is (m + p - 1)(F + B), as Megatron's (bench/scale/
//    deepspeed_schedule.py simulates both step by step). No schedule term.
//  * p2p.send and p2p.recv are blocking (async_op is refused): a forward step
//    receives its input and sends the last gradient back, a backward step
//    sends the last output on and receives its gradient, one after the other,
//    where Megatron batches the pair (the first stage has only the backward
//    step's exchange, the last only the forward step's: strategy_model.cc
//    charges each stage the boundaries it has). With tensor parallelism the
//    activation and its gradient are partitioned over the tp group
//    (pipe_partitioned, grad_partitioned: on with model parallelism): 1 / tp
//    of it crosses the link and the receiver all-gathers it over NVLink
//    (PartitionedTensor.full); backward all-gathers the stage's own output
//    again to rebuild its graph.
//  * ReduceTiedGrads, ReduceGrads and OptimizerStep run after the last step:
//    the data-parallel gradient reduction starts when backward has ended.
//  * bf16 runs BF16_Optimizer, "hardcoded for fp32 gradient accumulation":
//    a full-size fp32 gradient buffer (4 bytes per parameter beside the bf16
//    gradients), and after every micro-batch's backward update_hp_grads runs
//    hp_grad.add_(lp.grad.to(float32)) per parameter: the cast reads 2 and
//    writes a 4-byte temporary, the add reads it and the buffer and writes
//    the buffer (18 bytes per parameter); clear_lp_grads then drops the bf16
//    gradients (set to None: no pass).
//  * No interleaved schedule; ZeRO-2 and ZeRO-3 are refused with pipeline
//    parallelism (engine.py asserts stage < gradients).
//
// DeepSpeed of 2021 ([model] deepspeed_release = "2021": the engine as
// Megatron-DeepSpeed's GPTModelPipe ran it in 2021, e2fdd25 (2021-09-29,
// released in v0.5.4) to v0.5.x; github.com/microsoft/DeepSpeed):
//  * Gradients cross stages 1 / tp, as today. Before e2fdd25 (v0.4.0 to
//    v0.5.3) the partitioned exchange took outputs[0] and outputs[1] of a
//    (hidden, mask) tuple; GPTModelPipe (github.com/microsoft/Megatron-DeepSpeed,
//    8a132ce, 2021-06) passes one tensor between stages (the mask lives in
//    args.attn_mask), so with tensor parallelism that engine indexed the
//    tensor's rows and could not train it. e2fdd25 (co-authored by MT-NLG's
//    DeepSpeed authors) partitions the single tensor and sets
//    is_grad_partitioned = is_model_parallel, and checkpoints only the
//    ParallelTransformerLayerPipe layers of a GPTModelPipe (_is_checkpointable).
//  * No bf16: the runtime's first bfloat16 is 9c67278 (2021-10-07), ZeRO with
//    bf16 648f7bf (2021-11-01), bf16 with the pipeline engine 56c5223
//    (2022-04-19). 16-bit training was fp16 (fp16 and bf16 take the same time
//    and bytes here): DeepSpeed's FP16 optimizer and ZeRO-1 keep no fp32
//    gradient buffer and register no hooks without overlap_comm, so autograd
//    adds each micro-batch's gradients into .grad in place from the second
//    micro-batch on (read 2 + 2, write 2 bytes a parameter). (Megatron-
//    DeepSpeed's get_megatron_optimizer returns the bare optimizer under
//    DeepSpeed, so Megatron's fp32 main_grad accumulation is not used either.)
//    A run that trained bf16 on it anyway ran code that is not public; with
//    [training] fp32_grad_reduce it is charged the least fp32 accumulation
//    costs, Megatron's main_grad.add_(grad) after every micro-batch (read
//    2 + 4, write 4 bytes a parameter, at the mixed-dtype add's measured
//    rate, kMixedDtypeAccumulationShare; fp32 gradients reduced and kept),
//    which Megatron-DeepSpeed's own arguments.py of 2021 says bf16 needs
//    ("bfloat16 requires gradient accumulation and all-reduce to be done in
//    fp32", microsoft/Megatron-DeepSpeed f0131ce0, megatron/arguments.py).
//  * PartitionedTensor's copies on the device (deepspeed/runtime/utils.py at
//    e2fdd25): full() zero-fills a flat buffer of the whole tensor, copies
//    the local part in, all-gathers with dist.all_gather over a list of
//    views -- which PyTorch of 2021 runs into a flat buffer of its own and
//    copies out view by view (ProcessGroupNCCL::allgather in
//    torch/lib/c10d/ProcessGroupNCCL.cpp, its torch <= 1.9 location) -- and
//    returns .clone() of it: 1 + 2 + 2 bytes of traffic a byte of the whole
//    tensor besides the all-gather, and a shard copy. A pass takes three
//    full()s a micro-batch (forward: its input; backward: its own output
//    rebuilt and the received gradient) and copies a shard (read and write)
//    at each of: the partition of its output and of its input's gradient
//    (_partition_tensor's .clone()), the received buffer's clone
//    (_exec_recv_activations) and the forward's clone of it
//    (_exec_forward_pass), besides full()'s own. Counted where pp > 1 and
//    tp > 1: at MT-NLG's micro-batch of 2, 1.6 ms of a middle stage's ~320 ms
//    micro-batch, 0.6 ms of the last stage's (one full()), the slowest.
//  Checked and not a cost here: p2p.send / recv call dist.send / dist.recv
//  from torch 1.8 (e2fdd25; a broadcast in two-rank groups before, same
//  bytes); TrainSchedule, ReduceTiedGrads / ReduceGrads / OptimizerStep
//  after the last step and 'type:transformer' partitioning are as today's;
//  PartitionedTensor.from_meta's meta.tolist() makes the host wait for the
//  transfer the pass needs anyway; ThroughputTimer.start synchronises only
//  after stop() has counted two steps, and only DeepSpeedEngine.step() calls
//  stop(), which the pipeline's train_batch never runs (utils/timer.py).
//
// Megatron-LM's schedules with Megatron-style tensor parallelism send 1 / tp
// of each activation and gradient across a stage boundary: under sequence
// parallelism the rank's own sequence shard, which the next stage consumes as
// it is (megatron-core's get_tensor_shapes divides the sequence by tp);
// without it a scatter of the activation that the receiver all-gathers over
// NVLink (Narayanan et al. 2021, sec. 4.1, "scatter/gather communication
// optimization"). The send and receive of a pass are batched, not serial.
// With asynchronous transfers ([model] pipeline_async_p2p: Llama 3's
// schedule, Dubey et al. 2024 sec. 3.3.2; megatron-core's overlap_p2p_comm)
// and the interleaved schedule, a rank always has another chunk's pass to run
// while a transfer is in flight, so only the part of a transfer longer than
// one chunk's pass delays it.
//
// Megatron's data-parallel side by release ([model] megatron_release; read in
// github.com/NVIDIA/Megatron-LM, at any pipeline depth):
//  * "core" (the default): megatron-core's DistributedDataParallel
//    (2d5220a, 2023-08, --overlap-grad-reduce) reduces gradient buckets while
//    the last backward runs, and gradient_accumulation_fusion (83b1e42,
//    2022-02; 16-bit buffers from 07916bf, 2022-09) has each weight-gradient
//    GEMM accumulate into the gradient buffer: no pass of its own.
//  * "2021" (Megatron-LM at a8d172b, 2021-04, the code of Narayanan et al.
//    2021): train_step calls allreduce_gradients() after
//    forward_backward_func has returned, the whole reduction after the
//    pipeline flush (megatron/training.py); no fusion, so every micro-batch's
//    16-bit weight gradients are added into the accumulated ones by a pass of
//    their own: with --accumulate-allreduce-grads-in-fp32 (which bf16 forced;
//    fp32_grad_reduce here) the DDP hook's main_grad.add_(grad) after every
//    micro-batch (megatron/model/distributed.py: read 2 + 4, write 4 bytes a
//    parameter, at kMixedDtypeAccumulationShare of the copy bandwidth),
//    otherwise autograd's AccumulateGrad adding into .grad in place from the
//    second micro-batch on (read 2 + 2, write 2).
//  * "2022" (Megatron-LM at 35a3fa8, 2022-05): the reduction still after the
//    flush; fusion on, but only with fp32 accumulation (arguments.py turns it
//    off otherwise), so 16-bit gradients keep autograd's pass.
//  Both are Megatron's own DDP (--DDP-impl local); neither has the
//  distributed optimizer (--use-distributed-optimizer is in neither
//  commit's arguments.py), so they run no ZeRO or FSDP sharding.
#ifndef XDEEP_TUNER_PIPELINE_ENGINE_H_
#define XDEEP_TUNER_PIPELINE_ENGINE_H_

#include <string>

#include "tuner/configuration.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

struct PipelineEngineTraits {
  // Gradient buckets reduced while the last micro-batch's backward runs.
  bool overlaps_gradient_reduction = true;
  // Blocking send then receive at each pass instead of a batched pair.
  bool serial_exchange = false;
  // Activations and gradients cross the link 1 / tp each and are
  // all-gathered over tp.
  bool partitioned_p2p = false;
  // Megatron's p2p: the share of an activation that crosses a stage boundary
  // (1 / tp with Megatron-style tensor parallelism) and whether the receiver
  // all-gathers it over tp (not under sequence parallelism).
  int p2p_shards = 1;
  bool p2p_gathered = false;
  // Megatron's transfers overlap the neighbouring chunk's compute.
  bool overlapped_p2p = false;
  // Bytes per parameter per micro-batch of fp32 gradient accumulation, and
  // the fp32 buffer's bytes per parameter; 0 where gradients accumulate in
  // their own 16-bit buffer.
  double accumulation_traffic_bytes = 0;
  double accumulation_buffer_bytes = 0;
  // The share of the device's copy bandwidth (HardwareProfile::
  // memory_bandwidth_gbps) the accumulation pass reaches: 1 for a same-dtype
  // add; kMixedDtypeAccumulationShare for main_grad.add_(grad), an fp32
  // buffer plus a 16-bit gradient.
  double accumulation_bandwidth_share = 1;
  // The first micro-batch's gradients find nothing to add to (autograd's
  // accumulation into .grad): one pass fewer per step.
  bool first_accumulation_free = false;
  // DeepSpeed of 2021's PartitionedTensor: bytes of device-memory traffic
  // per byte of the whole tensor for each full() beside its all-gather, and
  // per byte of a 1 / tp shard for each shard copy (0: none counted).
  double partition_full_traffic = 0;
  double partition_shard_traffic = 0;
  // Sharded gradients (ZeRO-2) are reduce-scattered one FSDP unit at a time
  // in FSDP2's order (tuner/grad_sync_overlap.h): with one stage, where
  // PyTorch's fully_shard runs the data-parallel side. DeepSpeed's ZeRO-2
  // reduces its own buckets; Llama 3's rows (Megatron's engine, pp 16) model
  // Meta's FSDP, whose measured steps are faster than even the bucket rule
  // predicts (bench/scale/README.md), so they keep that rule.
  bool reduce_scatter_per_unit = false;
  // A tied embedding and head on two stages: their gradients are all-reduced
  // between the two stages after backward (Megatron's embedding group,
  // DeepSpeed's ReduceTiedGrads). torch.distributed.pipelining's
  // PipelineStage has no such group: a model split into stages holds two
  // independent copies and nothing reduces them (PiPPy issue #32 left it to
  // the training script; the library suite adds none).
  bool reduces_tied_pair = true;
};

// main_grad.add_(grad) (fp32 += bf16, 10 bytes a parameter) measured at 0.82
// of the copy bandwidth the model charges a same-dtype pass at: 2x and 4x
// H100 80GB HBM3 (PyTorch 2.11), bench/scale/pipeline_microbatch.py's fp32
// accumulation against its in-place one, eight step pairs, 0.76-0.84 (median
// 0.823; bench/scale/accumulation_rate.py, README "session 20 (h25c)"). The
// pass reads a 16-bit and a 32-bit operand into a 32-bit one; the likely
// cause (not profiled) is ATen's CUDA elementwise loop taking its
// dtype-casting path for mixed operands, whose loads are not vectorised as a
// same-dtype add's are. Not measured on an A100: the same share is assumed.
inline constexpr double kMixedDtypeAccumulationShare = 0.82;

// Seconds of one accumulation pass over `params` parameters at copy
// bandwidth `bw` (bytes/s).
inline double AccumulationSeconds(const PipelineEngineTraits& t, double params, double bw) {
  return params * t.accumulation_traffic_bytes / (bw * t.accumulation_bandwidth_share);
}

// The traits of the workload's engine for configuration c (all defaults,
// Megatron's, where c has one stage).
PipelineEngineTraits EngineTraits(const Workload& w, const Configuration& c);

// Why the workload's engine cannot run c ("" where it can).
std::string PipelineEngineProblem(const Workload& w, const Configuration& c);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_PIPELINE_ENGINE_H_
