#!/usr/bin/env python3
"""Calibration rows by where they lie against the host / GPU crossover (h26h, session 26; issue 19
item 6).

  python3 bench/validate/host_crossover.py BUILD [--set calibration] [--modes single,ddp,pp]
                                                 [--p 2,3,4,8]

For every library folder of the set (compare_all.py's merge of its probe reports), `xdeep_validate
compare --json` gives each row's measured step, the model's prediction and its passes' kernel time
D and host time H (all micro-batches). Rows are binned by D / H (host-bound below 1, GPU-bound
above); per bin: rows, mean and median signed error, and the signed error if the passes' L2 were
another p-norm (the step moved by (H^p + D^p)^(1/p) - (H^2 + D^2)^(1/2), everything else as
predicted: an approximation per micro-batch's pass, exact for single-GPU steps of one micro-batch
where the optimizer and communication are small). Says at which D / H the model's L2 misses and
whether a sharper combination would close it, without a patched build.
"""
import argparse
import collections
import glob
import json
import os
import statistics as st
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_all  # noqa: E402

BINS = [0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5, 1e9]


def rows_of(build, folder, tmp):
    profile = compare_all.profile_for(build, folder, tmp)
    out = os.path.join(tmp, os.path.basename(folder) + ".rows.json")
    runs = sorted(glob.glob(os.path.join(folder, "suite_*.json")))
    subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare",
                    "--workloads", os.path.join(HERE, "workloads"), "--profile", profile,
                    "--runs", *runs, "--json", out], capture_output=True, text=True)
    with open(out) as f:
        doc = json.load(f)
    rows = doc["runs"] if isinstance(doc, dict) else doc
    return [dict(r, folder=os.path.basename(folder)) for r in rows if "predicted_host_s" in r]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--set", default="calibration")
    ap.add_argument("--modes", default="single,ddp,pp")
    ap.add_argument("--p", default="2,3,4,8")
    ap.add_argument("--family", default="", help="model name prefix (hf-, timm-, tv-); all when empty")
    ap.add_argument("--host-scale", default="1", help="also scale the passes' host time by these (grid with --p)")
    args = ap.parse_args()
    modes = set(args.modes.split(","))
    ps = [float(p) for p in args.p.split(",")]
    folders = sorted(glob.glob(os.path.join(HERE, "data", args.set, "*library*")))
    rows = []
    with tempfile.TemporaryDirectory(prefix="h26h-crossover.") as tmp:
        for folder in folders:
            if not glob.glob(os.path.join(folder, "suite_*.json")):
                continue  # a run prepared, not made yet (compare_all.py skips it too)
            rows += [r for r in rows_of(args.build, folder, tmp)
                     if r["mode"] in modes and r["model"].startswith(args.family)]
    by_bin = collections.defaultdict(list)
    for r in rows:
        h, d = r["predicted_host_s"], r["predicted_kernel_s"]
        x = d / h if h > 0 else 1e9
        b = next(i for i in range(len(BINS) - 1) if BINS[i] <= x < BINS[i + 1])
        errs = []
        for p in ps:
            moved = (h ** p + d ** p) ** (1 / p) - (h * h + d * d) ** 0.5
            errs.append(100 * ((r["predicted_step_s"] + moved) / r["step_s"] - 1))
        by_bin[b].append((r, errs))
    print(f"{len(rows)} rows ({args.set}, modes {','.join(sorted(modes))}{', ' + args.family if args.family else ''})")
    head = "  ".join(f"p={p:g}: mean / |mean|" for p in ps)
    print(f"{'D / H':12} {'rows':>5}   {head}")
    tot = collections.defaultdict(list)
    for b in sorted(by_bin):
        cells = []
        for j, p in enumerate(ps):
            e = [errs[j] for _, errs in by_bin[b]]
            tot[p] += e
            cells.append(f"{st.mean(e):+6.1f} / {st.mean(map(abs, e)):5.1f}")
        lo, hi = BINS[b], BINS[b + 1]
        label = f"{lo:g}-{hi:g}" if hi < 1e8 else f">{lo:g}"
        print(f"{label:12} {len(by_bin[b]):5}   " + "       ".join(cells))
    print(f"{'all':12} {len(rows):5}   " + "       ".join(
        f"{st.mean(tot[p]):+6.1f} / {st.mean(map(abs, tot[p])):5.1f}" for p in ps))
    scales = [float(k) for k in args.host_scale.split(",")]
    if scales != [1.0]:
        print("\nall rows, host x k and the p-norm: mean signed / MAPE (%)")
        print("k      " + "  ".join(f"p={p:<13g}" for p in ps))
        for k in scales:
            cells = []
            for p in ps:
                e = []
                for bucket in by_bin.values():
                    for r, _ in bucket:
                        h, d = r["predicted_host_s"], r["predicted_kernel_s"]
                        moved = ((k * h) ** p + d ** p) ** (1 / p) - (h * h + d * d) ** 0.5
                        e.append(100 * ((r["predicted_step_s"] + moved) / r["step_s"] - 1))
                cells.append(f"{st.mean(e):+5.1f} / {st.mean(map(abs, e)):4.1f}")
            print(f"{k:<6g} " + "  ".join(cells))


if __name__ == "__main__":
    main()
