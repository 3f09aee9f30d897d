#!/usr/bin/env python3
"""Does the GEMM fit set reach far enough? (issue 19 item 1, calibration only)

  gemm_fit_reach_study.py [--fit S] [--targets D,T,A] [--extra 150] [--seed 1]

The held-out script's fit set drew its random layers up to 8e10 FLOPs a pass while the
check draws shapes up to 4e12. This takes one run's probe report (default S = seed
3301's, 24 random layers + anchors, all under 8e10), adds EXTRA cuBLAS timings of
training-like shapes from the other runs' checks -- once only shapes above 8e10 FLOPs,
once only shapes at or under it, the same count -- fits the model's form
(gemm_form_study.py, numpy) per precision and checks it on the target run's check set.
The extra points stand in for what a probe would time at those shapes (probe and
torch.matmul time the same kernel within ~2 %: bench/profiler/README.md, run 7). Runs as
in gemm_form_study.py; every one is calibration. Needs python3-numpy and python3-scipy.
"""
import argparse
import random

import numpy as np

import gemm_form_study as form


class Plain:  # the model's form, no candidate term
    fine_tiles = l2 = wave_fit = in_out = misaligned_tiles = in_times_out = False
    max_split = 32
    narrow_tiles = False
    softmin = 0.0


def check(fit_rows, check_rows):
    errors = []
    for d in ["bf16", "fp16", "tf32"]:
        p = form.fit(fit_rows, d, Plain)
        e, _ = form.errors(p, check_rows, d, Plain)
        errors.extend(e)
    a = np.abs(errors)
    return 100 * np.median(a), 100 * np.percentile(a, 95)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fit", default="S")
    ap.add_argument("--targets", default="D,T,A")
    ap.add_argument("--extra", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    opts = ap.parse_args()
    flops = lambda g: 2.0 * g["m"] * g["n"] * g["k"]
    checked = {"A", "C0", "D", "S", "T"}  # runs with a check set (B repeats A's shapes, C C0's)
    base = form.load(opts.fit, "fit")
    for target in opts.targets.split(","):
        pool = [g for r in sorted(checked - {target, opts.fit}) for g in form.load(r, "check")]
        big = [g for g in pool if flops(g) > 8e10]
        small = [g for g in pool if flops(g) <= 8e10]
        line = [f"fit {opts.fit} check {target}: alone %.1f / %.1f %%" % check(base, form.load(target, "check"))]
        for name, src in [("above 8e10", big), ("at or under 8e10", small)]:
            extra = random.Random(opts.seed).sample(src, min(opts.extra, len(src)))
            line.append(f"+{len(extra)} {name} %.1f / %.1f %%" % check(base + extra, form.load(target, "check")))
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    main()
