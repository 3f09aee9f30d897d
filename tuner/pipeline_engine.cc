#include "tuner/pipeline_engine.h"

namespace xdeep::tuner {

namespace {

// Autograd adds each micro-batch's 16-bit gradients into .grad in place:
// read 2 + 2, write 2 bytes a parameter, from the second micro-batch on.
void AccumulateInPlace(PipelineEngineTraits* t) {
  t->accumulation_traffic_bytes = 2 + 2 + 2;
  t->first_accumulation_free = true;
}

// Megatron-LM's data-parallel wrapper by release (pipeline_engine.h).
void ApplyMegatronRelease(const Workload& w, PipelineEngineTraits* t) {
  const MegatronRelease r = w.settings.megatron_release;
  if (r == MegatronRelease::kCore) return;
  t->overlaps_gradient_reduction = false;
  const bool fp32_accumulation =
      w.precision == Precision::kBf16Mixed && w.settings.fp32_grad_reduce;
  if (fp32_accumulation && r == MegatronRelease::k2022) return;  // fused into the GEMM
  if (fp32_accumulation) {
    t->accumulation_traffic_bytes = 2 + 4 + 4;  // main_grad.add_(grad)
    t->accumulation_bandwidth_share = kMixedDtypeAccumulationShare;
  } else if (w.precision == Precision::kBf16Mixed) {
    AccumulateInPlace(t);
  }
}

}  // namespace

PipelineEngineTraits EngineTraits(const Workload& w, const Configuration& c) {
  PipelineEngineTraits t;
  if (w.settings.pipeline_parallel == PipelineParallel::kMegatron) ApplyMegatronRelease(w, &t);
  if (c.pp <= 1) {
    t.reduce_scatter_per_unit = w.settings.pipeline_parallel != PipelineParallel::kDeepSpeed;
    return t;
  }
  if (w.settings.pipeline_parallel == PipelineParallel::kMegatron) {
    if (c.tp > 1 && w.settings.tensor_parallel == TensorParallel::kMegatron) {
      t.p2p_shards = c.tp;
      t.p2p_gathered = !c.sequence_parallel;
    }
    t.overlapped_p2p = w.settings.pipeline_async_p2p &&
                       c.schedule == PipelineSchedule::kInterleaved && c.virtual_stages > 1;
    return t;
  }
  if (w.settings.pipeline_parallel == PipelineParallel::kTorch) {
    t.reduces_tied_pair = false;
    return t;
  }
  if (w.settings.pipeline_parallel != PipelineParallel::kDeepSpeed) return t;
  t.overlaps_gradient_reduction = false;
  t.serial_exchange = true;
  t.partitioned_p2p = c.tp > 1;
  if (w.settings.deepspeed_release == DeepSpeedRelease::k2021) {
    if (w.precision == Precision::kBf16Mixed && w.settings.fp32_grad_reduce) {
      t.accumulation_traffic_bytes = 2 + 4 + 4;  // main_grad.add_(grad), fp32 main grads
      t.accumulation_bandwidth_share = kMixedDtypeAccumulationShare;
    } else if (w.precision == Precision::kBf16Mixed) {
      AccumulateInPlace(&t);  // the public engine's fp16
    }
    if (t.partitioned_p2p) {
      t.partition_full_traffic = 1 + 2 + 2;  // zero fill, copy-out, clone
      t.partition_shard_traffic = 2;         // read and write
    }
    return t;
  }
  if (w.precision == Precision::kBf16Mixed) {
    t.accumulation_traffic_bytes = (2 + 4) + (4 + 4 + 4);  // cast to fp32, then add
    t.accumulation_buffer_bytes = 4;
  }
  return t;
}

std::string PipelineEngineProblem(const Workload& w, const Configuration& c) {
  if (w.settings.pipeline_parallel == PipelineParallel::kMegatron &&
      w.settings.megatron_release != MegatronRelease::kCore && c.dp > 1 &&
      c.sharding != Sharding::kNone) {
    // Neither a8d172b nor 35a3fa8 has --use-distributed-optimizer.
    return "Megatron-LM of 2021 and 2022 (megatron_release) keeps whole gradients and optimizer "
           "state on every data-parallel rank: no ZeRO or FSDP sharding (megatron_release = "
           "\"core\" has the distributed optimizer)";
  }
  if (w.settings.pipeline_parallel == PipelineParallel::kMegatron &&
      c.schedule == PipelineSchedule::kInterleaved && c.virtual_stages > 1 && c.pp == 2 &&
      !(w.settings.megatron_release == MegatronRelease::kCore && w.settings.pipeline_async_p2p)) {
    // Megatron-LM refuses its interleaved schedule on two stages since the
    // schedule came in (182841f, 2021-03-20, arguments.py: "pipeline-model-
    // parallel size should be greater than 2 with interleaved schedule"; the
    // same check in megatron-core's initialize_model_parallel): a batch of
    // p2p operations would hold two sends and two receives between the same
    // two ranks. Later releases lift it only with --overlap-p2p-communication
    // (the workload's pipeline_async_p2p).
    return "Megatron's interleaved schedule needs pp > 2 (pp 2 only with asynchronous p2p, "
           "[model] pipeline_async_p2p, in megatron-core)";
  }
  if (c.pp <= 1 || w.settings.pipeline_parallel != PipelineParallel::kDeepSpeed) return "";
  if (c.schedule == PipelineSchedule::kInterleaved && c.virtual_stages > 1) {
    return "DeepSpeed's pipeline engine has no interleaved schedule";
  }
  if (c.dp > 1 && (c.sharding == Sharding::kZero2 || c.sharding == Sharding::kZero3)) {
    return "DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 with pipeline parallelism";
  }
  return "";
}

}  // namespace xdeep::tuner
