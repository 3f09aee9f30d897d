#!/usr/bin/env python3
"""The same GEMMs under the probe's timer and torch's (issue 19 item 1; session 25, h25g).

  gemm_split_points.py FOLDER      (a gemm_split_points_device.sh output folder)

Joins split_probe.json (xdeep-probe, the fit's timer, with cuBLASLt's kernel) and
split_torch.json (torch.matmul, the check's timer) shape by shape and prints:
* by size (operand + result bytes): the probe / torch time ratio (median, 10th and
  90th percentiles) and each timer's median streaming rate (bytes / time) -- whether
  an L2-sized GEMM runs faster under one timer than the other, and whether L2-sized
  GEMMs stream faster than large ones;
* by pass and precision: t = a + bytes / BW fitted (least squares on relative error):
  the fixed time a GEMM pays over its streaming, with and without a split-k pass (the
  wgrads of these layers are the ones the heuristic splits).
All of it calibration.
"""
import json
import os
import statistics
import sys

import numpy as np


def key(g):
    return (g["dtype"], g.get("pass", "fwd"), int(g["m"]), int(g["n"]), int(g["k"]))


def main():
    folder = sys.argv[1]
    probe = {key(g): g for g in json.load(open(os.path.join(folder, "split_probe.json")))["gemm"]}
    rows = []
    for g in json.load(open(os.path.join(folder, "split_torch.json")))["gemm"]:
        p = probe.get(key(g))
        if not p:
            continue
        eb = 4 if g["dtype"] == "tf32" else 2
        m, n, k = int(g["m"]), int(g["n"]), int(g["k"])
        size = eb * (m * k + k * n + m * n)
        rows.append((size, 2.0 * m * n * k / (p["tflops"] * 1e12), g["median_s"], g,
                     p.get("kernel", {})))
    print(f"{len(rows)} shapes timed by both")
    print("bytes          shapes  probe / torch median [p10, p90]  rate probe / torch (median TB/s)")
    for lo, hi in ((0, 10e6), (10e6, 25e6), (25e6, 50e6), (50e6, 100e6), (100e6, float("inf"))):
        r = [x for x in rows if lo <= x[0] < hi]
        if not r:
            continue
        q = sorted(x[1] / x[2] for x in r)
        top = f"{hi / 1e6:.0f}" if hi < float("inf") else "inf"
        print(f"{lo / 1e6:4.0f}-{top:>4} MB  {len(r):6d}  {statistics.median(q):5.3f} [{q[len(q) // 10]:5.3f}, "
              f"{q[len(q) * 9 // 10]:5.3f}]  {statistics.median([x[0] / x[1] for x in r]) / 1e12:5.2f} / "
              f"{statistics.median([x[0] / x[2] for x in r]) / 1e12:5.2f}")
    print("t = a + bytes / BW (probe's times), by pass and precision:")
    for pas in ("fwd", "dgrad", "wgrad"):
        for fam in (("bf16", "fp16"), ("tf32",)):
            r = [x for x in rows if x[3]["pass"] == pas and x[3]["dtype"] in fam]
            if len(r) < 3:
                continue
            x = np.array([v[0] for v in r], dtype=float)
            y = np.array([v[1] for v in r])
            a = np.vstack([np.ones_like(x), x]).T
            c = np.linalg.lstsq(a / y[:, None], np.ones_like(y), rcond=None)[0]
            res = np.abs(a @ c / y - 1)
            split = sum(1 for v in r if v[4].get("split_k", 1) > 1)
            print(f"  {pas:6} {'/'.join(fam):9} {len(r):2d} shapes ({split:2d} split by the heuristic): "
                  f"a = {c[0] * 1e6:5.2f} us, BW = {1 / c[1] / 1e12:5.2f} TB/s, median |residual| "
                  f"{100 * np.median(res):4.1f} %")


if __name__ == "__main__":
    main()
