#!/usr/bin/env python3
"""Which shapes make the GEMM model's 95th percentile (issue 19, item 1).

  gemm_tail.py BUILD_DIR [--seeds 6607,9127,...] [--fits own,others,self] [--kernels]

For every committed GEMM check seed (all calibration now), the C++ model
(`xdeep_validate gemm-check --worst 100000`) predicts each check shape, fitted

* own: to the seed's own probe report (what a held-out run fits to);
* others: to the seed's probe report plus every other seed of the same card (probe
  reports and cuBLAS-timed check shapes), as gemm_loso.py;
* self: to the seed's probe report plus its own check shapes (in sample: what the
  model's form cannot follow even when it has seen the shape).

Each shape is put in classes (precision, pass; memory-bound by the roofline with
the card's copy bandwidth; misaligned k / n / m (the leading dimensions that are
not 16-byte aligned); skinny m or n (<= 128); split-k as cuBLASLt's heuristic
named it, or algorithm 43's split inside its launch; the partial last wave of the
heuristic's tile grid; whether the kernel torch ran has the heuristic's tile) and
the tail (|error| > 15 %) is broken down by class: how many of the tail shapes
are in it, its own median / p95, and the pooled p95 without it. Comparing own,
others and self says how much of the tail is the fit points' coverage (others
fixes it) and how much the model's form (self does not).
All of this data is calibration.
"""
import argparse
import collections
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gemm_loso  # noqa: E402
from gemm_kernel_agreement import torch_tile  # noqa: E402

# card -> seed -> folder under data/ with a probe report of its own and a check.
SEEDS = gemm_loso.SEEDS
SMS = {"h100": 132, "h200": 132}
COPY_BW = {"h100": 3.0e12, "h200": 4.3e12}   # B/s, the probes' copy figures
PEAK16 = {"h100": 800e12, "h200": 900e12}    # FLOP/s, about the fitted bf16 peaks


def align(dim, eb):
    b = dim * eb
    return min(b & -b, 16)


