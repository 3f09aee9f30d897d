// Framework configurations (see framework_config.h).
#include "daemon/cli/framework_config.h"

#include <nlohmann/json.hpp>

namespace xdeep::cli {
namespace {

using client::RunDecision;
using nlohmann::json;

// The value of a rendezvous variable, or a reference a script fills in.
std::string Rendezvous(const std::function<std::string(const char*)>& env, const char* name) {
  const std::string v = env ? env(name) : std::string();
  return v.empty() ? "${" + std::string(name) + "}" : v;
}

std::string Torchrun(const RunDecision& d, const std::function<std::string(const char*)>& env) {
  return "--nnodes=" + std::to_string(d.nodes) +
         " --nproc_per_node=" + std::to_string(d.gpus_per_node) +
         " --node_rank=" + Rendezvous(env, "XDEEP_NODE_RANK") +
         " --master_addr=" + Rendezvous(env, "MASTER_ADDR") +
         " --master_port=" + Rendezvous(env, "MASTER_PORT") + "\n";
}

json DeepSpeed(const RunDecision& d) {
  json config = {
      {"train_batch_size", d.global_batch},
      {"train_micro_batch_size_per_gpu", d.micro_batch},
      {"gradient_accumulation_steps", d.grad_accumulation},
      {"zero_optimization", {{"stage", d.sharding_stage}}},
      {"bf16", {{"enabled", true}}},
  };
  if (d.recompute) {
    config["activation_checkpointing"] = {{"partition_activations", d.tp > 1},
                                          {"contiguous_memory_optimization", false}};
  }
  return config;
}

std::string Megatron(const RunDecision& d) {
  std::string args = "--tensor-model-parallel-size " + std::to_string(d.tp) +
                     " --pipeline-model-parallel-size " + std::to_string(d.pp) +
                     " --context-parallel-size " + std::to_string(d.cp) + " --micro-batch-size " +
                     std::to_string(d.micro_batch) + " --global-batch-size " +
                     std::to_string(d.global_batch);
  if (d.pp > 1 && d.virtual_stages > 1)
    args += " --num-virtual-stages-per-pipeline-rank " + std::to_string(d.virtual_stages);
  // Megatron shards optimizer state (ZeRO-1) with its distributed optimizer.
  if (d.sequence_parallel) args += " --sequence-parallel";
  if (d.sharding_stage >= 1) args += " --use-distributed-optimizer";
  if (d.recompute) {
    args += " --recompute-granularity full --recompute-method uniform";
  } else if (d.selective_recompute) {
    args += " --recompute-granularity selective";
  }
  return args + " --bf16\n";
}

bool Lightning(const RunDecision& d, json* out, std::string* error) {
  if (d.pp > 1) {
    *error =
        "Lightning has no pipeline parallelism and this decision needs pp=" + std::to_string(d.pp) +
        "; emit megatron or deepspeed, or limit the workload with " + "[parallel] max_pp = 1";
    return false;
  }
  json trainer = {{"num_nodes", d.nodes},
                  {"devices", d.gpus_per_node},
                  {"accumulate_grad_batches", d.grad_accumulation},
                  {"precision", "bf16-mixed"}};
  if (d.tp > 1) {
    trainer["strategy"] = {
        {"name", "model_parallel"}, {"data_parallel_size", d.dp}, {"tensor_parallel_size", d.tp}};
  } else if (d.sharding_stage == 3) {
    trainer["strategy"] = "fsdp";
  } else if (d.sharding_stage > 0) {
    trainer["strategy"] = "deepspeed_stage_" + std::to_string(d.sharding_stage);
  } else {
    trainer["strategy"] = "ddp";
  }
  *out = {{"trainer", trainer}, {"dataloader", {{"batch_size", d.micro_batch}}}};
  return true;
}

std::string Accelerate(const RunDecision& d, const std::function<std::string(const char*)>& env) {
  std::string type = "MULTI_GPU";
  if (d.tp > 1 || d.pp > 1) {
    type = "MEGATRON_LM";
  } else if (d.sharding_stage == 3) {
    type = "FSDP";
  } else if (d.sharding_stage > 0) {
    type = "DEEPSPEED";
  }
  std::string y = "compute_environment: LOCAL_MACHINE\n";
  y += "distributed_type: " + type + "\n";
  y += "num_machines: " + std::to_string(d.nodes) + "\n";
  y += "num_processes: " + std::to_string(d.tasks) + "\n";
  y += "machine_rank: " + Rendezvous(env, "XDEEP_NODE_RANK") + "\n";
  y += "main_process_ip: " + Rendezvous(env, "MASTER_ADDR") + "\n";
  y += "main_process_port: " + Rendezvous(env, "MASTER_PORT") + "\n";
  y += "mixed_precision: bf16\n";
  y += "gradient_accumulation_steps: " + std::to_string(d.grad_accumulation) + "\n";
  if (type == "FSDP") y += "fsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n";
  if (type == "DEEPSPEED") {
    y += "deepspeed_config:\n  zero_stage: " + std::to_string(d.sharding_stage) +
         "\n  gradient_accumulation_steps: " + std::to_string(d.grad_accumulation) + "\n";
  }
  if (type == "MEGATRON_LM") {
    y += "megatron_lm_config:\n  megatron_lm_tp_degree: " + std::to_string(d.tp) +
         "\n  megatron_lm_pp_degree: " + std::to_string(d.pp) +
         "\n  megatron_lm_num_micro_batches: " + std::to_string(d.grad_accumulation) +
         "\n  megatron_lm_recompute_activations: " +
         (d.recompute || d.selective_recompute ? "true" : "false") + "\n";
  }
  return y;
}

}  // namespace

const std::vector<std::string>& EmitFormats() {
  static const std::vector<std::string> formats = {"json",     "torchrun",  "deepspeed",
                                                   "megatron", "lightning", "accelerate"};
  return formats;
}

bool EmitFramework(const std::string& format, const RunDecision& d,
                   const std::function<std::string(const char*)>& env, std::string* text,
                   std::string* error) {
  if (format == "json") {
    *text = client::DecisionFileJson(d);
  } else if (format == "torchrun") {
    *text = Torchrun(d, env);
  } else if (format == "deepspeed") {
    *text = DeepSpeed(d).dump(2) + "\n";
  } else if (format == "megatron") {
    *text = Megatron(d);
  } else if (format == "lightning") {
    json doc;
    if (!Lightning(d, &doc, error)) return false;
    *text = doc.dump(2) + "\n";
  } else if (format == "accelerate") {
    *text = Accelerate(d, env);
  } else {
    *error = "unknown format '" + format +
             "'; use json, torchrun, deepspeed, megatron, lightning or accelerate";
    return false;
  }
  return true;
}

}  // namespace xdeep::cli
