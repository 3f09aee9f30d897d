#!/usr/bin/env python3
"""How much one reported run's error says about its neighbours' (issue 19, item 6, "one reported
run improves its neighbours").

xdeep_validate's learning check reports each model's pick, fits the daemon's correction from that
one run (ScalingCorrection over log2 GPUs and micro-batch: one run gives a Gaussian-process mean that
carries log(measured / predicted) x (1/3 + 2/3 exp(-d^2 / 2)) to a configuration d doublings away)
and re-predicts the configurations within one doubling of micro-batch and of GPUs. This script
re-predicts every committed library run with the current build, pairs each pick's error with each
neighbour's, and prints:
  * which modes the neighbours are in (a report corrects what it measured only if they share it),
  * how the pick's log error and the neighbour's go together (correlation, same sign, slope),
  * the neighbours' step-time MAPE before and after for the daemon's carry and for a carry scaled
    by S (f = r^S), per run and pooled.

    python3 bench/validate/learning_carry.py BUILD [--set calibration|heldout|all] [--carry S ...]
"""
import argparse
import glob
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

import compare_all

PICK = re.compile(r"^pick (\S+)\s*: tuner (\S+)\s+x(\d+)\s+mb(\d+)")


def predicted_rows(build, folder, tmp):
    """Rows (model, mode, gpus, mb, measured, predicted) and each model's pick."""
    profile = compare_all.profile_for(build, folder, tmp)
    runs = sorted(glob.glob(os.path.join(folder, "suite_*.json")))
    p = subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare",
                        "--workloads", os.path.join(compare_all.HERE, "workloads"), "--profile", profile,
                        "--runs", *runs], capture_output=True, text=True)
    rows, picks = [], {}
    for line in p.stdout.splitlines():
        m = compare_all.ROW.match(line.strip())
        if m:
            rows.append((m[1], m[2], int(m[3]), int(m[4]), float(m[5]), float(m[6])))
        m = PICK.match(line.strip())
        if m:
            picks[m[1]] = (m[2], int(m[3]), int(m[4]))
    return rows, picks


def neighbour_pairs(rows, picks):
    """(pick row, neighbour row, squared log2 distance) as xdeep_validate's learning check pairs them."""
    for model, (mode, gpus, mb) in picks.items():
        pick = next((r for r in rows if r[:4] == (model, mode, gpus, mb)), None)
        if pick is None:
            continue
        for r in rows:
            if r[0] != model or r is pick:
                continue
            dm, dg = math.log2(r[3] / mb), math.log2(r[2] / gpus)
            if abs(dm) <= 1 and abs(dg) <= 1:
                yield pick, r, dm * dm + dg * dg


def daemon_share(d2):
    # One run, CorrectionOptions' defaults (prior_runs 2, length 1 doubling).
    return 1 / 3 + 2 / 3 * math.exp(-d2 / 2)


def mape(pairs):
    return 100 * sum(abs(p / m - 1) for m, p in pairs) / len(pairs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--set", default="all", choices=["calibration", "heldout", "all"])
    ap.add_argument("--carry", type=float, nargs="*", default=[0.35, 0.0])
    args = ap.parse_args()
    sets = ["calibration", "heldout"] if args.set == "all" else [args.set]
    folders = [f for s in sets for f in sorted(glob.glob(os.path.join(compare_all.HERE, "data", s, "*library*")))
               if glob.glob(os.path.join(f, "suite_*.json"))]
    schemes = [("daemon", None)] + [(f"r^{s:g}", s) for s in args.carry]
    pooled = {name: ([], []) for name, _ in schemes}
    logs, modes = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            rows, picks = predicted_rows(args.build, folder, tmp)
            pairs = list(neighbour_pairs(rows, picks))
            if not pairs:
                continue
            cells = []
            for name, s in schemes:
                before, after = [], []
                for pick, r, d2 in pairs:
                    ratio = pick[4] / pick[5]
                    share = daemon_share(d2) if s is None else s
                    before.append((r[4], r[5]))
                    after.append((r[4], r[5] * ratio ** share))
                pooled[name][0].extend(before)
                pooled[name][1].extend(after)
                cells.append(f"{name} {mape(before):.1f} -> {mape(after):.1f}")
            print(f"{os.path.basename(folder):42s} {len(pairs):2d} neighbours: " + "; ".join(cells))
            for pick, r, _ in pairs:
                logs.append((math.log(pick[4] / pick[5]), math.log(r[4] / r[5])))
                key = f"{pick[1]} -> {r[1]}"
                modes[key] = modes.get(key, 0) + 1
    if not logs:
        sys.exit("no run has a pick with neighbours")
    print("pooled: " + "; ".join(f"{n} {mape(b):.2f} -> {mape(a):.2f} %" for n, (b, a) in pooled.items()))
    same = sum(n for k, n in modes.items() if k.split(" -> ")[0] == k.split(" -> ")[1])
    print(f"pairs: {len(logs)}, in the pick's own mode {same}; " +
          ", ".join(f"{k} {n}" for k, n in sorted(modes.items(), key=lambda kv: -kv[1])))
    x, y = [a for a, _ in logs], [b for _, b in logs]
    agree = sum(1 for a, b in logs if a * b > 0)
    print(f"pick's log error vs neighbour's: correlation {statistics.correlation(x, y):+.2f}, "
          f"same sign {agree} of {len(logs)}, least-squares slope {statistics.linear_regression(x, y).slope:+.2f} "
          f"(the daemon carries {daemon_share(2):.2f} to a neighbour one doubling away in both)")


if __name__ == "__main__":
    main()
