#!/usr/bin/env python3
"""Peak memory of every committed library run, row by row, for one build or two (h24m, session 24).

  memory_rows.py BUILD [--before BUILD0|ROWS.json] [--save ROWS.json] [--set calibration|heldout|all] [--rows] [--slopes [--top2]]
                 [--worse PCT]

compare_all.py's pass (each folder's probes merged, `xdeep_validate compare` of its suite files),
read for the memory column: each folder's peak-memory MAPE (mean signed error in brackets) and the
pooled figure; with --before, both builds side by side and the keep rule's check (the memory
figure better overall, no folder worse by more than ~0.3 point); --rows lists every configuration
(measured and predicted GiB); --slopes the growth per sample of each model and mode over its
micro-batches (measured and predicted MB per sample, between its smallest and largest measured
micro-batch), which separates what a model counts per sample (activations, logits) from what it
counts once (weights, optimizer state, buffers); --worse PCT lists the rows whose error grew by
more than PCT points between the builds.
"""
import argparse
import glob
import json
import os
import tempfile
from collections import defaultdict

import compare_all as ca


def rows_of(build, sets):
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in sets:
            for folder in sorted(glob.glob(os.path.join(ca.HERE, "data", s, "*library*"))):
                if not glob.glob(os.path.join(folder, "suite_*.json")):
                    continue
                for r in ca.compare(build, folder, ca.profile_for(build, folder, tmp)):
                    r["run"] = os.path.basename(folder)
                    out.append(r)
    return out


def mape(rows):
    return sum(abs(r["mem_err"]) for r in rows) / len(rows), sum(r["mem_err"] for r in rows) / len(rows)


def by_run(rows):
    d = defaultdict(list)
    for r in rows:
        d[r["run"]].append(r)
    return d


def slopes(rows, top2=False):
    groups = defaultdict(dict)
    for r in rows:
        groups[(r["run"], r["model"], r["mode"], r["gpus"])][r["mb"]] = r
    for (run, model, mode, gpus), v in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        mbs = sorted(v)
        if len(mbs) < 2:
            continue
        a, b = v[mbs[-2] if top2 else mbs[0]], v[mbs[-1]]
        n = b["mb"] - a["mb"]
        meas = (b["mem"] - a["mem"]) * 2 ** 30 / n / 1e6
        pred = (b["mem_pred"] - a["mem_pred"]) * 2 ** 30 / n / 1e6
        print(f"   {model:24} {mode:6} x{gpus} mb{a['mb']}-{b['mb']:<4} {run[11:]:28} per sample {meas:8.1f} MB"
              f" predicted {pred:8.1f} ({(pred / meas - 1) * 100 if meas else 0:+6.1f} %);"
              f" at mb{a['mb']} {a['mem']:6.2f} GiB predicted {a['mem_pred']:6.2f} ({a['mem_err']:+5.1f} %)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--before", help="a build, or rows saved by --save (the workload files then as they were)")
    ap.add_argument("--save", metavar="JSON", help="write this build's rows")
    ap.add_argument("--set", choices=["calibration", "heldout", "all"], default="calibration")
    ap.add_argument("--rows", action="store_true")
    ap.add_argument("--slopes", action="store_true")
    ap.add_argument("--top2", action="store_true", help="slopes between the two largest micro-batches "
                    "(where activations set the peak), not the smallest and largest")
    ap.add_argument("--worse", type=float, metavar="PCT")
    args = ap.parse_args()
    sets = ["calibration", "heldout"] if args.set == "all" else [args.set]
    after = rows_of(args.build, sets)
    if args.save:
        with open(args.save, "w") as f:
            json.dump(after, f)
    before = None
    if args.before and args.before.endswith(".json"):
        with open(args.before) as f:
            before = json.load(f)
    elif args.before:
        before = rows_of(args.before, sets)
    runs_after = by_run(after)
    runs_before = by_run(before) if before else {}
    worst = 0.0
    for run, rows in runs_after.items():
        m, s = mape(rows)
        if before:
            m0, s0 = mape(runs_before[run])
            worst = max(worst, m - m0)
            print(f"{run:40} memory {m0:5.2f} ({s0:+5.1f}) -> {m:5.2f} ({s:+5.1f}) %  [{m - m0:+.2f}]  ({len(rows)})")
        else:
            print(f"{run:40} memory {m:5.2f} ({s:+5.1f}) %  ({len(rows)})")
        if args.rows:
            for r in rows:
                print(f"   {r['model']:24} {r['mode']:6} x{r['gpus']} mb{r['mb']:<4} {r['mem']:7.2f} {r['mem_pred']:7.2f}"
                      f" GiB {r['mem_err']:+6.1f}%")
    if args.slopes:
        print("growth per sample (smallest to largest measured micro-batch):")
        slopes(after, args.top2)
    if before and args.worse is not None:
        old = {(r["run"], r["model"], r["mode"], r["mb"]): r for r in before}
        print(f"rows whose |error| grew by more than {args.worse:g} points:")
        for r in after:
            o = old.get((r["run"], r["model"], r["mode"], r["mb"]))
            if o and abs(r["mem_err"]) - abs(o["mem_err"]) > args.worse:
                print(f"   {r['run']:40} {r['model']:24} {r['mode']:6} mb{r['mb']:<4} {o['mem_err']:+6.1f} -> "
                      f"{r['mem_err']:+6.1f} %")
    m, s = mape(after)
    if before:
        m0, s0 = mape(before)
        print(f"ALL: memory {m0:.2f} ({s0:+.1f}) -> {m:.2f} ({s:+.1f}) % over {len(after)}; "
              f"worst folder {worst:+.2f} point")
    else:
        print(f"ALL: memory {m:.2f} ({s:+.1f}) % over {len(after)}")


if __name__ == "__main__":
    main()
