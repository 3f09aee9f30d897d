#!/usr/bin/env python3
"""NCCL's host cost per DDP bucket, read as the framework probe could read it, and in training
(issue 19 item 6; h26d, session 26).

  torchrun --standalone --nproc_per_node=2 bench/validate/ddp_bucket_check.py --out DIR \
      [--probe-caps 25,1,0.1] [--configs hf-llama2c-42m:1,tv-regnet-y-8gf:1,timm-vit-l16-320:1] \
      [--train-caps 25,1] [--turns 25] [--deadline-s 80]

Session 25 (h25d, data/checks/2026-11-28_h200x2_ddp_step_split) measured that each bucket's NCCL
all-reduce costs the host ~90-230 us beyond the reducer's copies, a cost no term of the step-time
model prices: the framework probe's two-rank DDP pass folds it into its figure per reducer launch
(its GPT has 2 buckets over 72 launches, its ResNet-50 ~6 over 481), so the figure cannot follow a
model with many buckets per launch (ViT-L/16: 38 buckets over 592 launches) and no run reads it
apart. DDP's reducer launches the same kernels per parameter tensor whatever its bucket cap, so
the same network under DDP at a smaller `bucket_cap_mb` differs from the default by its extra
buckets alone: (pass at the small cap - pass at 25 MB) / (extra buckets) is the host's cost per
bucket, a reading any run's probe can make in a second more. This script checks that the reading

  1. is stable: the probe's two networks (its GPT and ResNet-50, framework_probe.py's own
     classes, its forward + backward pass as it times it) at two small caps agree with each
     other and from rank to rank (a cost per bucket, not per byte or per network);
  2. is training's: library_suite.py's step of small models whose DDP rows were under-predicted
     (run 17's llama2.c-42M and ViT-L/16-320 at micro-batch 1, run 18's RegNetY-8GF at 1) at the
     default cap and a 1 MB cap gives the same cost per bucket;
  3. and reads the pacing of a synchronous step: every version's step starts on both ranks
     together (a barrier), so per turn the plain steps' slower rank over the two ranks' mean is the
     factor the probe reads as `straggle`, and the DDP step's time is the slower host's.

Each version of a network (plain, DDP at each cap) is the same weights, taking turns step by step
so that each sees the host at the same level. Writes DIR/ddp_bucket_check.json (rank 0): per
version the per-rank times of every turn and DDP's bucket counts (its logging data), and prints the
medians. Check data only: nothing in the tuner reads it.
"""
import argparse
import copy
import gc
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "profiler"))
import library_suite as suite  # noqa: E402  (imports torch)
import framework_probe as probe  # noqa: E402
import ddp_step_split as split  # noqa: E402

torch = suite.torch
dist = suite.dist


def aligned(device):
    """Both ranks idle and together: a one-element all-reduce waited for on the host."""
    t = torch.zeros(1, device=device)
    dist.all_reduce(t)
    torch.cuda.synchronize(device)


def buckets_of(ddp):
    try:
        d = ddp._get_ddp_logging_data()
        return {"buckets": int(d.get("num_buckets_reduced", 0)),
                "tensors": int(d.get("num_parameter_tensors", 0)),
                "rebuilt_bucket_sizes": d.get("rebuilt_bucket_sizes", "")}
    except Exception as e:  # noqa: BLE001 - private API
        return {"error": f"{type(e).__name__}: {e}"}


def probe_versions(network, caps, rank, device):
    """{version: (timed fn, untimed fn, ddp or None)}: framework_probe's pass of its GPT or
    ResNet-50 (forward + backward timed, the AdamW step after it untimed), plain and under DDP
    at each cap."""
    gen = torch.Generator(device=device)
    gen.manual_seed(1234)
    if network == "gpt":
        _, gpt = probe.gpt_classes(torch)
        model, inputs, target = probe.gpt_and_batch(torch, gpt, probe.GPT_SHAPE, device, gen)
    else:
        r = probe.RESNET_SHAPE
        model = probe.resnet50_class(torch)(r["classes"])
        inputs = torch.randn(r["batch"], 3, r["image"], r["image"], device=device, generator=gen)
        target = torch.randint(0, r["classes"], (r["batch"],), device=device, generator=gen)
    model = model.to(device)
    out = {"plain": (*probe.training_pass(torch, device, model, inputs, target), None)}
    for cap in caps:
        ddp = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(model), device_ids=[rank],
                                                        bucket_cap_mb=cap)
        out[f"ddp_{cap:g}"] = (*probe.training_pass(torch, device, ddp, inputs, target), ddp)
    return out


