#!/usr/bin/env python3
"""Kokkos device kernels against the CUDA probes and torch, per kernel and size.

  python3 compare.py --probe memory_*.json --torch torch_*.json --out summary.csv

Per (kernel, bytes): the median over rounds of each side's GB/s, Kokkos / CUDA (target
within 5 %) and Kokkos / torch (target within 10 %, i.e. >= 0.90; faster passes).
"""
import argparse
import csv
import json
import statistics
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", nargs="+", required=True)
    ap.add_argument("--torch", nargs="*", default=[])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    gbps = defaultdict(list)  # (kernel, elements-bytes, side) -> [GB/s]
    for path in a.probe:
        for e in json.load(open(path)).get("bandwidth", []):
            if e.get("space") == "device":
                gbps[(e["kernel"], e["bytes"], e["backend"])].append(e["gbps"])
    for path in a.torch:
        for e in json.load(open(path)).get("entries", []):
            if "gbps" in e:
                name = e["kernel"]
                side = "torch_eager" if name.endswith("_eager") else "torch"
                gbps[(name.removesuffix("_eager"), e["bytes"], side)].append(e["gbps"])
    keys = sorted({(k, b) for k, b, _ in gbps}, key=lambda kb: (kb[1], kb[0]))
    rows = []
    for kernel, nbytes in keys:
        med = {side: statistics.median(gbps[(kernel, nbytes, side)])
               for side in ("kokkos", "cuda", "torch", "torch_eager") if gbps.get((kernel, nbytes, side))}
        row = {"kernel": kernel, "bytes": nbytes,
               "rounds": len(gbps.get((kernel, nbytes, "kokkos"), []))}
        for side, v in med.items():
            row[f"{side}_gbps"] = round(v, 1)
        if "kokkos" in med and "cuda" in med:
            r = med["kokkos"] / med["cuda"]
            row["kokkos_vs_cuda"] = round(r, 4)
            row["within_5pct_of_cuda"] = abs(r - 1) <= 0.05
        if "kokkos" in med and "torch" in med:
            r = med["kokkos"] / med["torch"]
            row["kokkos_vs_torch"] = round(r, 4)
            row["within_10pct_of_torch"] = r >= 0.90
        rows.append(row)
    fields = ["kernel", "bytes", "rounds", "kokkos_gbps", "cuda_gbps", "torch_gbps",
              "torch_eager_gbps", "kokkos_vs_cuda", "within_5pct_of_cuda", "kokkos_vs_torch",
              "within_10pct_of_torch"]
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    for r in rows:
        print("  ".join(f"{k}={r.get(k, '')}" for k in fields))


if __name__ == "__main__":
    main()
