"""The decision as each framework takes it. The same text as the C++
`xdeep plan --emit` / `xdeep emit` (daemon/cli/framework_config.cc); a test
keeps the two equal."""
import json
import os

from .decision import decision as read_decision

FORMATS = ("json", "torchrun", "deepspeed", "megatron", "lightning", "accelerate")


def _rendezvous(env, name):
    value = (env or {}).get(name, "")
    return value if value else "${%s}" % name


def torchrun_args(d=None, env=None):
    """torchrun's arguments for this node: --nnodes, --nproc_per_node,
    --node-rank, --master-addr, --master-port."""
    d = d or read_decision()
    env = os.environ if env is None else env
    return ["--nnodes=%d" % d.nodes, "--nproc_per_node=%d" % d.gpus_per_node,
            "--node_rank=" + _rendezvous(env, "XDEEP_NODE_RANK"),
            "--master_addr=" + _rendezvous(env, "MASTER_ADDR"),
            "--master_port=" + _rendezvous(env, "MASTER_PORT")]


def deepspeed_config(d=None):
    """A DeepSpeed config dict: batch sizes, accumulation, ZeRO stage, bf16."""
    d = d or read_decision()
    config = {
        "train_batch_size": d.global_batch,
        "train_micro_batch_size_per_gpu": d.micro_batch,
        "gradient_accumulation_steps": d.grad_accumulation,
        "zero_optimization": {"stage": d.sharding_stage},
        "bf16": {"enabled": True},
    }
    if d.recompute:
        config["activation_checkpointing"] = {"partition_activations": d.tp > 1,
                                              "contiguous_memory_optimization": False}
    return config


def megatron_args(d=None):
    """Megatron-LM command-line arguments for the decided layout and batch."""
    d = d or read_decision()
    args = ["--tensor-model-parallel-size", str(d.tp), "--pipeline-model-parallel-size", str(d.pp),
            "--context-parallel-size", str(d.cp), "--micro-batch-size", str(d.micro_batch),
            "--global-batch-size", str(d.global_batch)]
    if d.pp > 1 and d.virtual_stages > 1:
        args += ["--num-virtual-stages-per-pipeline-rank", str(d.virtual_stages)]
    if d.sequence_parallel:
        args.append("--sequence-parallel")
    if d.sharding_stage >= 1:
        args.append("--use-distributed-optimizer")
    if d.recompute:
        args += ["--recompute-granularity", "full", "--recompute-method", "uniform"]
    elif d.selective_recompute:
        args += ["--recompute-granularity", "selective"]
    return args + ["--bf16"]


def megatron_core_kwargs(d=None):
    """Keyword arguments of megatron.core.parallel_state.initialize_model_parallel."""
    d = d or read_decision()
    kwargs = {"tensor_model_parallel_size": d.tp, "pipeline_model_parallel_size": d.pp,
              "context_parallel_size": d.cp}
    if d.pp > 1 and d.virtual_stages > 1:
        kwargs["virtual_pipeline_model_parallel_size"] = d.virtual_stages
    return kwargs


def lightning_settings(d=None):
    """Lightning Trainer keyword arguments and the DataLoader's batch size."""
    d = d or read_decision()
    if d.pp > 1:
        raise ValueError(f"Lightning has no pipeline parallelism and this decision needs "
                         f"pp={d.pp}; emit megatron or deepspeed, or limit the workload with "
                         "[parallel] max_pp = 1")
    trainer = {"num_nodes": d.nodes, "devices": d.gpus_per_node,
               "accumulate_grad_batches": d.grad_accumulation, "precision": "bf16-mixed"}
    if d.tp > 1:
        trainer["strategy"] = {"name": "model_parallel", "data_parallel_size": d.dp,
                               "tensor_parallel_size": d.tp}
    elif d.sharding_stage == 3:
        trainer["strategy"] = "fsdp"
    elif d.sharding_stage > 0:
        trainer["strategy"] = "deepspeed_stage_%d" % d.sharding_stage
    else:
        trainer["strategy"] = "ddp"
    return {"trainer": trainer, "dataloader": {"batch_size": d.micro_batch}}


