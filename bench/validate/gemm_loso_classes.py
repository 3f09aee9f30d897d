#!/usr/bin/env python3
"""The leave-one-seed-out residuals of the GEMM model ranked by class (issue 19, item 1).

  gemm_loso.py BUILD --fits others --worst 100000 > loso.txt
  gemm_loso_classes.py loso.txt [blind|kernels]
  gemm_loso_classes.py --rates

Joins every shape's line of gemm_loso.py's output with the kernel cuBLASLt's heuristic
named for it (check_algos.json, where the seed asked) and prints, pooled and per card,
each class's size, how many of its shapes lie in the worst 5 % (and how many of those
are over-predicted), its own median / p95, and the pooled p95 with the class left out.
Classes overlap. memory-bound: operand + result bytes at 4.2 (H200) / 3.0 (H100) TB/s
longer than the FLOPs at 800 (16-bit) / 400 (tf32) TFLOP/s; small: both under 15 us;
long k: min(m, n) <= 160 and k >= 8 max(m, n); misalN: least aligned leading dimension
N bytes; algoN / split_redN: the heuristic's algorithm, its split-k reduction scheme
(1 in place behind a memset, 2 fp32 workspace + reduction kernel, 4 output-type
workspace). Quantiles as gemm_loso.py's pooled figures in gemm_model_calibration.md:
the value at index round(p (n - 1)) of the sorted errors.
"""
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_loso  # noqa: E402  (SEEDS, DATA)


def quantile(v, p):
    v = sorted(v)
    return v[int(round(p * (len(v) - 1)))] if v else float("nan")


def load(path):
    cur, out = None, {}
    for line in open(path):
        m = re.match(r"(h\d00) seed\s+(\d+) fit (\w+)\s+\(\s*\d+ pts\) (\w+)", line)
        if m:
            cur = m.groups()
            continue
        m = re.match(r"\s+([+-][\d.]+) %\s+predicted\s+([\d.]+) ms, measured\s+([\d.]+) ms\s+"
                     r"(bf16|fp16|tf32)\s+(\w+)\s+m=(\d+)\s+n=(\d+)\s+k=(\d+)", line)
        if m and cur:
            key = cur + (m.group(4), m.group(5), int(m.group(6)), int(m.group(7)), int(m.group(8)))
            out[key] = float(m.group(1))
    return out


def kernels():
    table = {}
    for card, seeds in gemm_loso.SEEDS.items():
        for seed, rel in seeds.items():
            path = os.path.join(gemm_loso.DATA, rel, "check_algos.json")
            if not os.path.exists(path):
                continue
            for g in json.load(open(path))["gemm_algos"]:
                table[(card, seed, g["dtype"], g.get("pass", "fwd"), g["m"], g["n"], g["k"])] = g["kernel"]
    return table


def alignment(x, eb):
    b = x * eb
    return min(b & -b, 16)


def classes(key, kernel):
    card, _, _, _, dt, ps, m, n, k = key
    eb = 4 if dt == "tf32" else 2
    an = alignment(n, eb)
    ain = {"fwd": alignment(k, eb), "dgrad": min(alignment(k, eb), an)}.get(
        ps, min(alignment(m, eb), an))
    out = [dt]
    if min(ain, an) < 16:
        out.append("misal%d" % min(ain, an))
    if kernel:
        out.append("algo%d" % kernel["algo"])
        if kernel["split_k"] > 1:
            out.append("split_red%d" % kernel["reduction"])
    if k <= 64:
        out.append("k<=64")
    bw = 4.2e12 if card == "h200" else 3.0e12
    peak = 400e12 if dt == "tf32" else 800e12
    bytes_s, flops_s = eb * (m * k + k * n + m * n) / bw, 2.0 * m * n * k / peak
    if bytes_s > flops_s:
        out.append("memory-bound")
    if bytes_s < 15e-6 and flops_s < 15e-6:
        out.append("small")
    if min(m, n) <= 160 and k >= 8 * max(m, n):
        out.append("long-k")
    return out


def rates():
    """Operand + result bytes over the measured time of the clearly memory-bound check
    shapes (bytes at 4.2 / 3.0 TB/s >= 3x the FLOPs at the peak, >= 4 us), by size: what
    a GEMM that streams draws at each size, L2-sized or not."""
    rows = []
    for card, seeds in gemm_loso.SEEDS.items():
        for rel in seeds.values():
            for g in json.load(open(os.path.join(gemm_loso.DATA, rel, "gemm_check.json")))["gemm"]:
                m, n, k = g["m"], g["n"], g["k"]
                eb = 4 if g["dtype"] == "tf32" else 2
                size = eb * (m * k + k * n + m * n)
                bw = 4.2e12 if card == "h200" else 3.0e12
                peak = 400e12 if eb == 4 else 800e12
                if size / bw >= 3 * 2.0 * m * n * k / peak and size / bw >= 4e-6:
                    rows.append((card, size / 1e6, size / g["median_s"] / 1e12))
    for card in ("h100", "h200"):
        for lo, hi in ((0, 15), (15, 25), (25, 35), (35, 50), (50, 100), (100, 300), (300, 1e12)):
            r = [x[2] for x in rows if x[0] == card and lo <= x[1] < hi]
            if r:
                print(f"{card} {lo:>4}-{hi if hi < 1e12 else 'inf':>4} MB: {len(r):3} shapes, median "
                      f"{quantile(r, 0.5):.2f} TB/s")


def main():
    if sys.argv[1] == "--rates":
        return rates()
    errors = load(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "kernels"
    table = kernels()
    for card in ("all", "h100", "h200"):
        keys = [k for k in errors if k[3] == mode and card in ("all", k[0])]
        if not keys:
            continue
        cls = {k: classes(k, table.get((k[0], k[1]) + k[4:])) for k in keys}
        p95 = quantile([abs(errors[k]) for k in keys], 0.95)
        tail = [k for k in keys if abs(errors[k]) >= p95]
        print(f"{mode} {card}: {len(keys)} shapes, median "
              f"{quantile([abs(errors[k]) for k in keys], 0.5):.1f} %, p95 {p95:.1f} %, "
              f"{len(tail)} in the worst 5 %")
        rows = []
        for c in sorted({c for k in keys for c in cls[k]}):
            mine = [abs(errors[k]) for k in keys if c in cls[k]]
            rest = [abs(errors[k]) for k in keys if c not in cls[k]]
            in_tail = [k for k in tail if c in cls[k]]
            rows.append((quantile(rest, 0.95), c, len(mine), len(in_tail),
                         sum(errors[k] > 0 for k in in_tail), quantile(mine, 0.5),
                         quantile(mine, 0.95)))
        for without, c, n, t, over, med, p in sorted(rows):
            print(f"  {c:14} {n:5} shapes, {t:3} in the tail ({over:3} over), own {med:5.1f} / "
                  f"{p:5.1f} %, pooled p95 without it {without:5.1f} %")


if __name__ == "__main__":
    main()
