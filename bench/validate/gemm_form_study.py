#!/usr/bin/env python3
"""Which terms of a GEMM time model hold up out of sample (issue 19 item 1, calibration).

  gemm_form_study.py [--fine-tiles] [--l2] [--wave-fit] [--in-out] [--misaligned-tiles]
                     [--pairs D:A,D:C0,...] [--worst N]

A study, not the model: the tuner's model is tuner/gemm_model.cc. This re-states its
form in numpy (tiles of 128x256 down to 64x64 over 132 SMs in waves, split-k where
tiles leave SMs idle, a per-tile and a per-GEMM fixed time, the memory floor, one
rate per misaligned class and layout), fits it per precision to one run's probe
report (least squares on log time, scipy) and predicts another run's cuBLAS check
timings, for every pair of committed H100 runs. Each flag adds one candidate term:

  --fine-tiles        tile edges 64, 96, 128, 192, 256 (wgmma's widths), not powers of 2
  --l2                operands under 40 MB served at a fitted multiple of the bandwidth
                      (the timing loop re-reads the same operands; H100's L2 is 50 MB)
  --wave-fit          the partial last wave's cost fitted (0..1) instead of a whole wave
  --in-out            misaligned rate = the worse of the inputs' and the output's class
                      (instead of one class from the least aligned leading dimension)
  --misaligned-tiles  misaligned GEMMs on the large tiles only (pre-TMA kernels)
  --in-times-out      where inputs and output are both misaligned, both rate factors apply
  --max-split N       split k at most N ways (cuBLAS's heuristic splits less than the best)
  --narrow-tiles      also tiles 16 or 32 wide against 64 or 128 (wgmma's narrow N)
  --softmin TAU       the candidates' power mean (exponent -1/TAU) instead of the fastest:
                      cuBLAS's heuristic does not always pick the fastest kernel

Runs (bench/validate/data/): A = 2026-11-26_h100x2_library_heldout (fit 639 points,
check 360 shapes, seed 19), B = ..._heldout2 (fit 675, same 360), C0 / C = 2026-11-27
..._heldout / _heldout2 (check 240 shapes, seed 1127; C0 has no fit), D = ..._heldout3
(fit 675, check 240, seed 1203). Needs python3-numpy and python3-scipy.
"""
import argparse
import json
import os

import numpy as np
from scipy.optimize import least_squares

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "calibration")
RUNS = {"A": "2026-11-26_h100x2_library_heldout", "B": "2026-11-26_h100x2_library_heldout2",
        "C0": "2026-11-27_h100x2_library_heldout", "C": "2026-11-27_h100x2_library_heldout2",
        "D": "2026-11-27_h100x2_library_heldout3", "S": "2026-11-27_h100x2_gemm_seed3301",
        "T": "2026-11-27_h100x1_gemm_seed2719"}
SMS = 132
SPLITS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
PASSES = {"fwd": 0, "dgrad": 1, "wgrad": 2}


def load(run, kind):
    with open(os.path.join(DATA, RUNS[run], f"gemm_{kind}.json")) as f:
        return json.load(f)["gemm"]


def alignment(dim, eb):
    b = int(dim) * eb
    return min(b & -b, 16)


def arrays(rows, eb):
    """m, n, k, pass, and the alignment (bytes, <= 16) of the inputs' and the output's
    leading dimensions as nn.Linear holds them (gemm_model.cc MisalignmentOf)."""
    m, n, k = (np.array([g[d] for g in rows], float) for d in "mnk")
    ps = np.array([PASSES[g["pass"]] for g in rows])
    lead_in = [(g["k"], g["k"]) if g["pass"] == "fwd" else (g["k"], g["n"]) if g["pass"] == "dgrad"
               else (g["m"], g["n"]) for g in rows]
    a_in = np.array([min(alignment(x, eb), alignment(y, eb)) for x, y in lead_in])
    a_out = np.array([alignment(g["n"], eb) for g in rows])
    s = np.array([g["median_s"] for g in rows])
    return m, n, k, ps, a_in, a_out, s


def tiles(opts):
    edges = (64, 96, 128, 192, 256) if opts.fine_tiles else (64, 128, 256)
    out = [(a, b) for a in edges for b in edges if a * b <= 128 * 256]
    if opts.narrow_tiles:  # wgmma's narrow N (16, 32) against M 64 or 128, either operand first
        out += [(a, b) for a in (64, 128) for b in (16, 32)] + [(b, a) for a in (64, 128) for b in (16, 32)]
    return out


NAMES = ["peak", "small_tile", "tile_fixed", "fixed", "bandwidth", "store_bw", "split_fixed",
         "in2", "in4", "in8", "out2", "out4", "out8", "dgrad", "wgrad", "l2", "wave"]
START = [8e14, 0.05, 3e-7, 3e-6, 2.8e12, 3e12, 1e-6, 0.18, 0.32, 0.32, 0.13, 0.3, 0.3,
         1.0, 1.0, 1.3, 0.8]


