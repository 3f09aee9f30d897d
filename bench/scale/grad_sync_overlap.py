#!/usr/bin/env python3
"""Does a per-micro-batch fp32 reduce-scatter hide behind the backward it follows?

The tuner charges ZeRO-2 / FSDP with sharded gradients one reduce-scatter of
the rank's gradients after every micro-batch, overlapped with that
micro-batch's backward: what outlasts the backward waits (at least the last
bucket). Llama 3's published 8K layout pays 277 ms of fp32 reduce-scatter
beside a 166 ms backward per micro-batch in the model, and the tuner's own
pick avoids it by keeping whole gradients and reducing once per step -- the
whole of the pick's predicted +25-30 % (bench/scale/README.md, "The tuner's
own pick"). This script measures the rule on two GPUs of one host, with
NCCL forced onto its network path so that the reduce-scatter is as slow
relative to the backward as across Meta's nodes (NCCL_P2P_DISABLE=1,
NCCL_SHM_DISABLE=1; NCCL_IB_DISABLE=1 for sockets where there is no NIC).

FSDP2 (fully_shard per block, reshard_after_forward=False: parameters stay
gathered between forward and backward, as Meta ran them; bf16 parameters,
fp32 reduce_dtype) on Llama-shaped blocks, m micro-batches per step:

  compute    no reduction at all (set_requires_gradient_sync(False) on every
             micro-batch, the last one's gradients simply not reduced)
  per_step   whole gradients accumulated, one reduce-scatter after the last
             micro-batch (the pick's way)
  per_mb     a reduce-scatter after every micro-batch (Meta's layout)
  rs_alone   one reduce-scatter of the same fp32 bytes, nothing beside it

and prints, per micro-batch, what per_mb costs beyond compute against three
readings: hidden (0), the tuner's rule max(last bucket, rs - backward) and
fully exposed (rs). The rule stands if the measured cost is nearer it than
either end; the pick's advantage is as large as the model says only if
per_mb - compute is near rs - backward.

Run on a machine with 2 GPUs of one host (not run yet; no device time):
  OUT=$OUT NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \\
    torchrun --nproc-per-node 2 bench/scale/grad_sync_overlap.py
Knobs (environment): HIDDEN (4096), FFN (14336), BLOCKS (4), SEQ (8192),
MICRO_BATCHES (8), STEPS (5), the first step is warm-up.
"""

import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


class Block(torch.nn.Module):
    """A Llama block's matmuls and norms; sdpa attention (grouped keys off)."""

    def __init__(self, hidden, ffn, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)
        self.norm2 = torch.nn.RMSNorm(hidden)
        self.gate_up = torch.nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, h // self.heads).unbind(2)
        a = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.out(a.transpose(1, 2).reshape(b, s, h))
        g, u = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


def env_int(name, default):
    return int(os.environ.get(name, default))


def timed_steps(model, x, micro_batches, steps, sync_on):
    """Median step time; sync_on(i) says whether micro-batch i reduces."""
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for i in range(micro_batches):
            model.set_requires_gradient_sync(sync_on(i))
            model(x).float().pow(2).mean().backward()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        model.zero_grad(set_to_none=True)
    return sorted(times[1:])[len(times[1:]) // 2]


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    hidden, ffn = env_int("HIDDEN", 4096), env_int("FFN", 14336)
    blocks, seq = env_int("BLOCKS", 4), env_int("SEQ", 8192)
    m, steps = env_int("MICRO_BATCHES", 8), env_int("STEPS", 5) + 1
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(hidden, ffn, hidden // 128) for _ in range(blocks)]).cuda()
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model:
        fully_shard(block, mp_policy=policy, reshard_after_forward=False)
    fully_shard(model, mp_policy=policy, reshard_after_forward=False)
    x = torch.randn(1, seq, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    compute = timed_steps(model, x, m, steps, lambda i: False)
    per_step = timed_steps(model, x, m, steps, lambda i: i == m - 1)
    per_mb = timed_steps(model, x, m, steps, lambda i: True)

    params = sum(p.numel() for p in model.parameters()) * world  # unsharded
    full = torch.empty(params, device="cuda", dtype=torch.float32)
    shard = torch.empty(params // world, device="cuda", dtype=torch.float32)
    rs = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dist.reduce_scatter_tensor(shard, full)
        torch.cuda.synchronize()
        rs.append(time.perf_counter() - t0)
    rs_alone = sorted(rs[1:])[len(rs[1:]) // 2]
    last_bucket = rs_alone / blocks  # one block's unit, FSDP's last reduce-scatter

    # A backward is about two thirds of a micro-batch's compute.
    backward = 2 / 3 * compute / m
    cost = (per_mb - compute) / m
    readings = {
        "hidden": 0.0,
        "rule": max(last_bucket, rs_alone - backward),
        "exposed": rs_alone,
    }
    result = {
        "world": world,
        "hidden": hidden,
        "ffn": ffn,
        "blocks": blocks,
        "seq": seq,
        "micro_batches": m,
        "nccl_p2p_disable": os.environ.get("NCCL_P2P_DISABLE", ""),
        "nccl_shm_disable": os.environ.get("NCCL_SHM_DISABLE", ""),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "step_s": {"compute": compute, "per_step": per_step, "per_mb": per_mb},
        "reduce_scatter_alone_s": rs_alone,
        "backward_per_micro_batch_s": backward,
        "per_mb_cost_per_micro_batch_s": cost,
        "readings_per_micro_batch_s": readings,
        "nearest": min(readings, key=lambda k: abs(readings[k] - cost)),
    }
    if rank == 0:
        print(json.dumps(result, indent=1))
        out = os.environ.get("OUT")
        if out:
            with open(os.path.join(out, "grad_sync_overlap.json"), "w") as f:
                json.dump(result, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
