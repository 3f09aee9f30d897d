#!/usr/bin/env python3
"""What PyTorch's caching allocator reserved beyond the tensors, in measured runs.

The tuner adds a fragmentation margin of a fixed share of the card to every
layout's peak tensors (tuner/strategy_model.cc, MemoryBreakdown::margin). This
reads the committed measurements that recorded both torch.cuda.max_memory_allocated
and torch.cuda.max_memory_reserved (measure_pytorch.py: single GPU, DDP and FSDP2
on 2x H100 / 2x H200, PyTorch 2.11, default allocator settings) and prints the
excess, reserved - allocated, per mode and by size, as a share of the allocated
bytes and of the card.

These runs are calibration data (the memory model was built on them), not a
held-out check. The excess is an upper bound on what a run needs beyond its
tensors: reserved memory includes cached blocks that are free and not split,
which the allocator releases and retries with before it reports out of memory.

    python3 bench/memory_validation/allocator_excess.py [--min-share 0.4]
"""
import argparse
import glob
import json
import os
import statistics

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SOURCES = ["bench/validate/data/calibration/*/*.json", "bench/validate/data/checks/*/*.json",
           "bench/memory_validation/data/*.json"]


def runs():
    """One row per rank of every run that recorded a reserved peak and ran in a
    process of its own (nothing held from an earlier configuration); a
    configuration copied into several data folders counts once."""
    seen, rows = set(), []
    for pattern in SOURCES:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            try:
                with open(path) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
                continue
            meta = data.get("meta", {})
            card = meta.get("gpu_memory_bytes")
            if "per configuration" not in str(meta.get("processes", "")):
                continue
            for run in data["runs"]:
                if "peak_reserved_bytes" not in run or "error" in run or not card:
                    continue
                for rank in run.get("ranks") or [run]:
                    held = run.get("held_before_bytes", 0) or 0
                    allocated = (rank.get("peak_allocated_bytes") or 0) + held
                    reserved = rank.get("peak_reserved_bytes") or 0
                    if allocated <= 0 or reserved <= 0:
                        continue
                    key = (run.get("model"), run.get("mode") or meta.get("mode"),
                           run.get("micro_batch", 0), run.get("grad_accum", 1) or 1,
                           bool(run.get("recompute")), allocated, reserved, card)
                    if key in seen:
                        continue
                    seen.add(key)
                    rows.append({"mode": key[1], "model": key[0], "card": card,
                                 "allocated": allocated, "excess": reserved - allocated,
                                 "gpu": meta.get("gpu", ""), "path": os.path.relpath(path, ROOT)})
    return rows


def quantile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def line(label, rows, margin):
    if not rows:
        return
    of_alloc = [r["excess"] / r["allocated"] for r in rows]
    of_card = [r["excess"] / r["card"] for r in rows]
    over = sum(x > margin for x in of_card)
    print(f"| {label} | {len(rows)} | {statistics.median(of_alloc):.1%} / {quantile(of_alloc, .9):.1%}"
          f" / {max(of_alloc):.1%} | {statistics.median(of_card):.1%} / {quantile(of_card, .9):.1%}"
          f" / {max(of_card):.1%} | {over} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-share", type=float, default=0.4,
                    help="the large runs: peak allocated at least this share of the card")
    ap.add_argument("--margin", type=float, default=0.05, help="the model's margin, share of the card")
    a = ap.parse_args()
    rows = runs()
    print(f"one process per configuration: {len(rows)} rank peaks; excess = max_memory_reserved -"
          f" max_memory_allocated\n")
    print(f"| runs | n | excess / allocated: median / p90 / max | excess / card: median / p90 / max"
          f" | excess > {a.margin:.0%} of card |")
    print("| --- | --- | --- | --- | --- |")
    for mode in ("single", "ddp", "fsdp"):
        line(mode, [r for r in rows if r["mode"] == mode], a.margin)
    for mode in ("single", "ddp", "fsdp"):
        line(f"{mode}, allocated >= {a.min_share:.0%} of card",
             [r for r in rows if r["mode"] == mode and r["allocated"] >= a.min_share * r["card"]],
             a.margin)
    for lo, hi in ((0, 2), (2, 8), (8, 20), (20, 40), (40, 1e9)):
        line(f"allocated {lo}-{hi if hi < 1e9 else ''} GiB",
             [r for r in rows if lo * 2**30 <= r["allocated"] < hi * 2**30], a.margin)
    print("\nlargest excess over the card's share:")
    for r in sorted(rows, key=lambda r: -r["excess"] / r["card"])[:5]:
        print(f"  {r['path']}: {r['mode']} {r['model']} allocated {r['allocated'] / 2**30:.1f} GiB,"
              f" excess {r['excess'] / 2**30:.2f} GiB ({r['excess'] / r['card']:.1%} of"
              f" {r['card'] / 2**30:.0f} GiB)")


if __name__ == "__main__":
    main()
