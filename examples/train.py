#!/usr/bin/env python3
"""A training script launched by `srun --xdeep-tune python3 examples/train.py`.

It reads the layout xdeep chose from XDEEP_* (and Slurm's SLURM_* for its own
rank), trains, and appends each step's time to $XDEEP_REPORT (a file in the
step's private directory on the node; the plugin sends it) so the daemon can
compare prediction and outcome. With PyTorch and GPUs it trains a small GPT
with DDP (or FSDP when XDEEP_SHARDING_STAGE=3); without them it runs the same
loop on the CPU with a pure-Python stand-in model, so the demo works anywhere.
"""
import argparse
import os
import random
import time


def env_int(name, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def layout():
    return {
        "rank": env_int("SLURM_PROCID", env_int("RANK", 0)),
        "world": env_int("SLURM_NTASKS", env_int("WORLD_SIZE", 1)),
        "local_rank": env_int("SLURM_LOCALID", env_int("LOCAL_RANK", 0)),
        "node": os.environ.get("SLURMD_NODENAME", os.uname().nodename),
        "strategy": os.environ.get("XDEEP_STRATEGY", "untuned"),
        "dp": env_int("XDEEP_DP", 1),
        "tp": env_int("XDEEP_TP", 1),
        "pp": env_int("XDEEP_PP", 1),
        "sharding": env_int("XDEEP_SHARDING_STAGE", 0),
        "micro_batch": env_int("XDEEP_MICRO_BATCH", 1),
        "grad_accum": env_int("XDEEP_GRAD_ACCUM", 1),
        "global_batch": env_int("XDEEP_GLOBAL_BATCH", 1),
        "gpus_visible": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
    }


def cpu_step(micro_batch, grad_accum, width=48):
    """One optimizer step of a tiny linear model in pure Python."""
    w = [[random.random() for _ in range(width)] for _ in range(width)]
    for _ in range(grad_accum):
        x = [[random.random() for _ in range(width)] for _ in range(micro_batch)]
        for row in x:
            _ = [sum(a * b for a, b in zip(row, col)) for col in zip(*w)]


def torch_training(cfg, steps):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    dist.init_process_group("nccl")
    torch.cuda.set_device(cfg["local_rank"])
    layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, norm_first=True)
    model = nn.Sequential(*[layer for _ in range(4)]).cuda()
    if cfg["sharding"] == 3:
        from torch.distributed.fsdp import fully_shard
        fully_shard(model)
    else:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(cfg["grad_accum"]):
            x = torch.randn(cfg["micro_batch"], 512, 1024, device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16):
                model(x).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    dist.destroy_process_group()
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    cfg = layout()
    print(f"train.py rank {cfg['rank']}/{cfg['world']} on {cfg['node']}: strategy={cfg['strategy']} "
          f"dp={cfg['dp']} tp={cfg['tp']} pp={cfg['pp']} micro_batch={cfg['micro_batch']} "
          f"accum={cfg['grad_accum']} global_batch={cfg['global_batch']} "
          f"gpus={cfg['gpus_visible'] or '-'}", flush=True)
    try:
        import torch
        use_torch = torch.cuda.is_available() and "MASTER_ADDR" in os.environ
    except ImportError:
        use_torch = False
    if use_torch:
        times = torch_training(cfg, args.steps)
    else:
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            cpu_step(min(cfg["micro_batch"], 8), min(cfg["grad_accum"], 4))
            times.append(time.perf_counter() - t0)
    report = os.environ.get("XDEEP_REPORT")
    if report and cfg["rank"] == 0:
        with open(report, "a") as out:
            out.writelines(f"{t:.6f}\n" for t in times)
    if cfg["rank"] == 0:
        print(f"train.py: {len(times)} steps, median {sorted(times)[len(times) // 2]:.4f} s/step",
              flush=True)


if __name__ == "__main__":
    main()
