// One way of running a workload (nodes, GPUs, dp x tp x pp, sharding, batch
// split, recomputation, pipeline schedule) and what the model predicts for it.
// Plain data shared by the strategy model, the cost model and the search.
#ifndef XDEEP_TUNER_CONFIGURATION_H_
#define XDEEP_TUNER_CONFIGURATION_H_

#include <cstdint>
#include <string>

namespace xdeep::tuner {

enum class Objective { kCost, kTime, kCostUnderDeadline, kTimeUnderBudget };
enum class Sharding { kNone, kZero1, kZero2, kZero3 };  // kZero3 == FSDP full shard
enum class PipelineSchedule { k1F1B, kInterleaved };

struct Configuration {
  int nodes = 1, gpus_per_node = 1, dp = 1, tp = 1, pp = 1;  // GPUs = dp x tp x pp x cp
  Sharding sharding = Sharding::kNone;
  int micro_batch = 1, grad_accum = 1;
  bool recompute = false;  // full recomputation: each block's forward again in backward
  // Selective recomputation (Korthikanti et al. 2022, sec. 5): only the
  // attention core (Q K^T, softmax, dropout, scores x V) is recomputed in
  // backward, its s^2-sized activations not kept. Excludes `recompute`.
  bool selective_recompute = false;
  int64_t global_batch = 1;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;  // meaningful when pp > 1
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved schedule)
  // Context parallelism: each sequence split over cp ranks, which gather the
  // others' keys and values for attention (Llama 3's all-gather form); weights
  // replicated over cp, gradients reduced over dp x cp. Ranks ordered tp, cp,
  // pp, dp (Megatron-Core, Llama 3).
  int cp = 1;
  // Megatron sequence parallelism (Korthikanti et al. 2022): with tp > 1 the
  // norms' and dropouts' activations split over the tensor-parallel group too,
  // its all-reduces become all-gather + reduce-scatter of the same volume.
  bool sequence_parallel = false;

  int TotalGpus() const { return nodes * gpus_per_node; }
};

struct Prediction {
  double step_time_s = 0, samples_per_s = 0, time_to_solution_s = 0, cost = 0;
  int64_t memory_per_gpu_bytes = 0;
  // Breakdown, for "explain" output and tests.
  double compute_s = 0;            // forward + backward (+ recompute) on the critical path
  double exposed_comm_s = 0;       // communication not hidden behind compute
  double bubble_s = 0;             // pipeline fill / drain
  double optimizer_s = 0;          // optimizer step
  double steps = 0;                // optimizer steps to solution
  double samples_needed = 0;       // after the gradient-noise-scale correction
  double parallel_efficiency = 0;  // ideal single-GPU time / (GPUs x time), per sample
  // Jobs the run takes under the search's time limit (SearchLimits::
  // time_limit_s): 1 unless it is planned as checkpointed segments.
  int segments = 1;
  // The model's step time before any correction from real runs
  // (SearchLimits::step_time_correction): corrections are fitted against it.
  double analytical_step_time_s = 0;
  // What the prediction rests on beyond the profile's measurements, in words
  // (GEMMs beyond the probed micro-batches, collectives over more ranks than
  // measured, settings modelled from cited figures); empty when nothing.
  // Search fills it for the candidates it returns (ExtrapolationNote).
  std::string extrapolated;
};

std::string_view ObjectiveName(Objective o);
std::string_view ShardingName(Sharding s);
std::string_view ScheduleName(PipelineSchedule s);

}  // namespace xdeep::tuner

#endif  // XDEEP_TUNER_CONFIGURATION_H_
