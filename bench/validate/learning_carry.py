#!/usr/bin/env python3
"""How much one reported run's error says about its neighbours' (issue 19, item 6, "one reported
run improves its neighbours").

xdeep_validate's learning check reports each model's pick, fits the daemon's correction from that
one run and re-predicts the configurations within one doubling of micro-batch and of GPUs. The
daemon learns by component (tuner/step_time_correction.h): the pick's error becomes a factor on the
component of its step the model says set it (the GPU's kernel time or the host's launch time of
its compute), carried over log2 GPUs and micro-batch by a Gaussian-process mean (one run: x (1/3 +
2/3 exp(-d^2 / 2)) of its log), and applied only to configurations of the pick's own parallel mode,
recombined by the model's rule. This script re-predicts every committed library run with a build,
pairs each pick with each neighbour, and prints per run and pooled:
  * the neighbours, and how many share the pick's mode (only those can move),
  * their step-time MAPE before, after the daemon's correction by component (from
    `xdeep_validate compare --json`: the daemon's own code), and after the whole-step carry that
    daemons before it used (the pick's measured / predicted on every neighbour's whole step, with
    the same Gaussian-process share), computed here for comparison,
  * how the pick's log error and the neighbours' go together, by mode pair.

    python3 bench/validate/learning_carry.py BUILD [--set calibration|heldout|all|script] [--folders F...]
"""
import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

import compare_all


def script_run(folder):
    """A run of the project's own measure_pytorch.py (GPT presets and ResNet-50, single-GPU
    micro-batch sweeps beside DDP and FSDP), as bench/validate/CMakeLists.txt compares it."""
    return not glob.glob(os.path.join(folder, "suite_*.json")) and os.path.exists(os.path.join(folder, "profile.json"))


def compared(build, folder, tmp):
    """compare --json's rows of a folder."""
    out = os.path.join(tmp, os.path.basename(folder) + ".compare.json")
    if script_run(folder):
        runs = sorted(f for k in ("single", "ddp", "fsdp") for f in glob.glob(os.path.join(folder, k + "*.json")))
        args = ["--profile", os.path.join(folder, "profile.json")]
    else:
        runs = sorted(glob.glob(os.path.join(folder, "suite_*.json")))
        args = ["--workloads", os.path.join(compare_all.HERE, "workloads"),
                "--profile", compare_all.profile_for(build, folder, tmp)]
    p = subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare", *args,
                        "--json", out, "--runs", *runs], capture_output=True, text=True)
    if p.returncode not in (0, 1) or not os.path.exists(out):
        sys.exit(f"{folder}: compare failed:\n{p.stdout[-2000:]}\n{p.stderr}")
    with open(out) as f:
        return [r for r in json.load(f)["runs"] if "step_s" in r]


def neighbour_pairs(rows):
    """(pick row, neighbour row, squared log2 distance) as xdeep_validate's learning check pairs them."""
    for pick in (r for r in rows if r.get("pick")):
        for r in rows:
            if r["model"] != pick["model"] or r is pick or not r.get("neighbour"):
                continue
            dm, dg = math.log2(r["micro_batch"] / pick["micro_batch"]), math.log2(r["gpus"] / pick["gpus"])
            yield pick, r, dm * dm + dg * dg


def gp_share(d2):
    # One run, CorrectionOptions' defaults (prior_runs 2, length 1 doubling).
    return 1 / 3 + 2 / 3 * math.exp(-d2 / 2)


def mape(pairs):
    return 100 * sum(abs(p / m - 1) for m, p in pairs) / len(pairs) if pairs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--set", default="all", choices=["calibration", "heldout", "all", "script"],
                    help="the library runs of calibration/, heldout/ or both; script: the calibration runs "
                         "of measure_pytorch.py (single-GPU micro-batch sweeps: neighbours in the pick's mode)")
    ap.add_argument("--folders", nargs="*", help="these run folders instead of a set")
    args = ap.parse_args()
    if args.folders:
        folders = args.folders
    elif args.set == "script":
        folders = [f for f in sorted(glob.glob(os.path.join(compare_all.HERE, "data", "calibration", "*")))
                   if script_run(f) and glob.glob(os.path.join(f, "single*.json"))]
    else:
        sets = ["calibration", "heldout"] if args.set == "all" else [args.set]
        folders = [f for s in sets for f in sorted(glob.glob(os.path.join(compare_all.HERE, "data", s, "*library*")))
                   if glob.glob(os.path.join(f, "suite_*.json"))]
    pooled = {k: [] for k in ("before", "component", "whole", "same_before", "same_component", "same_whole")}
    logs, modes = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            rows = compared(args.build, folder, tmp)
            pairs = list(neighbour_pairs(rows))
            if not pairs:
                continue
            cell = {k: [] for k in pooled}
            for pick, r, d2 in pairs:
                ratio = pick["step_s"] / pick["predicted_step_s"]
                m = r["step_s"]
                whole = (m, r["predicted_step_s"] * ratio ** gp_share(d2))
                same = r["mode"] == pick["mode"]
                for key, value in (("before", (m, r["predicted_step_s"])), ("component", (m, r["learned_step_s"])),
                                   ("whole", whole)):
                    cell[key].append(value)
                    if same:
                        cell["same_" + key].append(value)
                logs.append((math.log(ratio), math.log(m / r["predicted_step_s"])))
                key = f"{pick['mode']}/{pick['bound']} -> {r['mode']}/{r['bound']}"
                modes[key] = modes.get(key, 0) + 1
            for k in pooled:
                pooled[k].extend(cell[k])
            print(f"{os.path.basename(folder):42s} {len(pairs):2d} neighbours ({len(cell['same_before'])} in the pick's "
                  f"mode): {mape(cell['before']):5.1f} -> by component {mape(cell['component']):5.1f}, whole step "
                  f"{mape(cell['whole']):5.1f} %" +
                  (f"; the pick's mode {mape(cell['same_before']):.1f} -> {mape(cell['same_component']):.1f} / "
                   f"{mape(cell['same_whole']):.1f} %" if cell["same_before"] else ""))
    if not logs:
        sys.exit("no run has a pick with neighbours")
    print(f"pooled over {len(pooled['before'])} neighbours: {mape(pooled['before']):.2f} -> by component "
          f"{mape(pooled['component']):.2f}, whole step {mape(pooled['whole']):.2f} %")
    if pooled["same_before"]:
        print(f"  of them in the pick's mode, {len(pooled['same_before'])}: {mape(pooled['same_before']):.2f} -> "
              f"by component {mape(pooled['same_component']):.2f}, whole step {mape(pooled['same_whole']):.2f} %")
    print("pairs (pick mode/bound -> neighbour mode/bound): " +
          ", ".join(f"{k} {n}" for k, n in sorted(modes.items(), key=lambda kv: -kv[1])))
    x, y = [a for a, _ in logs], [b for _, b in logs]
    agree = sum(1 for a, b in logs if a * b > 0)
    if len(logs) > 2:
        print(f"pick's log error vs neighbour's: correlation {statistics.correlation(x, y):+.2f}, "
              f"same sign {agree} of {len(logs)}, least-squares slope {statistics.linear_regression(x, y).slope:+.2f}")


if __name__ == "__main__":
    main()
