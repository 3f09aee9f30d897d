#!/usr/bin/env python3
"""DeepSpeed with the configuration xdeep generated (xdeep.deepspeed_config():
micro-batch, accumulation, global batch, ZeRO stage, bf16):

    srun --xdeep-tune --xdeep-workload=w.toml python3 examples/deepspeed_train.py
    srun --xdeep-tune --xdeep-launcher=deepspeed ... \\
        sh -c 'deepspeed --no_ssh ... examples/deepspeed_train.py'

With DeepSpeed importable, its engine takes the generated config unchanged
(plus torch's AdamW as the optimizer, so no DeepSpeed op is compiled), and
every rank checks what the engine made of it against the decision: ZeRO
stage and optimizer wrapper, micro-batch, accumulation, global batch, data
parallel size and group members, optimizer steps taken, and identical
weights on every rank afterwards. Where deepspeed is not installed (this
repository's test machines) the same loop runs under torch DDP and the script
checks the generated config against the decision and the world it runs in;
XDEEP_REQUIRE_ENGINE=1 makes that a failure instead."""
import argparse
import importlib.util
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import xdeep
from handoff_check import check_world, fail, record


def load_deepspeed():
    """deepspeed, or None when it is not installed. An installed DeepSpeed
    that fails to import is an error, not a reason to fall back."""
    if importlib.util.find_spec("deepspeed") is None:
        if os.environ.get("XDEEP_REQUIRE_ENGINE") == "1":
            fail("XDEEP_REQUIRE_ENGINE=1 but deepspeed is not importable (PYTHONPATH?)")
        return None
    import deepspeed
    return deepspeed


def check_engine(engine, d, groups, dp):
    """What DeepSpeed's engine made of the generated config is the decision."""
    got = {"zero_stage": engine.zero_optimization_stage(),
           "micro_batch": engine.train_micro_batch_size_per_gpu(),
           "grad_accumulation": engine.gradient_accumulation_steps(),
           "global_batch": engine.train_batch_size(), "dp": engine.dp_world_size}
    want = {"zero_stage": d.sharding_stage, "micro_batch": d.micro_batch,
            "grad_accumulation": d.grad_accumulation, "global_batch": d.global_batch, "dp": dp}
    if got != want:
        fail(f"DeepSpeed's engine runs {got}, the decision is {want}")
    dp_ranks = dist.get_process_group_ranks(engine.data_parallel_group)
    if sorted(dp_ranks) != sorted(groups.members["dp"]):
        fail(f"DeepSpeed's data-parallel group {dp_ranks}, xdeep's {groups.members['dp']}")
    wrapper = type(engine.optimizer).__name__
    if d.sharding_stage > 0:
        # DeepSpeedZeroOptimizer (stages 1, 2), _Stage3, or BF16_Optimizer (ZeRO-1 with
        # bf16 and fp32 accumulation): all ZeROOptimizer, sharding over the dp ranks.
        from deepspeed.runtime.base_optimizer import ZeROOptimizer
        shards = getattr(engine.optimizer, "partition_count", None)
        shards = set(shards) if isinstance(shards, list) else {shards}
        if not isinstance(engine.optimizer, ZeROOptimizer) or shards != {dp}:
            fail(f"ZeRO stage {d.sharding_stage} decided, but the optimizer is a {wrapper} "
                 f"sharding over {shards}, not over the {dp} data-parallel ranks")
    return wrapper, dp_ranks


def weights_checksum(deepspeed, engine, stage):
    """The sum of the full weights (gathered from their shards under ZeRO-3)."""
    params = list(engine.module.parameters())
    if stage == 3:
        with deepspeed.zero.GatheredParameters(params):
            return sum(p.detach().double().sum().item() for p in params)
    return sum(p.detach().double().sum().item() for p in params)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--local_rank", type=int,
                        help="passed by DeepSpeed's launcher; LOCAL_RANK says the same")
    args = parser.parse_args()

    d = xdeep.decision()
    config = xdeep.deepspeed_config(d)
    deepspeed = load_deepspeed()
    groups = xdeep.init_distributed(timeout=120)
    check_world(d, dist.get_world_size(), dist.get_rank())
    dp = dist.get_world_size() // (d.tp * d.pp * d.cp)
    if config["train_batch_size"] != (config["train_micro_batch_size_per_gpu"] *
                                      config["gradient_accumulation_steps"] * dp):
        fail(f"DeepSpeed would refuse {config}: batch != micro x accumulation x dp {dp}")
    torch.manual_seed(0)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", groups.local_rank) if cuda else torch.device("cpu")
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    extra = {}
    if deepspeed is not None:
        engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer,
                                                       config=config)
        impl = "deepspeed " + deepspeed.__version__
        extra["optimizer_wrapper"], extra["dp_group"] = check_engine(engine, d, groups, dp)
        accumulation = engine.gradient_accumulation_steps()
        dtype = torch.bfloat16 if engine.bfloat16_enabled() else torch.float32
    else:
        from torch.nn.parallel import DistributedDataParallel as DDP
        engine = DDP(model, device_ids=[groups.local_rank] if cuda else None)
        optimizer = torch.optim.AdamW(engine.parameters(), lr=1e-3)
        impl = "torch-ddp (deepspeed not installed)"
        accumulation = config["gradient_accumulation_steps"]
        dtype = torch.float32
    if accumulation != d.grad_accumulation:
        fail(f"engine accumulates {accumulation}, decision {d.grad_accumulation}")
    micro = config["train_micro_batch_size_per_gpu"]
    torch.manual_seed(1 + dist.get_rank())  # each data-parallel rank its own samples
    for _ in range(args.steps):
        start = time.perf_counter()
        for _ in range(accumulation):
            x = torch.randn(micro, 32, device=device, dtype=dtype)
            loss = engine(x).float().pow(2).mean()
            if deepspeed is not None:
                engine.backward(loss)
                engine.step()  # DeepSpeed steps the optimizer at the accumulation boundary
            else:
                (loss / accumulation).backward()
        if deepspeed is None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        xdeep.report_step(time.perf_counter() - start)
    if deepspeed is not None:
        if (engine.global_steps, engine.micro_steps) != (args.steps, args.steps * accumulation):
            fail(f"DeepSpeed took {engine.global_steps} optimizer steps over {engine.micro_steps} "
                 f"micro-batches; {args.steps} over {args.steps * accumulation} expected")
        total = weights_checksum(deepspeed, engine, d.sharding_stage)
        sums = [None] * dist.get_world_size()
        dist.all_gather_object(sums, total)
        if len(set(sums)) != 1:
            fail(f"ranks hold different weights after {args.steps} steps: {sums}")
        extra.update(optimizer_steps=engine.global_steps, micro_steps=engine.micro_steps,
                     weights_checksum=total)
    record(d, "deepspeed", impl=impl, zero_stage=config["zero_optimization"]["stage"],
           train_batch_size=config["train_batch_size"], steps=args.steps, device=str(device),
           **extra)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
