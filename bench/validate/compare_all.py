#!/usr/bin/env python3
"""Every committed library run re-predicted by one build of the model (issue 19, item 5).

  compare_all.py BUILD [--set calibration|heldout|all] [--rows] [--misses PCT]

For each folder of bench/validate/data/{calibration,heldout}/*library*: its probe reports
merged as the daemon keeps them (`xdeep-probe merge` of compute, framework,
framework_2ranks and coll_2gpu; a folder's `profile_with_*.json` where it has one, named
in its README), then `xdeep_validate compare` of its suite files. Prints each folder's
step-time and memory MAPE per mode (the mean signed error in brackets) and the pooled
figures per set, so a model change can
be judged on every calibration configuration at once: overall error down, no mode worse.
--misses PCT lists every configuration off by more than PCT %, marking those whose measured
step was no faster than the next larger micro-batch's of the same run and mode ("inverted":
a launch-bound step measured while the host ran slow; no model of the step can follow it).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROW = re.compile(r"^(\S+)\s+(single|ddp|fsdp|tp|pp)\s+x(\d+)\s+mb(\d+)\s+([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)%"
                 r"\s+([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)%")


def profile_for(build, folder, tmp):
    own = sorted(glob.glob(os.path.join(folder, "profile_with_*.json")))
    if own:
        return own[0]
    reports = [os.path.join(folder, f + ".json") for f in ("compute", "framework", "framework_2ranks", "coll_2gpu")]
    reports = [r for r in reports if os.path.exists(r)]
    out = os.path.join(tmp, os.path.basename(folder) + ".profile.json")
    subprocess.run([os.path.join(build, "profiler", "xdeep-probe"), "merge", *reports, "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def compare(build, folder, profile):
    runs = sorted(glob.glob(os.path.join(folder, "suite_*.json")))
    p = subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare",
                        "--workloads", os.path.join(HERE, "workloads"), "--profile", profile,
                        "--runs", *runs], capture_output=True, text=True)
    rows = []
    for line in p.stdout.splitlines():
        m = ROW.match(line.strip())
        if m:
            rows.append(dict(model=m[1], mode=m[2], gpus=int(m[3]), mb=int(m[4]), step=float(m[5]),
                             step_pred=float(m[6]), step_err=float(m[7]), mem=float(m[8]),
                             mem_pred=float(m[9]), mem_err=float(m[10])))
    if not rows:
        sys.exit(f"{folder}: compare printed no rows:\n{p.stdout}\n{p.stderr}")
    return rows


def summary(rows):
    by, signed = defaultdict(list), defaultdict(list)
    for r in rows:
        by[r["mode"]].append(abs(r["step_err"]))
        signed[r["mode"]].append(r["step_err"])
    step = sum(abs(r["step_err"]) for r in rows) / len(rows)
    mem = sum(abs(r["mem_err"]) for r in rows) / len(rows)
    over = sum(abs(r["step_err"]) > 25 for r in rows)
    modes = ", ".join(f"{m} {sum(v) / len(v):.1f} ({sum(signed[m]) / len(v):+.1f})" for m, v in sorted(by.items()))
    return f"{step:5.1f} % ({len(rows)}; {modes}) >25 %: {over}  memory {mem:.1f} %"


def print_misses(rows, pct):
    """Configurations off by more than pct %, by mode and model; "inverted" where the measured
    step was no faster than the same run and mode's next larger micro-batch."""
    steps = defaultdict(dict)
    for r in rows:
        steps[(r["run"], r["model"], r["mode"])][r["mb"]] = r["step"]
    misses = sorted((r for r in rows if abs(r["step_err"]) > pct), key=lambda r: (r["mode"], r["model"], r["mb"]))
    print(f"off by more than {pct:g} %: {len(misses)}")
    for r in misses:
        same = steps[(r["run"], r["model"], r["mode"])]
        larger = [mb for mb in sorted(same) if mb > r["mb"]]
        note = ""
        if larger and same[larger[0]] <= r["step"]:
            note = f"  inverted: mb{larger[0]} measured {same[larger[0]]:.1f} ms"
        print(f"   {r['run']:50} {r['model']:22} {r['mode']:6} mb{r['mb']:<4} {r['step']:8.1f} {r['step_pred']:8.1f}"
              f" {r['step_err']:+6.1f}%{note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--set", choices=["calibration", "heldout", "all"], default="all")
    ap.add_argument("--rows", action="store_true", help="print every configuration's errors too")
    ap.add_argument("--misses", type=float, metavar="PCT",
                    help="list the configurations whose step time is off by more than PCT %%")
    args = ap.parse_args()
    sets = ["calibration", "heldout"] if args.set == "all" else [args.set]
    pooled = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for s in sets:
            for folder in sorted(glob.glob(os.path.join(HERE, "data", s, "*library*"))):
                if not glob.glob(os.path.join(folder, "suite_*.json")):
                    continue  # a run prepared, not made yet
                rows = compare(args.build, folder, profile_for(args.build, folder, tmp))
                for r in rows:
                    r["run"] = f"{s}/{os.path.basename(folder)}"
                pooled[s] += rows
                print(f"{s}/{os.path.basename(folder)}: {summary(rows)}")
                if args.rows:
                    for r in rows:
                        print(f"   {r['model']:24} {r['mode']:6} mb{r['mb']:<4} {r['step']:8.1f} {r['step_pred']:8.1f}"
                              f" {r['step_err']:+6.1f}%  mem {r['mem_err']:+6.1f}%")
    if args.misses is not None:
        print_misses([r for s in sets for r in pooled[s]], args.misses)
    for s in sets:
        if pooled[s]:
            print(f"ALL {s}: {summary(pooled[s])}")
    if sum(bool(pooled[s]) for s in sets) > 1:
        print(f"ALL: {summary([r for s in sets for r in pooled[s]])}")


if __name__ == "__main__":
    main()