def accelerate_config(d=None, env=None):
    """An Accelerate config file (YAML text) for this node."""
    d = d or read_decision()
    env = os.environ if env is None else env
    kind = "MULTI_GPU"
    if d.tp > 1 or d.pp > 1:
        kind = "MEGATRON_LM"
    elif d.sharding_stage == 3:
        kind = "FSDP"
    elif d.sharding_stage > 0:
        kind = "DEEPSPEED"
    y = ["compute_environment: LOCAL_MACHINE", "distributed_type: " + kind,
         "num_machines: %d" % d.nodes, "num_processes: %d" % d.ranks,
         "machine_rank: " + _rendezvous(env, "XDEEP_NODE_RANK"),
         "main_process_ip: " + _rendezvous(env, "MASTER_ADDR"),
         "main_process_port: " + _rendezvous(env, "MASTER_PORT"),
         "mixed_precision: bf16", "gradient_accumulation_steps: %d" % d.grad_accumulation]
    if kind == "FSDP":
        y += ["fsdp_config:", "  fsdp_sharding_strategy: FULL_SHARD"]
    if kind == "DEEPSPEED":
        y += ["deepspeed_config:", "  zero_stage: %d" % d.sharding_stage,
              "  gradient_accumulation_steps: %d" % d.grad_accumulation]
    if kind == "MEGATRON_LM":
        y += ["megatron_lm_config:", "  megatron_lm_tp_degree: %d" % d.tp,
              "  megatron_lm_pp_degree: %d" % d.pp,
              "  megatron_lm_num_micro_batches: %d" % d.grad_accumulation,
              "  megatron_lm_recompute_activations: "
              + ("true" if d.recompute or d.selective_recompute else "false")]
    return "\n".join(y) + "\n"


def decision_json(d):
    return {
        "schema": "xdeep.decision/1", "decision_id": d.decision_id, "workload": d.workload,
        "launcher": d.launcher,
        "layout": {"nodes": d.nodes, "gpus_per_node": d.gpus_per_node, "ranks": d.ranks,
                   "tasks_per_node": 1 if d.per_node_launcher else d.gpus_per_node},
        "parallel": {"strategy": d.strategy, "dp": d.dp, "tp": d.tp, "pp": d.pp, "cp": d.cp,
                     "sequence_parallel": d.sequence_parallel,
                     "sharding_stage": d.sharding_stage,
                     "pipeline_schedule": d.pipeline_schedule,
                     "virtual_stages": d.virtual_stages, "rank_order": d.rank_order},
        "batch": {"micro_batch": d.micro_batch, "grad_accumulation": d.grad_accumulation,
                  "global_batch": d.global_batch},
        "recompute": d.recompute, "selective_recompute": d.selective_recompute,
        "predicted": d.predicted,
        "time": {"limit_s": d.time_limit_s, "segments": d.segments},
    }


def emit(fmt, d=None, env=None):
    """The text `xdeep emit FMT` prints."""
    d = d or read_decision()
    if fmt == "json":
        return json.dumps(decision_json(d), indent=2, sort_keys=True) + "\n"
    if fmt == "torchrun":
        return " ".join(torchrun_args(d, env)) + "\n"
    if fmt == "deepspeed":
        return json.dumps(deepspeed_config(d), indent=2, sort_keys=True) + "\n"
    if fmt == "megatron":
        return " ".join(megatron_args(d)) + "\n"
    if fmt == "lightning":
        return json.dumps(lightning_settings(d), indent=2, sort_keys=True) + "\n"
    if fmt == "accelerate":
        return accelerate_config(d, env)
    raise ValueError(f"unknown format {fmt!r}; use {', '.join(FORMATS)}")