def classes(card, g, kernel, torch_kernel):
    m, n, k, dt, ps = g["m"], g["n"], g["k"], g["dtype"], g["pass"]
    eb = 4 if dt == "tf32" else 2
    out = [f"dtype={dt}", f"pass={ps}"]
    peak = PEAK16[card] * (0.5 if eb == 4 else 1)
    flops_s = 2.0 * m * n * k / peak
    bytes_s = eb * (m * k + k * n + m * n) / COPY_BW[card]
    out.append("memory-bound" if bytes_s > flops_s else "compute-bound")
    if max(flops_s, bytes_s) < 15e-6:
        out.append("small(<15us roofline)")
    lead = {"fwd": ("k", "n"), "dgrad": ("k", "n"), "wgrad": ("m", "n")}[ps]
    dims = {"m": m, "n": n, "k": k}
    mis = [d for d in lead if align(dims[d], eb) < 16]
    out.append("misaligned " + "+".join(mis) if mis else "aligned")
    if min(m, n) <= 128:
        out.append("skinny m or n (<=128)")
    if min(m, n) <= 160 and k >= 8 * max(m, n):
        out.append("long k over a small output")
    if k <= 64:
        out.append("k <= 64")
    if kernel:
        algo, tm, tn, sk = kernel["algo"], kernel["tile_m"], kernel["tile_n"], kernel["split_k"]
        tiles = -(-m // tm) * -(-n // tn)
        if sk > 1:
            out.append("heuristic split-k")
        elif algo == 43 and tiles < SMS[card] and k >= 512:
            out.append("algo 43 segment-k")
        units = tiles * max(sk, 1) / SMS[card]
        frac = units - int(units)
        if units > 1 and 0 < frac <= 0.34:
            out.append("partial last wave <= 1/3")
        elif units < 0.5:
            out.append("under half a wave")
        out.append(f"heuristic tile {tm}x{tn}")
        if torch_kernel:
            r, c, split = torch_tile(torch_kernel)
            if r is not None:
                same = {r, c} == {tm, tn}
                out.append("torch ran heuristic's tile" if same else "torch ran another tile")
    return out


def run(build, fit_doc, folder, use_algos, tmp):
    out = gemm_loso.gemm_check(build, fit_doc, folder, use_algos, tmp, 100000)
    errors = {}
    for line in out.splitlines():
        mm = re.match(r"\s+([+-][\d.]+) %\s+predicted.*?(bf16|fp16|tf32)\s+(\w+)\s+m=(\d+)\s+n=(\d+)\s+k=(\d+)",
                      line)
        if mm:
            errors[(mm.group(2), mm.group(3), int(mm.group(4)), int(mm.group(5)),
                    int(mm.group(6)))] = float(mm.group(1)) / 100
    return errors


def quantile(v, q):
    v = sorted(v)
    return v[int(round(q * (len(v) - 1)))] if v else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--seeds", default="")
    p.add_argument("--fits", default="own,others,self")
    p.add_argument("--kernels", action="store_true", help="the kernel-aware model where algos exist")
    p.add_argument("--tail", type=float, default=0.15)
    args = p.parse_args()
    want = set(args.seeds.split(",")) - {""}
    rows = collections.defaultdict(list)  # fit -> [(card, seed, classes, error)]
    with tempfile.TemporaryDirectory() as tmp:
        for card, seeds in SEEDS.items():
            for seed, rel in seeds.items():
                if want and seed not in want:
                    continue
                folder = os.path.join(gemm_loso.DATA, rel)
                own = gemm_loso.fit_report(folder)
                has_algos = os.path.exists(os.path.join(folder, "check_algos.json"))
                kernels = {}
                if has_algos:
                    kernels = {gemm_loso.shape_key(a): a["kernel"]
                               for a in gemm_loso.load(os.path.join(folder, "check_algos.json"))["gemm_algos"]}
                check = gemm_loso.load(os.path.join(folder, "gemm_check.json"))["gemm"]
                docs = {}
                for fit in args.fits.split(","):
                    doc = dict(own)
                    doc["gemm"] = list(own["gemm"])
                    if fit == "others":
                        for other, orel in seeds.items():
                            if other != seed:
                                of = os.path.join(gemm_loso.DATA, orel)
                                doc["gemm"] += gemm_loso.fit_report(of)["gemm"]
                                doc["gemm"] += gemm_loso.checked_points(of)
                    elif fit == "self":
                        doc["gemm"] += gemm_loso.checked_points(folder)
                    docs[fit] = doc
                for fit, doc in docs.items():
                    errors = run(args.build, doc, folder, args.kernels and has_algos, tmp)
                    for g in check:
                        g = dict(g, **{"pass": g.get("pass", "fwd")})
                        key = (g["dtype"], g["pass"], g["m"], g["n"], g["k"])
                        if key not in errors:
                            continue
                        kernel = kernels.get(gemm_loso.shape_key(g))
                        cl = [f"card={card}", f"seed={seed}"] + classes(card, g, kernel,
                                                                         g.get("torch_kernel"))
                        rows[fit].append((cl, errors[key], key))
    for fit, rs in rows.items():
        e_all = [abs(e) for _, e, _ in rs]
        tail = [r for r in rs if abs(r[1]) > args.tail]
        print(f"\n== fit {fit}{' (kernels)' if args.kernels else ''}: {len(rs)} shapes, median "
              f"{100 * quantile(e_all, .5):.1f} %, p95 {100 * quantile(e_all, .95):.1f} %, "
              f"{len(tail)} beyond {100 * args.tail:.0f} %")
        names = sorted({c for cl, _, _ in rs for c in cl})
        print(f"  {'class':<32} {'shapes':>6} {'in tail':>8} {'tail %':>6} {'median':>6} {'p95':>6} "
              f"{'over':>5} {'under':>5} {'p95 without':>11}")
        for c in names:
            inside = [abs(e) for cl, e, _ in rs if c in cl]
            signed = [e for cl, e, _ in rs if c in cl and abs(e) > args.tail]
            outside = [abs(e) for cl, e, _ in rs if c not in cl]
            t = sum(1 for cl, e, _ in tail if c in cl)
            print(f"  {c:<32} {len(inside):6d} {t:8d} {100 * t / max(1, len(tail)):5.0f}% "
                  f"{100 * quantile(inside, .5):5.1f}% {100 * quantile(inside, .95):5.1f}% "
                  f"{sum(1 for e in signed if e > 0):5d} {sum(1 for e in signed if e < 0):5d} "
                  f"{100 * quantile(outside, .95):10.1f}%")


if __name__ == "__main__":
    main()
