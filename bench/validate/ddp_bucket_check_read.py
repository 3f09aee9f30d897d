#!/usr/bin/env python3
"""Reads ddp_bucket_check.py's record (no torch): per configuration, NCCL's host cost per DDP bucket,
the reducer's cost per launch, their ratio (the step model's ddp_bucket_host_launches) and the plain
steps' slower rank over the two ranks' mean.

  python3 bench/validate/ddp_bucket_check_read.py DIR/ddp_bucket_check.json

Per configuration, on the slower rank of each turn (a synchronous step waits for it), medians over the
turns: b = (DDP at the smallest cap - DDP at 25 MB) / (its extra buckets); a = (DDP at 25 MB - plain
- its buckets x b) / (DDP's launches: 2 per parameter tensor, 1 per buffer); k = b / a. The plain
step's slower rank is read the same way (per turn), so `a` is DDP's own and the pacing of two
hosts is apart from it (straggle, as the framework probe reads it).
"""
import json
import statistics
import sys

# DDP's launches of the probe's networks (tuner/hardware_profile.cc counts them the same way):
# its GPT 36 parameter tensors, no buffers; ResNet-50 161 tensors, 159 BatchNorm buffers.
PROBE_LAUNCHES = {"probe-gpt": 2 * 36, "probe-resnet": 2 * 161 + 159}


def per_turn(rec, version):
    """The slower rank's time per turn, seconds."""
    ranks = rec["times_s"][version]
    return [max(t) for t in zip(*ranks)]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    print(f"{data['meta'].get('gpu')}, torch {data['meta'].get('torch')}, NCCL {data['meta'].get('nccl')}, "
          f"{data['meta'].get('date')}")
    print(f"{'configuration':28} {'turns':>5} {'straggle':>8} {'plain ms':>8} {'ddp25 ms':>8} "
          f"{'buckets':>12} {'b us/bucket':>11} {'a us/launch':>11} {'k = b/a':>7}")
    for rec in data["configs"]:
        if "times_s" not in rec:
            print(f"{rec['config']:28} {rec.get('skipped') or rec.get('error')}")
            continue
        versions = [v for v in rec["times_s"] if v != "plain"]
        base, small = versions[0], versions[-1]
        nb = {v: rec["buckets"].get(v, {}).get("buckets", 0) for v in versions}
        plain, ddp, ddp_small = (per_turn(rec, v) for v in ("plain", base, small))
        extra = nb[small] - nb[base]
        b = statistics.median(s - d for s, d in zip(ddp_small, ddp)) / extra if extra > 0 else float("nan")
        straggle = rec["summary"]["plain_straggle"]
        launches = PROBE_LAUNCHES.get(rec["config"])
        a = k = float("nan")
        if launches:
            added = statistics.median(d - p for d, p in zip(ddp, plain))
            a = (added - nb[base] * b) / launches
            k = b / a if a > 0 else float("nan")
        buckets = "/".join(str(nb[v]) for v in versions)
        print(f"{rec['config']:28} {rec['turns']:5d} {straggle:8.3f} {statistics.median(plain) * 1e3:8.2f} "
              f"{statistics.median(ddp) * 1e3:8.2f} {buckets:>12} {b * 1e6:11.0f} {a * 1e6:11.1f} {k:7.1f}")
        for v in versions[1:-1]:  # a middle cap: the same per-bucket figure if it is one
            e = nb[v] - nb[base]
            if e > 0:
                mid = statistics.median(s - d for s, d in zip(per_turn(rec, v), ddp)) / e
                print(f"{'':28} {'':5} cap {v[4:]} MB: {mid * 1e6:.0f} us a bucket over {e} more buckets")


if __name__ == "__main__":
    main()
