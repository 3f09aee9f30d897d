// Per-strategy analytical model: time and memory per GPU of one configuration
// (data / tensor / pipeline parallel, ZeRO-1/2/3 and FSDP sharding, and their
// hybrids; micro-batching, gradient accumulation, activation recomputation).
// Every formula cites its source next to it in strategy_model.cc.
#ifndef XDEEP_TUNER_STRATEGY_MODEL_H_
#define XDEEP_TUNER_STRATEGY_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tuner/configuration.h"
#include "tuner/hardware_profile.h"
#include "tuner/workload.h"

namespace xdeep::tuner {

// Memory per GPU, in bytes, split the way PyTorch's caching allocator sees it
// (everything but `reserved` shows in torch.cuda.max_memory_allocated).
struct MemoryBreakdown {
  double weights = 0;          // parameters as stored (fp32 for autocast, 16-bit for mixed)
  double compute_weights = 0;  // 16-bit weight copies alive in forward/backward
  double gradients = 0;
  double optimizer = 0;     // Adam moments (+ fp32 master weights for kBf16Mixed)
  double comm_buffers = 0;  // DDP gradient buckets, FSDP all-gathered units
  double activations = 0;   // saved for backward, all micro-batches in flight
  double transient = 0;     // peak temporaries: logits/loss, optimizer step temps
  double workspace = 0;     // cuBLAS workspaces held in the caching allocator
  // DDP only: what the Reducer's bucket rebuild in the second iteration can
  // add on one rank, at random, over peak_allocated (a stale bucket set).
  double ddp_rebuild = 0;
  double reserved = 0;  // CUDA context, NCCL, not in the allocator
  double margin = 0;    // fragmentation headroom
  // Peak of what torch.cuda.max_memory_allocated reports: the larger of the
  // start of backward (all activations alive) and the optimizer step, on the
  // worst pipeline rank. The fields above are that rank's.
  double peak_allocated = 0;
  int worst_rank = 0;

  double PeakAllocated() const { return peak_allocated; }
  // What must fit on the card.
  double Total() const { return peak_allocated + ddp_rebuild + reserved + margin; }
};

class StrategyModel;

// Memory per GPU of a configuration. Pure function of its inputs.
MemoryBreakdown EstimateMemory(const Workload& w, const HardwareProfile& hw,
                               const Configuration& c);

struct StepTime {
  double compute_s = 0;
  double exposed_comm_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;
  double total_s = 0;
  double per_micro_batch_s = 0;  // slowest rank's forward + backward of one micro-batch
  double fill_drain_s = 0;       // the pipeline's fill and drain on the GPU; bubble_s is what shows
  // Where a pipeline's hosts never wait for its transfers: how far a stage's
  // host runs ahead of its GPU per micro-batch (launches beyond kernels).
  double host_lead_per_micro_batch_s = 0;
  // A per-micro-batch gradient accumulation pass the step's first
  // micro-batch does not run (PipelineEngineTraits::first_accumulation_free).
  double first_accumulation_s = 0;

