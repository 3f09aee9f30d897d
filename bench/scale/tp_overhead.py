#!/usr/bin/env python3
"""Tensor parallelism's cost per block, measured: what makes the tuner's picks
for Narayanan et al.'s 18.4B and 39.1B rows look faster than the published
tp 8 layouts (bench/scale/README.md, "The tuner's own pick").

Runs GPT blocks of the 18.4B model's shape (hidden 6144, 48 heads, MLP 4h,
sequence 2048; FlashAttention through sdpa, bf16) forward and backward, on one
GPU whole (tp 1) and split Megatron-style over 2, 4, ... GPUs up to every GPU
of the host (QKV and the first MLP matrix split by columns, the out-projection
and second MLP matrix by rows, an all-reduce after each in forward and before
each column-split matrix in backward; ranks outside a degree's group wait).
Prints and writes $OUT/tp_overhead.json: milliseconds per micro-batch for each
degree and micro-batch size, and each degree's overhead, t(tp) / (t(tp1) / tp)
- 1, for `tp_overhead_model` (the tuner's figure for the same blocks) to be
compared with.

    OUT=/tmp/out python3 bench/scale/tp_overhead.py             # 2 GPUs: tp 1, 2; ~1 minute
    OUT=/tmp/out MBS=1,2,4,16 python3 bench/scale/tp_overhead.py  # 8 GPUs: tp 1, 2, 4, 8
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

import megatron_tp  # beside this script: its GROUP is the split blocks' process group
from megatron_tp import CopyToGroup, ReduceFromGroup

H, HEADS, S, LAYERS = 6144, 48, 2048, 4
FFN = 4 * H
MBS = tuple(int(m) for m in os.environ.get("MBS", "1,2,4").split(","))
WARMUP, STEPS = 3, 10


def make_blocks(tp, dev):
    def p(*shape):
        return (torch.randn(*shape, device=dev, dtype=torch.bfloat16) * 0.02).requires_grad_()

    return [dict(qkv=p(3 * H // tp, H), out=p(H, H // tp), fc1=p(FFN // tp, H), fc2=p(H, FFN // tp))
            for _ in range(LAYERS)]


def block(x, w, tp, mb):
    heads = HEADS // tp
    d = H // HEADS
    y = CopyToGroup.apply(F.layer_norm(x, (H,)))
    q, k, v = (y @ w["qkv"].t()).view(mb, S, 3, heads, d).unbind(2)
    a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                       is_causal=True)
    a = a.transpose(1, 2).reshape(mb * S, heads * d)
    x = x + ReduceFromGroup.apply(a @ w["out"].t())
    y = CopyToGroup.apply(F.layer_norm(x, (H,)))
    return x + ReduceFromGroup.apply(F.gelu(y @ w["fc1"].t()) @ w["fc2"].t())


def time_blocks(tp, dev):
    blocks = make_blocks(tp, dev)
    out = {}
    for mb in MBS:
        x0 = torch.randn(mb * S, H, device=dev, dtype=torch.bfloat16, requires_grad=True)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for i in range(WARMUP + STEPS):
            if i == WARMUP:
                torch.cuda.synchronize(dev)
                if megatron_tp.GROUP is not None:
                    dist.barrier(group=megatron_tp.GROUP)
                start.record()
            x = x0
            for w in blocks:
                x = block(x, w, tp, mb)
            x.float().sum().backward()
        end.record()
        torch.cuda.synchronize(dev)
        out[mb] = start.elapsed_time(end) / STEPS
    return out


def degrees(world):
    tps, tp = [], 1
    while tp <= world:
        tps.append(tp)
        tp *= 2
    return tps


def worker(rank, world, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    for tp in degrees(world):
        # new_group is collective: every rank creates every group, in the same order
        group = dist.new_group(ranks=list(range(tp))) if tp > 1 else None
        if rank < tp:
            megatron_tp.GROUP = group
            t = time_blocks(tp, dev)
            if rank == 0:
                results[f"tp{tp}"] = t
                print(f"tp{tp}: " + "  ".join(f"mb {mb} {ms:.2f} ms" for mb, ms in t.items()), flush=True)
        megatron_tp.GROUP = None
        dist.barrier()
    dist.destroy_process_group()


def main():
    world = torch.cuda.device_count()
    if world < 2:
        sys.exit("tp_overhead.py needs at least 2 GPUs")
    world = degrees(world)[-1]
    torch.backends.cuda.matmul.allow_tf32 = False
    with mp.Manager() as m:
        results = m.dict()
        mp.spawn(worker, args=(world, results), nprocs=world, join=True)
        res = dict(results)
    rows = []
    for mb in MBS:
        t1 = res["tp1"][mb]
        row = {"micro_batch": mb, "tp1_ms": t1}
        line = f"mb {mb:2d}: tp1 {t1:8.2f} ms"
        for tp in degrees(world)[1:]:
            t = res[f"tp{tp}"][mb]
            row[f"tp{tp}_ms"] = t
            row[f"tp{tp}_overhead"] = t / (t1 / tp) - 1
            line += f"  tp{tp} {t:8.2f} ms ({100 * (t / (t1 / tp) - 1):+6.1f} %)"
        rows.append(row)
        print(line, flush=True)
    doc = {"device": torch.cuda.get_device_name(0), "gpus": world, "torch": torch.__version__,
           "nccl": str(torch.cuda.nccl.version()),
           "shape": {"hidden": H, "heads": HEADS, "seq": S, "ffn": FFN, "blocks": LAYERS},
           "rows": rows}
    out = os.environ.get("OUT", ".")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tp_overhead.json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
