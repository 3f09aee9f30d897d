#!/usr/bin/env python3
"""Stand-in for measure_pytorch.py in dry_run_test.sh: a result in its format for each
micro-batch it was asked for (a fixed 50 ms step and 1 GB peak; GPT-1.3B's DDP at
micro-batch 16 skipped; GPT-125M's round-1 DDP run at micro-batch 4 started over the
buckets of the one before), no GPU needed."""
import argparse
import json

ap = argparse.ArgumentParser()
for flag in ("--mode", "--models", "--micro-batches", "--resnet-micro-batches", "--out"):
    ap.add_argument(flag, required=True)
for flag in ("--steps", "--warmup", "--min-seconds", "--window-mb"):
    ap.add_argument(flag, type=float, required=True)
ap.add_argument("--kernels", action="store_true")
args = ap.parse_args()
world = 1 if args.mode == "single" else 2
runs = []
for mb in (int(m) for m in args.micro_batches.split(",")):
    run = {"model": args.models, "mode": args.mode, "world_size": world, "micro_batch": mb,
           "grad_accum": 1, "recompute": False, "peak_allocated_bytes": 1e9, "steady_allocated_bytes": 5e8,
           "step_time_median_s": 0.05, "step_times_s": [0.05]}
    if args.models == "gpt-125m" and args.mode == "ddp" and mb == 4 and args.out.endswith("_r1.json"):
        run["held_before_bytes"] = 4 * 124e6
    if args.models == "gpt-1.3b" and args.mode == "ddp" and mb == 16:
        run = {k: run[k] for k in ("model", "mode", "world_size", "micro_batch")}
        run["skipped"] = "estimated out of memory"  # as measure_pytorch.py records one
    runs.append(run)
    print(f"{args.mode} {args.models} mb={mb} step=50.0 ms")
with open(args.out, "w") as f:
    json.dump({"meta": {"gpu": "stand-in", "gpu_count_used": world, "mode": args.mode,
                        "command": "dry_run_measure.py", "date": "dry run"}, "runs": runs}, f)
