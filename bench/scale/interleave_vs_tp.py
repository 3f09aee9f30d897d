#!/usr/bin/env python3
"""Tensor parallelism against interleaved pipeline parallelism on two GPUs: the
trade behind the tuner's picks for Korthikanti et al.'s 22B rows (bench/scale/
README.md, "Session 21 (h25e)").

For GPT 22B on one 8-GPU node the tuner picks tp 2 x pp 4 with 12 one-block
chunks a stage (interleaved, v 12) over the published tp 8 and predicts it 21 %
faster (full recomputation; 14.5 % selective): the tp-8 all-reduces (17 % of
the step in the model) and its narrower GEMMs against a small bubble
((p - 1) / v micro-batches) and one transfer per chunk boundary. Nothing here
has measured deep interleaving. This script measures the same trade at two
GPUs with the same block width:

  * BLOCKS GPT blocks of the 22B shape (hidden 6144, 64 heads, MLP 4h,
    sequence 2048; bf16 weights, FlashAttention through sdpa, causal), a batch
    of MICRO micro-batches of 1, every block recomputed in backward
    (torch.utils.checkpoint, non-reentrant) unless RECOMPUTE=0;
  * "tp": every block split Megatron-style over both GPUs (QKV and the first
    MLP matrix by columns, the out-projection and second MLP matrix by rows,
    an all-reduce after each in forward and before each column-split matrix
    in backward), micro-batches one after another;
  * "pp-v1", "pp-vN": the blocks over two pipeline stages,
    torch.distributed.pipelining's Schedule1F1B (v 1) and
    ScheduleInterleaved1F1B with v chunks a stage (each rank holds chunks r,
    r + 2, ...; one block a chunk at the deepest v), the whole activation
    sent across.

Prints and writes $OUT/interleave_vs_tp.json: the median step (forward and
backward of the batch, gradients zeroed, no optimizer) of each mode.
`./build/bench/scale/tp_overhead_model --interleave` prints the tuner's
figures for the same modes (built-in h100-sxm, torch's pipelining engine);
the question is whether the measured pp-vN / tp ratio is the model's.

Command (2 GPUs of one host; ~60 s on 2x H100 with the defaults, DEADLINE_S
stops between modes):
  OUT=$OUT torchrun --nproc-per-node 2 bench/scale/interleave_vs_tp.py

Each mode also records host_median_s, the time step() takes to return before
the device is synchronised (near the step time: the host sets the pace).
PROFILE=1 adds, from one more step under torch.profiler, the device time of
NCCL kernels and of all other kernels (rank 0): if the other kernels' time
grows with v, NCCL's kernels slow the compute beside them; if it stays and the
step grows, the GPU waits (README, "Session 21 (h25f)").
"""
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import megatron_tp  # beside this script: its GROUP is the split blocks' process group
from megatron_tp import CopyToGroup, ReduceFromGroup

H = int(os.environ.get("HIDDEN", "6144"))
HEADS = int(os.environ.get("HEADS", "64"))
S = int(os.environ.get("SEQ", "2048"))
BLOCKS = int(os.environ.get("BLOCKS", "8"))
MICRO = int(os.environ.get("MICRO", "4"))
RECOMPUTE = os.environ.get("RECOMPUTE", "1") == "1"
VS = [int(v) for v in os.environ.get("VS", "1,2,4").split(",")]
WARMUP, STEPS = int(os.environ.get("WARMUP", "3")), int(os.environ.get("STEPS", "10"))
DEADLINE_S = float(os.environ.get("DEADLINE_S", "120"))
PROFILE = os.environ.get("PROFILE", "0") == "1"
FFN = 4 * H
START = time.time()