def train_versions(name, mb, caps, rank, device):
    """library_suite.py's step of `name` (its build, optimizer, batch, loss; forward + backward +
    optimizer timed, as the suite times a step), plain and under DDP at each cap."""
    torch.manual_seed(0)
    base = suite.build(name, device)
    base.train()
    out = {}
    for v in ["plain"] + [f"ddp_{c:g}" for c in caps]:
        m = base if v == "plain" else torch.nn.parallel.DistributedDataParallel(
            copy.deepcopy(base), device_ids=[rank], bucket_cap_mb=float(v[4:]))
        opt = suite.Optimizers(name, m.parameters())

        def step(m=m, opt=opt):
            x, y = suite.batch_for(name, mb, device)
            suite.loss_of(name, m, x, y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        out[v] = (step, lambda: None, None if v == "plain" else m)
    return out


def run(label, versions, args, rank, world, device, t_start):
    for v, (fn, after, _) in versions.items():  # warm-up; the second step rebuilds DDP's buckets
        for _ in range(args.warmup):
            aligned(device)
            fn()
            torch.cuda.synchronize(device)
            after()
    times = {v: [] for v in versions}
    for i in range(args.turns):
        for v, (fn, after, _) in versions.items():
            aligned(device)
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize(device)
            times[v].append(time.perf_counter() - t0)
            after()
        if i % 5 == 4 and not split.agree(time.time() - t_start < args.deadline_s - args.reserve_s, device):
            break
    every = [None] * world
    dist.all_gather_object(every, times)
    buckets = {v: buckets_of(d) for v, (_, _, d) in versions.items() if d is not None}
    if rank != 0:
        return None
    rec = {"config": label, "turns": len(times["plain"]), "buckets": buckets,
           "times_s": {v: [r[v] for r in every] for v in versions}}
    turns = {v: list(zip(*[r[v] for r in every])) for v in versions}  # per turn, per rank
    med = {v: [statistics.median(r[v]) * 1e3 for r in every] for v in versions}
    slow = {v: statistics.median(max(t) for t in turns[v]) * 1e3 for v in versions}
    straggle = sum(max(t) for t in turns["plain"]) / sum(statistics.mean(t) for t in turns["plain"])
    ddps = [v for v in versions if v != "plain"]
    base = ddps[0]
    per_bucket = {}
    for v in ddps[1:]:
        extra = buckets[v].get("buckets", 0) - buckets[base].get("buckets", 0)
        if extra > 0:
            # per rank: median over turns of the difference; and on the slower rank per turn
            per_bucket[v] = {
                "extra_buckets": extra,
                "per_rank_us": [statistics.median(a - b for a, b in zip(r[v], r[base])) / extra * 1e6
                                for r in every],
                "slowest_us": statistics.median(max(a) - max(b) for a, b in zip(turns[v], turns[base]))
                / extra * 1e6}
    rec["summary"] = {"median_ms": med, "slowest_median_ms": slow, "plain_straggle": straggle,
                      "per_bucket": per_bucket,
                      "ddp_over_plain_ms": {v: statistics.mean(med[v]) - statistics.mean(med["plain"])
                                            for v in ddps}}
    print(f"== {label}: {rec['turns']} turns; plain slower rank / mean {straggle:.3f}")
    for v in versions:
        b = buckets.get(v, {}).get("buckets", "")
        print(f"   {v:9} {'/'.join(f'{x:6.2f}' for x in med[v])} ms (slower rank {slow[v]:6.2f})"
              + (f"  buckets {b}" if b != "" else ""))
    for v, p in per_bucket.items():
        print(f"   per bucket ({v} - {base}, {p['extra_buckets']} more): "
              f"{'/'.join(f'{x:.0f}' for x in p['per_rank_us'])} us per rank, {p['slowest_us']:.0f} us slower rank",
              flush=True)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--probe-caps", default="25,1,0.1")
    ap.add_argument("--configs", default="hf-llama2c-42m:1,tv-regnet-y-8gf:1,timm-vit-l16-320:1")
    ap.add_argument("--train-caps", default="25,1")
    ap.add_argument("--turns", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--deadline-s", type=float, default=80)
    ap.add_argument("--reserve-s", type=float, default=10)
    args = ap.parse_args()
    t_start = suite.T_START
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world < 2:
        sys.exit("ddp_bucket_check.py: run it under torchrun --nproc_per_node=2")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=device)
    os.makedirs(args.out, exist_ok=True)
    meta = split.run_meta(args.out, world, device)
    probe_caps = [float(c) for c in args.probe_caps.split(",")]
    train_caps = [float(c) for c in args.train_caps.split(",")]
    jobs = [(f"probe-{n}", lambda n=n: probe_versions(n, probe_caps, rank, device)) for n in ("gpt", "resnet")]
    for c in args.configs.split(","):
        name, mb = c.split(":")
        jobs.append((f"{name} mb{mb}", lambda name=name, mb=int(mb): train_versions(name, mb, train_caps, rank, device)))
    recs = []
    for label, make in jobs:
        if not split.agree(time.time() - t_start < args.deadline_s - args.reserve_s, device):
            recs.append({"config": label, "skipped": "deadline"})
            continue
        try:
            rec = run(label, make(), args, rank, world, device, t_start)
        except Exception as e:  # noqa: BLE001 - one configuration's failure leaves the others
            rec = {"config": label, "error": f"{type(e).__name__}: {e}"[:300]}
            print(f"ddp_bucket_check: {label}: {rec['error']}", flush=True)
        gc.collect()
        torch.cuda.empty_cache()
        if rank == 0 and rec:
            recs.append(rec)
            with open(os.path.join(args.out, "ddp_bucket_check.json.part"), "w") as f:
                json.dump({"meta": meta, "configs": recs}, f, indent=1)
            os.replace(os.path.join(args.out, "ddp_bucket_check.json.part"),
                       os.path.join(args.out, "ddp_bucket_check.json"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
