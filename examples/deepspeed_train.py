#!/usr/bin/env python3
"""DeepSpeed with the configuration xdeep generated (xdeep.deepspeed_config():
micro-batch, accumulation, global batch, ZeRO stage, bf16):

    srun --xdeep-tune --xdeep-workload=w.toml python3 examples/deepspeed_train.py

DeepSpeed's engine checks train_batch_size = micro x accumulation x data
parallel size itself. Where deepspeed is not installed (this repository's
test machines), the same loop runs under torch DDP and the script checks the
generated config against the decision and the world it runs in, so the
hand-off (ranks, batch numbers, ZeRO stage) is still verified end to end."""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import xdeep
from handoff_check import check_world, fail, record


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    d = xdeep.decision()
    config = xdeep.deepspeed_config(d)
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
    try:
        import deepspeed
        engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=config)
        impl = "deepspeed"
        accumulation = engine.gradient_accumulation_steps()
    except ImportError:
        from torch.nn.parallel import DistributedDataParallel as DDP
        engine = DDP(model, device_ids=[groups.local_rank] if cuda else None)
        optimizer = torch.optim.AdamW(engine.parameters(), lr=1e-3)
        impl = "torch-ddp (deepspeed not installed)"
        accumulation = config["gradient_accumulation_steps"]
    if accumulation != d.grad_accumulation:
        fail(f"engine accumulates {accumulation}, decision {d.grad_accumulation}")
    micro = config["train_micro_batch_size_per_gpu"]
    for _ in range(args.steps):
        start = time.perf_counter()
        for _ in range(accumulation):
            x = torch.randn(micro, 32, device=device)
            loss = engine(x).pow(2).mean()
            if impl == "deepspeed":
                engine.backward(loss)
                engine.step()  # DeepSpeed steps the optimizer at the accumulation boundary
            else:
                (loss / accumulation).backward()
        if impl != "deepspeed":
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        xdeep.report_step(time.perf_counter() - start)
    record(d, "deepspeed", impl=impl, zero_stage=config["zero_optimization"]["stage"],
           train_batch_size=config["train_batch_size"], steps=args.steps)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