class Block(torch.nn.Module):
    """One GPT block, or one tensor-parallel rank's share of it (split = tp)."""

    def __init__(self, split, device):
        super().__init__()
        on = {"device": device, "dtype": torch.bfloat16}
        self.heads = HEADS // split
        self.hd = H // HEADS
        self.split = split
        self.ln1 = torch.nn.LayerNorm(H, **on)
        self.qkv = torch.nn.Linear(H, 3 * self.heads * self.hd, **on)
        self.proj = torch.nn.Linear(self.heads * self.hd, H, bias=False, **on)
        self.ln2 = torch.nn.LayerNorm(H, **on)
        self.fc1 = torch.nn.Linear(H, FFN // split, **on)
        self.fc2 = torch.nn.Linear(FFN // split, H, bias=False, **on)

    def inner(self, x):
        b = x.shape[0]
        y = self.ln1(x)
        if self.split > 1:
            y = CopyToGroup.apply(y)
        q, k, v = self.qkv(y).view(b, S, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = self.proj(a.transpose(1, 2).reshape(b, S, -1))
        if self.split > 1:
            a = ReduceFromGroup.apply(a)
        x = x + a
        y = self.ln2(x)
        if self.split > 1:
            y = CopyToGroup.apply(y)
        m = self.fc2(F.gelu(self.fc1(y)))
        if self.split > 1:
            m = ReduceFromGroup.apply(m)
        return x + m

    def forward(self, x):
        if RECOMPUTE and torch.is_grad_enabled():
            return checkpoint(self.inner, x, use_reentrant=False)
        return self.inner(x)


class Chunk(torch.nn.Module):
    def __init__(self, n, split, device):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(split, device) for _ in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def loss_fn(out, target):
    return out.float().pow(2).mean() * target.float().mean()


def timed(step, device):
    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize(device)
    times, host = [], []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        step()
        host.append(time.perf_counter() - t0)
        torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    dist.barrier()
    out = {"median_s": statistics.median(times), "min_s": min(times), "times_s": times,
           "host_median_s": statistics.median(host)}
    if PROFILE:
        out["kernels"] = kernel_times(step, device)
    return out


def kernel_times(step, device):
    """Device seconds of NCCL kernels and of all others in one step (torch.profiler)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize(device)
        dist.barrier()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize(device)
            wall = time.perf_counter() - t0
        dist.barrier()
        nccl = other = 0.0
        for e in prof.key_averages():
            if not str(getattr(e, "device_type", "")).endswith("CUDA"):
                continue
            us = getattr(e, "self_device_time_total", None)
            if us is None:
                us = getattr(e, "self_cuda_time_total", 0)
            if "nccl" in e.key.lower():
                nccl += us * 1e-6
            else:
                other += us * 1e-6
        return {"profiled_step_s": wall, "nccl_kernel_s": nccl, "other_kernel_s": other}
    except Exception as exc:  # the timing above stands without it
        return {"error": repr(exc)}


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2, "two GPUs: torchrun --nproc-per-node 2"
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    results = {"device": torch.cuda.get_device_name(device), "torch": torch.__version__,
               "nccl": str(torch.cuda.nccl.version()),
               "shape": {"hidden": H, "heads": HEADS, "seq": S, "ffn": FFN, "blocks": BLOCKS,
                         "micro_batches": MICRO, "micro_batch": 1, "recompute": RECOMPUTE},
               "modes": {}}
    x = torch.randn(MICRO, S, H, device=device, dtype=torch.bfloat16)
    y = torch.ones(MICRO, 1, device=device)

    # Tensor parallelism over both GPUs.
    megatron_tp.GROUP = dist.new_group([0, 1])
    model = Chunk(BLOCKS, 2, device)
    xs = x.detach().requires_grad_(False)

    def tp_step():
        for i in range(MICRO):
            loss_fn(model(xs[i:i + 1]), y[i:i + 1]).backward()
        model.zero_grad(set_to_none=False)

    results["modes"]["tp"] = timed(tp_step, device)
    del model
    megatron_tp.GROUP = None
    torch.cuda.empty_cache()

    from torch.distributed.pipelining import (PipelineStage, Schedule1F1B,
                                              ScheduleInterleaved1F1B)
    for v in VS:
        if time.time() - START > DEADLINE_S:
            results["modes"][f"pp-v{v}"] = {"skipped": "deadline"}
            continue
        n_chunks = 2 * v
        if BLOCKS % n_chunks:
            continue
        per = BLOCKS // n_chunks
        chunks = [Chunk(per, 1, device) for _ in range(v)]  # this rank's: stages rank, rank + 2, ...
        stages = [PipelineStage(c, rank + 2 * j, n_chunks, device) for j, c in enumerate(chunks)]
        if v == 1:
            sched = Schedule1F1B(stages[0], n_microbatches=MICRO, loss_fn=loss_fn)
        else:
            sched = ScheduleInterleaved1F1B(stages, n_microbatches=MICRO, loss_fn=loss_fn)

        def pp_step():
            if rank == 0:
                sched.step(x)
            else:
                sched.step(target=y)
            for c in chunks:
                c.zero_grad(set_to_none=False)

        results["modes"][f"pp-v{v}"] = timed(pp_step, device)
        del sched, stages, chunks
        torch.cuda.empty_cache()

    if rank == 0:
        tp = results["modes"]["tp"]["median_s"]
        for name, r in results["modes"].items():
            if "median_s" in r:
                k = r.get("kernels", {})
                extra = (f"  kernels: nccl {1e3 * k['nccl_kernel_s']:.1f} ms, other "
                         f"{1e3 * k['other_kernel_s']:.1f} ms" if "nccl_kernel_s" in k else "")
                print(f"{name:6s} step {1e3 * r['median_s']:8.1f} ms  (/ tp {r['median_s'] / tp:.3f})"
                      f"  host {1e3 * r['host_median_s']:.1f} ms{extra}")
        out = os.environ.get("OUT", ".")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "interleave_vs_tp.json"), "w") as f:
            json.dump(results, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
