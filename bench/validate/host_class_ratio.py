#!/usr/bin/env python3
"""Host-bound decoders against each other and against the probe's GPT pass, measured in the same
rounds and predicted at one profile (h25h, session 25; issue 19 item 6).

  python3 bench/validate/host_class_ratio.py BUILD PROFILE_FOLDER ROUNDS_FOLDER... [--ref hf-cerebras-gpt-111m]

(a folder without the reference model takes its first model as the reference)

ROUNDS_FOLDER: a host_drift_check.py output (host_drift.json): per round the framework probe's GPT
pass and micro-batch-1 steps of several transformers decoders, all on one host within seconds, so
a ratio of two of them cancels the host of the moment. PROFILE_FOLDER: a calibration library
folder whose probe reports (compare_all.py's merge) give the model's predictions; each model's
micro-batch-1 single-GPU prediction is read from the calibration suite file that has that row
(`xdeep_validate compare` at that one profile). Prints per model: the median over rounds of its
step over the reference model's and over the probe's GPT pass, the rounds' range, and the model's
same two ratios. A class whose measured ratio to the reference differs from the model's is
counted wrong relative to that class; a common offset against the probe's pass is not a count of
any one class.
"""
import argparse
import glob
import json
import os
import re
import statistics as st
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_all  # noqa: E402

ROW = re.compile(r"^(\S+)\s+single x1 mb1\s+([\d.]+)\s+([\d.]+)")


def predictions(build, profile, models):
    """{model: predicted mb1 single-GPU step (ms)} at `profile`, from the calibration suite files
    that measured each model."""
    out = {}
    for suite in sorted(glob.glob(os.path.join(HERE, "data", "calibration", "*", "suite_single*.json"))):
        text = open(suite).read()
        if not any(f'"{m}"' in text for m in models if m not in out):
            continue
        p = subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare",
                            "--workloads", os.path.join(HERE, "workloads"), "--profile", profile,
                            "--runs", suite], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            m = ROW.match(line.strip())
            if m and m[1] in models and m[1] not in out:
                out[m[1]] = float(m[3])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("profile_folder")
    ap.add_argument("rounds", nargs="+")
    ap.add_argument("--ref", default="hf-cerebras-gpt-111m")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        profile = compare_all.profile_for(args.build, os.path.abspath(args.profile_folder), tmp)
        probe_gpt = next(e["median_s"] for e in json.load(open(os.path.join(args.profile_folder, "framework.json")))
                         ["framework"] if e.get("model") == "gpt" and e.get("hidden") == 128 and e.get("ranks", 1) == 1)
        for folder in args.rounds:
            d = json.load(open(os.path.join(folder, "host_drift.json")))
            ws = [w for w in d["windows"] if w.get("phase", "alone") == "alone"]
            rounds = sorted({w["round"] for w in ws})
            med = {(w["round"], w["kind"], w["model"]): st.median(w["times_s"]) for w in ws}
            models = sorted({w["model"] for w in ws if w["kind"] == "train"})
            ref = args.ref if args.ref in models else models[0]  # a folder without it: its first model
            pred = predictions(args.build, profile, models)
            print(f"{folder}: {len(rounds)} rounds; model at {os.path.basename(os.path.normpath(args.profile_folder))}'s "
                  f"profile (its probe GPT pass {probe_gpt * 1e3:.2f} ms)")
            print(f"  {'model':24} {'/ ' + ref[3:]:>22} {'model':>6}  {'/ probe GPT pass':>20} {'model':>6}")
            for m in models:
                rr = [med[(r, "train", m)] / med[(r, "train", ref)] for r in rounds
                      if (r, "train", m) in med and (r, "train", ref) in med]
                rp = [med[(r, "train", m)] / med[(r, "probe", "gpt")] for r in rounds if (r, "train", m) in med]
                mr = pred[m] / pred[ref] if m in pred and ref in pred else float("nan")
                mp = pred[m] / (probe_gpt * 1e3) if m in pred else float("nan")
                print(f"  {m:24} {st.median(rr):6.3f} ({min(rr):.2f}-{max(rr):.2f}) {mr:6.3f}  "
                      f"{st.median(rp):6.2f} ({min(rp):.2f}-{max(rp):.2f}) {mp:6.2f}")


if __name__ == "__main__":
    main()