def predict(p, m, n, k, ps, a_in, a_out, eb, opts):
    q = dict(zip(NAMES, p))
    cls = lambda a, c2, c4, c8: np.where(a >= 16, np.inf, np.where(a == 8, c8, np.where(a == 4, c4, c2)))
    r_in = cls(a_in, q["in2"], q["in4"], q["in8"])
    r_out = cls(a_out, q["out2"], q["out4"], q["out8"])
    if opts.in_out:
        factor = np.minimum(np.minimum(r_in, r_out), 1.0)
    elif opts.in_times_out:
        factor = np.minimum(r_in, 1.0) * np.minimum(r_out, 1.0)
    else:
        factor = np.where(a_in < 16, r_in, np.where(a_out < 16, r_out, 1.0))
    misaligned = (a_in < 16) | (a_out < 16)
    rate = q["peak"] * factor * np.where(ps == 1, q["dgrad"], np.where(ps == 2, q["wgrad"], 1.0))
    wave = q["wave"] if opts.wave_fit else 1.0
    best = np.full(m.shape, np.inf)
    soft_sum, soft_count = np.zeros(m.shape), np.zeros(m.shape)
    for tm, tn in tiles(opts):
        use = ~misaligned | (not opts.misaligned_tiles) | (tm * tn >= 128 * 128)
        count = np.ceil(m / tm) * np.ceil(n / tn)
        eff = 1.0 / (1.0 + q["small_tile"] * (256.0 / tm + 256.0 / tn - 3.0))
        for s in SPLITS:
            if s > opts.max_split:
                break
            ok = use & ((s == 1) | ((count * s <= SMS) & (k / s >= 256)))
            kk = np.ceil(k / s / 64) * 64
            units = count * s / SMS
            waves = units + wave * (np.ceil(units) - units)
            t = waves * (2 * tm * tn * kk / (rate / SMS * eff) + q["tile_fixed"]
                         + tm * tn * eb * SMS / q["store_bw"])
            if s > 1:
                t = t + 8.0 * m * n * s / q["bandwidth"] + q["split_fixed"]
            best = np.where(ok, np.minimum(best, t), best)
            if opts.softmin:
                soft_sum += np.where(ok, t ** (-1.0 / opts.softmin), 0.0)
                soft_count += ok
    if opts.softmin:  # a power mean below the fastest: the heuristic does not always pick it
        best = (soft_sum / np.maximum(soft_count, 1)) ** (-opts.softmin)
    byts = eb * (m * k + k * n + m * n)
    bw = q["bandwidth"] * (np.where(byts < 40e6, q["l2"], 1.0) if opts.l2 else 1.0)
    return q["fixed"] + np.maximum(best, byts / bw)


def fit(rows, dtype, opts):
    rows = [g for g in rows if g["dtype"] == dtype]
    eb = 4 if dtype == "tf32" else 2
    args = arrays(rows, eb)
    free = [i for i, nm in enumerate(NAMES)
            if (nm != "l2" or opts.l2) and (nm != "wave" or opts.wave_fit)]
    x0 = np.log(np.array(START) * np.where(np.array(NAMES) == "peak", 0.5 if dtype == "tf32" else 1, 1))

    def full(x):
        p = np.exp(x0.copy())
        p[free] = np.exp(x)
        return p

    def res(x):
        return np.log(predict(full(x), *args[:6], eb, opts)) - np.log(args[6])
    r = least_squares(res, x0[free], loss="soft_l1", f_scale=0.05, diff_step=1e-3, max_nfev=2000)
    return full(r.x)


def errors(p, rows, dtype, opts):
    rows = [g for g in rows if g["dtype"] == dtype]
    eb = 4 if dtype == "tf32" else 2
    args = arrays(rows, eb)
    return predict(p, *args[:6], eb, opts) / args[6] - 1, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in ["--fine-tiles", "--l2", "--wave-fit", "--in-out", "--misaligned-tiles"]:
        ap.add_argument(flag, action="store_true")
    ap.add_argument("--in-times-out", action="store_true")
    ap.add_argument("--max-split", type=int, default=32)
    ap.add_argument("--narrow-tiles", action="store_true")
    ap.add_argument("--softmin", type=float, default=0.0)
    ap.add_argument("--pairs", default="D:A,D:C0,D:D,C:A,C:D,B:D,B:A",
                    help="FIT:CHECK run letters, comma separated")
    ap.add_argument("--worst", type=int, default=0, help="list the N worst shapes of each pair")
    opts = ap.parse_args()
    fits = {}
    for pair in opts.pairs.split(","):
        fr, ck = pair.split(":")
        if fr not in fits:
            fits[fr] = {d: fit(load(fr, "fit"), d, opts) for d in ["bf16", "fp16", "tf32"]}
        e, rows = [], []
        for d in fits[fr]:
            x, r = errors(fits[fr][d], load(ck, "check"), d, opts)
            e.extend(x)
            rows.extend(r)
        a = np.abs(np.array(e))
        print(f"fit {fr} check {ck}: {len(a)} shapes, median {100 * np.median(a):.1f} %, "
              f"p95 {100 * np.percentile(a, 95):.1f} %")
        for i in np.argsort(-a)[:opts.worst]:
            g = rows[i]
            print(f"   {100 * e[i]:+6.1f} % {g['dtype']} {g['pass']:5} m={g['m']} n={g['n']} k={g['k']} "
                  f"{g['layer']}")


if __name__ == "__main__":
    main()
