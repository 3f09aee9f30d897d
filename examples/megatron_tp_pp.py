#!/usr/bin/env python3
"""Tensor and pipeline parallelism as xdeep decided them, megatron-core style:

    srun --xdeep-tune --xdeep-workload=workloads/tp-pp.toml python3 examples/megatron_tp_pp.py

With megatron-core installed, parallel_state is initialised from
xdeep.megatron_core_kwargs() and its groups are checked against xdeep's
(both use the rank order tp-cp-dp-pp). Either way the script then runs the
decided pipeline on the groups xdeep.init_distributed() made: each pipeline
stage holds one MLP block split Megatron's way over its tensor-parallel group
(column-parallel W1, row-parallel W2, one all-reduce), activations go from
stage to stage with send / recv, `grad_accumulation` micro-batches of
`micro_batch` samples per step. The last stage compares every output with
the unsplit model computed locally: wrong groups or peers give wrong numbers."""
import argparse
import time

import torch
import torch.distributed as dist

import xdeep
from handoff_check import check_world, fail, record

HIDDEN = 16


def stage_weights(stage):
    g = torch.Generator().manual_seed(1000 + stage)
    return (torch.randn(HIDDEN, 4 * HIDDEN, generator=g) / HIDDEN ** 0.5,
            torch.randn(4 * HIDDEN, HIDDEN, generator=g) / (4 * HIDDEN) ** 0.5)


def reference(x, stages):
    for s in range(stages):
        w1, w2 = stage_weights(s)
        x = x + torch.relu(x @ w1) @ w2
    return x


def check_megatron_core(d, groups):
    try:
        from megatron.core import parallel_state as ps
    except ImportError:
        return "not installed"
    ps.initialize_model_parallel(**xdeep.megatron_core_kwargs(d))
    got = (ps.get_tensor_model_parallel_rank(), ps.get_pipeline_model_parallel_rank(),
           ps.get_data_parallel_rank())
    want = (groups.coords.tp, groups.coords.pp, groups.coords.dp)
    if got != want:
        fail(f"megatron-core puts this rank at tp/pp/dp {got}, xdeep at {want}")
    return "groups agree"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()

    d = xdeep.decision()
    groups = xdeep.init_distributed(timeout=120)
    rank = dist.get_rank()
    check_world(d, dist.get_world_size(), rank)
    core = check_megatron_core(d, groups)
    c = groups.coords
    device = (torch.device("cuda", groups.local_rank) if torch.cuda.is_available()
              else torch.device("cpu"))
    w1, w2 = stage_weights(c.pp)
    cols = 4 * HIDDEN // d.tp
    if (4 * HIDDEN) % d.tp:
        fail(f"tp={d.tp} does not divide the example's {4 * HIDDEN} columns")
    w1 = w1[:, c.tp * cols:(c.tp + 1) * cols].contiguous().to(device)  # column-parallel
    w2 = w2[c.tp * cols:(c.tp + 1) * cols, :].contiguous().to(device)  # row-parallel
    pp_ranks = groups.members["pp"]
    checked = 0
    for step in range(args.steps):
        start = time.perf_counter()
        for micro in range(d.grad_accumulation):
            g = torch.Generator().manual_seed(step * 10007 + micro * 101 + c.dp)
            x0 = torch.randn(d.micro_batch, HIDDEN, generator=g)
            if c.pp == 0:
                x = x0.to(device)
            else:
                x = torch.empty(d.micro_batch, HIDDEN, device=device)
                dist.recv(x, src=pp_ranks[c.pp - 1])
            partial = torch.relu(x @ w1) @ w2
            dist.all_reduce(partial, group=groups.groups["tp"])
            x = x + partial
            if c.pp < d.pp - 1:
                dist.send(x, dst=pp_ranks[c.pp + 1])
            elif not torch.allclose(x.cpu(), reference(x0, d.pp), atol=1e-4):
                fail(f"pipeline output differs from the unsplit model by "
                     f"{(x.cpu() - reference(x0, d.pp)).abs().max().item():.3g}")
            else:
                checked += 1
        xdeep.report_step(time.perf_counter() - start)
    dist.barrier()
    record(d, "megatron_tp_pp", megatron_core=core, tp=d.tp, pp=d.pp, dp=d.dp,
           coords=[c.tp, c.dp, c.pp], tp_group=groups.members["tp"], pp_group=pp_ranks,
           outputs_checked=checked, device=str(device))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
