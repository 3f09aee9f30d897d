#!/usr/bin/env python3
"""Does the host time the model counts per architecture follow training's? (h24h, session 24;
issue 19 item 6)

  python3 bench/validate/host_arch_study.py BUILD [--json OUT]    # ~4 minutes on a 2-core VM

For every calibration library folder with single-GPU suites (compare_all.py's profile merge):
the profile with the framework probe's one-rank GPT and ResNet passes both scaled by k in
0.5-2.0 (so the host figure the model reads, their geometric mean since h23h, scales by k), and
for each host-sensitive row (its prediction moving at least 0.6x as fast as k) the k* at which
prediction meets measurement. A run's host level is the median k* of its rows at micro-batch 1;
each row's k* over its run's level then says how far the model's count of that architecture's
host work is from training's, the host of the moment divided out. Printed by the class the
workload file names (transformers' model class, timm / torchvision) and micro-batch: rows, the
mean of log(k* / level) and its standard error. A class whose rows sit above 0 in run after run
launches more host work than the model counts for it.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics as st
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_all  # noqa: E402
from host_reading_study import implied_host_factors  # noqa: E402  (the k sweep per row)


def model_class(model):
    text = open(os.path.join(HERE, "workloads", model + ".toml")).read()
    m = re.search(r"\b([A-Z][A-Za-z0-9]*(?:ForCausalLM|LMHeadModel|ForMaskedLM))\b", text)
    if m:
        return m[1]
    if re.search(r'^family\s*=\s*"cnn"', text, re.M):
        return "cnn:" + model.split("-")[0]
    return "vit:" + model.split("-")[0]


def rows_of(build, folder, tmp):
    runs = sorted(glob.glob(os.path.join(folder, "suite_single_*.json")))
    if not runs:
        return []
    profile = compare_all.profile_for(build, folder, tmp)
    return [dict(run=os.path.basename(folder), model=model, mb=mb, cls=model_class(model),
                 kstar=kstar, sens=sens, err=err)
            for model, mb, _, kstar, sens, err in implied_host_factors(build, profile, runs, tmp)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for folder in sorted(glob.glob(os.path.join(HERE, "data", "calibration", "*library*"))):
            got = rows_of(args.build, folder, tmp)
            print(f"{os.path.basename(folder)}: {len(got)} host-sensitive single-GPU rows", file=sys.stderr)
            rows += got
    level = {}
    for run in {r["run"] for r in rows}:
        ks = [r["kstar"] for r in rows if r["run"] == run and r["mb"] == 1]
        if ks:
            level[run] = st.median(ks)
    for r in rows:
        r["rel"] = math.log(r["kstar"] / level[r["run"]]) if r["run"] in level else None
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    print("log(k* / run level) by class and micro-batch (rows, runs, mean, standard error, k* mean)")
    by = defaultdict(list)
    for r in rows:
        if r["rel"] is not None:
            by[(r["cls"], min(r["mb"], 8))].append(r)
    for (cls, mb), rs in sorted(by.items()):
        x = [r["rel"] for r in rs]
        se = st.pstdev(x) / math.sqrt(len(x)) if len(x) > 1 else float("nan")
        print(f"  {cls:26} mb{mb:<2}{'+' if mb == 8 else ' '} rows {len(x):3} runs {len({r['run'] for r in rs}):2}"
              f"  mean {st.mean(x):+.3f}  se {se:.3f}  k* {st.mean(r['kstar'] for r in rs):.2f}"
              f"  ({', '.join(sorted({r['model'] for r in rs}))})")


if __name__ == "__main__":
    main()
