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

FSDP2 (fully_shard per block, reshard_after_forward=False and
set_reshard_after_backward(False): parameters stay gathered for the whole
step, as Meta ran them; bf16 parameters, fp32 reduce_dtype) on
Llama-shaped blocks, m micro-batches per step:

  compute    no reduction at all (set_requires_gradient_sync(False) on every
             micro-batch, the last one's gradients simply not reduced)
  backward   one micro-batch's backward alone, timed after its forward
  per_step   whole gradients accumulated, one reduce-scatter after the last
             micro-batch (the pick's way)
  per_mb     a reduce-scatter after every micro-batch (Meta's layout)
  rs_alone   one reduce-scatter of the same fp32 gradients, nothing beside it
  rs_units   FSDP2's pieces alone: one reduce-scatter per block, back to back
  rs_beside  rs_alone again while the compute stream runs matmuls, and those
             matmuls' time with and without it (the two sides' slowdown)

and prints, per micro-batch, what per_mb costs beyond compute against:
hidden (0); the tuner's bucket rule, max(last 25 MB bucket, rs - backward);
FSDP2's order, max(one block's rs, rs - backward + the last block's
backward) -- FSDP2 (_fsdp_param_group.py, post_backward / foreach_reduce)
reduce-scatters a block only after its backward, one at a time on one
stream, so the last block's backward, the first one run, hides nothing;
that order with the reduce-scatter at its pace beside the matmuls while the
backward lasts; and fully exposed (rs).

The first run (17:14 UTC, 2x H100, bench/scale/data/
2026-11-27_h100x2_grad_sync_overlap.json) had two faults: it counted the
parameters after fully_shard, whose DTensor parameters report the global
numel, and multiplied by the world again, so its reduce_scatter_alone_s
reduced world x the gradients; and FSDP2 resharded after every backward, so
each micro-batch's forward all-gathered the parameters again and "compute"
(from which it took the backward as two thirds) was mostly those gathers.
The second run (2x H200, 17:52 UTC, bench/scale/data/
2026-11-27_h200x2_grad_sync_overlap.json) had the first fault mended, not
the second. This version mends both and times the backward (run 3: 2x
H200, 18:11 UTC, BATCH=4, bench/scale/data/
2026-11-27_h200x2_grad_sync_overlap_batch4.json). BATCH
sequences a micro-batch lengthen the backward against the same
reduce-scatter: at BATCH=1 the reduce-scatter on the network path is ~10x
the backward and every reading but "hidden" is within a backward of it;
BATCH=4 brings the two within ~2x, where the readings part.

Command (2 GPUs of one host, ~50 s; DEADLINE_S stops it between phases;
NCCL's log names the network it took):
  OUT=$OUT MICRO_BATCHES=4 STEPS=3 BATCH=4 NCCL_P2P_DISABLE=1 \\
    NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET timeout 100 \\
    torchrun --nproc-per-node 2 bench/scale/grad_sync_overlap.py \\
    > $OUT/log.txt 2>&1; tail -c 4000 $OUT/log.txt
Knobs (environment): HIDDEN (4096), FFN (14336), BLOCKS (4), SEQ (8192),
BATCH (1), MICRO_BATCHES (8), STEPS (5), the first step is warm-up;
DEADLINE_S (80).
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


class Deadline:
    """Stops the run between phases once DEADLINE_S seconds have passed."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.limit = float(os.environ.get("DEADLINE_S", 80))

    def check(self, phase):
        spent = time.perf_counter() - self.t0
        if spent > self.limit:
            raise SystemExit(
                f"grad_sync_overlap: {spent:.0f} s spent before {phase}, over DEADLINE_S="
                f"{self.limit:.0f}; lower STEPS or MICRO_BATCHES, or raise DEADLINE_S"
            )


def median_s(fn, steps, after=None):
    """Median wall time of fn() after one warm-up call, GPU work included;
    after() runs outside the timed region."""
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if after is not None:
            after()
    return sorted(times[1:])[len(times[1:]) // 2]


def beside_matmuls(collective, hidden, matmuls):
    """The collective on a side stream while the compute stream multiplies.

    Returns (collective's time, the matmuls' time); both streams start
    together, and the matmuls outlast the collective."""
    a = torch.randn(hidden * 2, hidden * 2, device="cuda", dtype=torch.bfloat16)
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    torch.cuda.synchronize()
    dist.barrier()
    events[0].record(main)
    for _ in range(matmuls):
        a @ a
    events[1].record(main)
    if collective is not None:
        with torch.cuda.stream(side):
            events[2].record(side)
            collective()
            events[3].record(side)
    torch.cuda.synchronize()
    rs = events[2].elapsed_time(events[3]) / 1e3 if collective is not None else 0.0
    return rs, events[0].elapsed_time(events[1]) / 1e3


def main():
    deadline = Deadline()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    hidden, ffn = env_int("HIDDEN", 4096), env_int("FFN", 14336)
    blocks, seq = env_int("BLOCKS", 4), env_int("SEQ", 8192)
    batch = env_int("BATCH", 1)
    m, steps = env_int("MICRO_BATCHES", 8), env_int("STEPS", 5) + 1
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(hidden, ffn, hidden // 128) for _ in range(blocks)]).cuda()
    # Counted before fully_shard: its DTensor parameters report the global numel.
    params = sum(p.numel() for p in model.parameters())
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model:
        fully_shard(block, mp_policy=policy, reshard_after_forward=False)
    fully_shard(model, mp_policy=policy, reshard_after_forward=False)
    # FSDP2 reshards after every backward by default, so each micro-batch's
    # forward would all-gather the parameters again (the first version did:
    # its "compute" was mostly those gathers). ZeRO-2 keeps them gathered.
    model.set_reshard_after_backward(False)
    x = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step(sync_on):
        def run():
            for i in range(m):
                model.set_requires_gradient_sync(sync_on(i))
                model(x).float().pow(2).mean().backward()

        return run

    def clear():
        model.zero_grad(set_to_none=True)

    deadline.check("compute")
    compute = median_s(step(lambda i: False), steps, clear)
    # The backward on its own: forward, wait, then backward timed, no reduction.
    model.set_requires_gradient_sync(False)
    backward_times = []
    for _ in range(max(3, m)):
        loss = model(x).float().pow(2).mean()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss.backward()
        torch.cuda.synchronize()
        backward_times.append(time.perf_counter() - t0)
    backward = sorted(backward_times[1:])[len(backward_times[1:]) // 2]
    clear()
    deadline.check("per_step")
    per_step = median_s(step(lambda i: i == m - 1), steps, clear)
    deadline.check("per_mb")
    per_mb = median_s(step(lambda i: True), steps, clear)
    del model
    torch.cuda.empty_cache()

    # The fp32 gradients FSDP2 reduce-scatters: whole, and one block's at a time.
    shard_numel = -(-params // world)
    full = torch.empty(shard_numel * world, device="cuda", dtype=torch.float32)
    shard = torch.empty(shard_numel, device="cuda", dtype=torch.float32)
    unit_shard = -(-params // (blocks * world))
    unit_full = torch.empty(unit_shard * world, device="cuda", dtype=torch.float32)
    unit_out = torch.empty(unit_shard, device="cuda", dtype=torch.float32)
    deadline.check("rs_alone")
    rs_alone = median_s(lambda: dist.reduce_scatter_tensor(shard, full), steps)
    deadline.check("rs_units")
    rs_units = median_s(
        lambda: [dist.reduce_scatter_tensor(unit_out, unit_full) for _ in range(blocks)], steps
    )
    # Enough matmuls to outlast the reduce-scatter alone twice over.
    deadline.check("rs_beside")
    beside_matmuls(None, hidden, 10)  # cuBLAS warm-up
    _, ten = beside_matmuls(None, hidden, 10)
    matmuls = max(10, int(2 * rs_alone / max(ten / 10, 1e-6)))
    beside = [beside_matmuls(lambda: dist.reduce_scatter_tensor(shard, full), hidden, matmuls)
              for _ in range(3)]
    alone = [beside_matmuls(None, hidden, matmuls)[1] for _ in range(3)]
    rs_beside = sorted(b[0] for b in beside)[1]
    matmul_beside = sorted(b[1] for b in beside)[1]
    matmul_alone = sorted(alone)[1]

    cost = (per_mb - compute) / m
    last_block_backward = backward / blocks
    overlap = backward - last_block_backward
    # Beside the backward the reduce-scatter runs at rs_beside's pace; what
    # is left when the backward ends runs at rs_alone's.
    left = max(0.0, 1 - overlap / rs_beside) if rs_beside > 0 else 1.0
    readings = {
        "hidden": 0.0,
        "bucket_rule": max(rs_alone * 25 * 2**20 / (4 * params), rs_alone - backward),
        "fsdp2_order": max(rs_alone / blocks, rs_alone - overlap),
        "fsdp2_order_slowed": max(rs_alone / blocks, rs_alone * left),
        "exposed": rs_alone,
    }
    result = {
        "world": world,
        "hidden": hidden,
        "ffn": ffn,
        "blocks": blocks,
        "seq": seq,
        "batch": batch,
        "reshard_after_backward": False,
        "micro_batches": m,
        "steps_timed": steps - 1,
        "gradient_params": params,
        "gradient_bytes_fp32": 4 * params,
        "nccl_p2p_disable": os.environ.get("NCCL_P2P_DISABLE", ""),
        "nccl_shm_disable": os.environ.get("NCCL_SHM_DISABLE", ""),
        "nccl_ib_disable": os.environ.get("NCCL_IB_DISABLE", ""),
        "torch": torch.__version__,
        "nccl": str(torch.cuda.nccl.version()),
        "device": torch.cuda.get_device_name(),
        "step_s": {"compute": compute, "per_step": per_step, "per_mb": per_mb},
        "reduce_scatter_alone_s": rs_alone,
        "reduce_scatter_by_block_alone_s": rs_units,
        "reduce_scatter_beside_matmuls_s": rs_beside,
        "matmuls": matmuls,
        "matmuls_alone_s": matmul_alone,
        "matmuls_beside_reduce_scatter_s": matmul_beside,
        "backward_per_micro_batch_s": backward,
        "backward_measured": True,
        "per_step_cost_s": per_step - compute,
        "per_mb_cost_per_micro_batch_s": cost,
        "readings_per_micro_batch_s": readings,
        "nearest": min(readings, key=lambda k: abs(readings[k] - cost)),
        "seconds": time.perf_counter() - deadline.t0,
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
