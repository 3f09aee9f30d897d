#!/usr/bin/env python3
"""Table of DDP against single-GPU peaks from run_device_fresh.sh's files.

  summarize_fresh.py ddp_fresh.json single_fresh.json [old_ddp.json ...]

Per configuration: each rank's peak, the single-GPU peak of the same
configuration, their difference in bytes per parameter, the bytes DDP's
constructor allocated (its Reducer buckets) per parameter, and which phase
held the peak.
"""
import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)["runs"]
    except (OSError, ValueError, KeyError):
        return []


def key(r):
    return (r["model"], r["micro_batch"], r.get("grad_accum", 1), r.get("recompute", False))


def main():
    ddp = [r for r in load(sys.argv[1]) if "peak_allocated_bytes" in r]
    single = {key(r): r for r in load(sys.argv[2]) if "peak_allocated_bytes" in r}
    old = {}
    for path in sys.argv[3:]:
        for r in load(path):
            if "peak_allocated_bytes" in r:
                old[(r["mode"],) + key(r)] = r
    gib = 2**30
    print(f"{'model':9} {'mb':>3} {'ga':>2} {'rank0':>7} {'rank1':>7} {'single':>7} "
          f"{'d B/p':>6} {'wrap B/p':>8} {'steady B/p':>10} {'peak in':>16}")
    for r in ddp:
        p = r["params"]
        ranks = r.get("ranks", [r])
        s = single.get(key(r)) or old.get(("single",) + key(r))
        diff = (r["peak_allocated_bytes"] - s["peak_allocated_bytes"]) / p if s else float("nan")
        phases = r.get("phase_peak_bytes", {})
        where = max(phases, key=phases.get) if phases else "?"
        print(f"{r['model']:9} {r['micro_batch']:3d} {r.get('grad_accum', 1):2d} "
              + " ".join(f"{x['peak_allocated_bytes'] / gib:7.2f}" if x else f"{'-':>7}"
                         for x in (ranks + [None, None])[:2])
              + f" {s['peak_allocated_bytes'] / gib if s else float('nan'):7.2f} {diff:6.1f} "
              f"{(r.get('after_wrap_bytes', 0) - r.get('after_build_bytes', 0)) / p:8.1f} "
              f"{r['steady_allocated_bytes'] / p:10.1f} {where:>16}")


if __name__ == "__main__":
    main()
