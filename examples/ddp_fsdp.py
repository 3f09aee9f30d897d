#!/usr/bin/env python3
"""Data-parallel training as xdeep decided it: DDP, or FSDP where the
decision shards everything (ZeRO-3). The same script runs under a tuned srun
(one task per GPU) and under torchrun (--xdeep-launcher=torchrun, one task
per node):

    srun --xdeep-tune --xdeep-workload=w.toml python3 examples/ddp_fsdp.py
    srun --xdeep-tune --xdeep-launcher=torchrun --xdeep-workload=w.toml \\
        torchrun examples/ddp_fsdp.py      # the plugin sets torchrun's PET_* options

Every optimizer step runs `grad_accumulation` micro-batches of `micro_batch`
samples on each rank; an all-reduce checks that the world processed exactly
the decided global batch. Step times go to the daemon via xdeep.report_step.
Without GPUs it trains on the CPU with gloo (FSDP needs CUDA here)."""
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import xdeep
from handoff_check import check_world, fail, record


def wrap(model, d, device):
    if d.sharding_stage == 3 and device.type == "cuda":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        return FSDP(model, device_id=device), "fsdp"
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(model, device_ids=[device.index] if device.type == "cuda" else None), "ddp"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()

    d = xdeep.decision()
    groups = xdeep.init_distributed(timeout=120)
    check_world(d, dist.get_world_size(), dist.get_rank())
    if d.tp * d.pp * d.cp != 1:
        fail(f"this script is data-parallel only; the decision is {d.strategy} "
             "(declare [parallel] strategies = [\"dp\", \"fsdp\"] in the workload)")
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", groups.local_rank) if cuda else torch.device("cpu")
    torch.manual_seed(0)
    model, impl = wrap(nn.Sequential(nn.Linear(args.width, args.width), nn.GELU(),
                                     nn.Linear(args.width, 1)).to(device), d, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    samples = torch.zeros(1, device=device)
    for _ in range(args.steps):
        start = time.perf_counter()
        samples.zero_()
        for micro in range(d.grad_accumulation):
            x = torch.randn(d.micro_batch, args.width, device=device)
            loss = model(x).pow(2).mean() / d.grad_accumulation
            if micro < d.grad_accumulation - 1 and impl == "ddp":
                with model.no_sync():
                    loss.backward()
            else:
                loss.backward()
            samples += x.shape[0]
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        dist.all_reduce(samples)
        if int(samples.item()) != d.global_batch:
            fail(f"one step processed {int(samples.item())} samples, decision {d.global_batch}")
        if cuda:
            torch.cuda.synchronize()
        xdeep.report_step(time.perf_counter() - start)
    record(d, "ddp_fsdp", impl=impl, steps=args.steps, samples_per_step=int(samples.item()),
           dp_group=groups.members["dp"])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