  // The compute part's two components, which learning corrects apart
  // (tuner/step_time_correction.h): the GPU's kernel time of the passes
  // (forward, backward, autocast's casts) and the host's time to launch them
  // (DDP's reducer launches, FSDP2's hooks and the straggle included), as
  // the model combines them (HostAndDevice, LaunchedPass). Per micro-batch,
  // of the slowest rank's passes; a recomputed forward counts twice. Single
  // precision, as they only scale a correction (the search copies millions of
  // StepTimes): launched_s() is compute_s's part to ~1e-7.
  struct Passes {
    float fwd_kernel_s = 0, fwd_host_s = 0;
    float fwd_host_only_s = 0;  // host work that launches none of the kernels (FSDP2's hooks, DTensor's dispatch)
    float bwd_kernel_s = 0, bwd_host_s = 0;
    float device_s = 0;  // the micro-batch with its launches taken out
    int forwards = 1;    // 2 under full recomputation
    float bwd_host_only_s = 0;  // backward's host work that launches none of its kernels (DTensor's dispatch)
  };
  Passes passes;
  // The same per step (x grad_accum): GPU kernel time, host launch time and
  // the passes as combined (HostAndDevice, LaunchedPass). compute_s =
  // launched_s() + the mode's own terms in a pass (TP's and CP's collectives,
  // pipeline transfers, FSDP's exposed gathers, accumulation passes):
  // launched_s() == compute_s for a single GPU and DDP.
  double kernel_s() const {
    return micro_batches * (passes.forwards * double(passes.fwd_kernel_s) + passes.bwd_kernel_s);
  }
  double host_s() const {
    return micro_batches * (passes.forwards * (double(passes.fwd_host_s) + passes.fwd_host_only_s) +
                            passes.bwd_host_s + passes.bwd_host_only_s);
  }
  double launched_s() const;
  // Which component sets the compute part (the larger of kernel_s, host_s).
  enum class Bound { kKernel, kHost };
  Bound bound() const { return kernel_s() >= host_s() ? Bound::kKernel : Bound::kHost; }
  int micro_batches = 1;  // grad_accum of the step
};

// Where one micro-batch's and one step's time goes, for reports that set two
// layouts side by side (bench/scale/published_runs.cc --compare). Per
// micro-batch of the slowest rank (the one StepTime::per_micro_batch_s is
// of), seconds; the per-micro-batch terms add up to per_micro_batch_s and the
// step terms to exposed_comm_s. Filled only on request: a search never pays
// for it.
struct StepTerms {
  double forward_s = 0;      // the forward pass as launched (kernels, casts, host bound)
  double backward_s = 0;     // the backward pass as launched
  double recompute_s = 0;    // full recomputation's second forward (its collectives in tp / cp)
  double tp_comm_s = 0;      // tensor-parallel all-reduces / all-gathers / reduce-scatters
  double cp_comm_s = 0;      // context parallel: keys and values gathered, their gradients reduced
  double pp_comm_s = 0;      // pipeline transfers that wait (and DeepSpeed's partition copies)
  double sharded_dp_s = 0;   // ZeRO-2 / FSDP traffic that outlasts the pass it overlaps
  double accumulation_s = 0; // per-micro-batch gradient accumulation pass
  // Per step, after the last micro-batch:
  double dp_reduce_s = 0;  // DDP / ZeRO-1 gradient reduction not hidden (bucket copies included)
  double dp_gather_s = 0;  // ZeRO-1 / -2 updated parameter shards all-gathered
  double tied_s = 0;       // tied embedding / head gradients between the pipeline's ends
};

// Time of one optimizer step (one global batch).
StepTime EstimateStepTime(const Workload& w, const HardwareProfile& hw, const Configuration& c);

// How much longer n synchronous ranks take to launch a step than one host
// whose pass-to-pass times spread with coefficient of variation cv: 1 + cv x
// E[max of n standard normal draws] (the straggler effect of synchronous SGD).
double StragglerFactor(int ranks, double cv);

// The model with its per-stage figures memoised (pipeline partitions and
// per-micro-batch compute times do not depend on dp, nodes or sharding), so a
// search can score millions of configurations. Results are bit-identical to
// EstimateMemory / EstimateStepTime, which build a fresh one per call.
class StrategyModel {
 public:
  StrategyModel(const Workload& w, const HardwareProfile& hw);
  ~StrategyModel();
  StrategyModel(const StrategyModel&) = delete;
  StrategyModel& operator=(const StrategyModel&) = delete;

  MemoryBreakdown Memory(const Configuration& c);
  // Memory(c).Total() without the breakdown (bit-identical, cheaper).
  double MemoryTotal(const Configuration& c);
  // `terms`, when given, receives where the time goes (StepTerms).
  StepTime Time(const Configuration& c, StepTerms* terms = nullptr);
  // Time(c) for another accumulation count, from Time(c): bit-identical to
  // Time() of the changed configuration, at the cost of two multiplications.
  static StepTime WithAccumulation(StepTime st, int grad_accum);
  // `st` with its compute part's kernel time scaled by `kernel_factor` and its
  // host time by `host_factor`, recombined as Time() combines them (pass by
  // pass; a pipeline's fill and drain follow its device time); every other
  // term as it was. Factors of 1 return `st` bit for bit.
  static StepTime ScaledCompute(StepTime st, double kernel_factor, double host_factor);
  // The smallest accumulation count with the same memory as c's.
  int MemoryAccumulation(const Configuration& c) const;
  // Compute-only time per sample on one GPU at the best micro-batch, ignoring
  // memory: the reference for parallel efficiency.
  double IdealTimePerSample();

  const Workload& workload() const { return w_; }
  const HardwareProfile& hardware() const { return hw_; }

  struct Impl;

 private:
  template <bool kBreakdown>
  double MemoryCore(const Configuration& c, MemoryBreakdown* out);
  // The model of c's context-parallel degree and sequence parallelism: each
  // its own per-rank workload (context_parallel.h), built on first use.
  Impl& For(const Configuration& c);

  const Workload& w_;
  const HardwareProfile& hw_;
  std::unique_ptr<Impl> impl_;  // cp 1, no sequence parallelism
  struct Variant;
  std::vector<std::unique_ptr<Variant>> variants_;
  int last_variant_key_ = -1;
  Impl* last_variant_ = nullptr;
};

// Checks a configuration against the workload's structure (divisibility of
// heads, layers, batch); empty string when valid, else the reason.
std::string StructuralProblem(const Workload& w, const Configuration& c);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_STRATEGY_MODEL_H_
