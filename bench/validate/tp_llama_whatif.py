#!/usr/bin/env python3
"""What the framework probe's Llama-style block figure does to TP rows (a check; rule not kept).

  tp_llama_whatif.py BUILD [--llama CHECK_FOLDER] [--folders F ...] [--all] [--compute-from F]

BUILD must be a build of branch h22t-tried (ac957ae, session 22), whose tuner charges each
Llama-style block (a workload with gated_mlp) under DTensor TP the probe's Llama-style block's
one-rank dispatch, (llama_tp_median_s - llama_median_s) / layers, plus 7 meetings of the ranks
at the GPT's cost per meeting, where the profile has those fields; main's tuner does not read
them (the rule was not kept: bench/validate/README.md, "h22t, session 22"), so with a main
build both columns agree.
No calibration run had them: the probe's Llama-style block first ran on 2x H200 on
2026-11-28 (data/checks/2026-11-28_h200x2_framework_probe_llama). This script copies that
check's Llama fields into each library folder's own framework reports (its GPT entries:
the one-rank file's into framework.json, the first two-rank file's into framework_2ranks.json,
which the tuner does not read), merges the profile as compare_all.py does, and prints every
TP row's prediction without the fields (the folder's own reports, any Llama fields removed) and with them, and the
tuner's Llama-style block figure (the check's one-rank dispatch + the folder's GPT meetings). The fields come from another host than the folder's run:
a check of the rule's direction and size, not a held-out figure.

Default folders: run 14 on 2x H200 (calibration since 1f38b7f). --all: every calibration
library folder with TP rows and a two-rank probe (hosts of both kinds: how the same copied
figure reads against each).
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_all  # noqa: E402

LLAMA_KEYS = ("llama_median_s", "llama_tp_median_s", "llama_tp_linears")
DEFAULT_CHECK = os.path.join(HERE, "data", "checks", "2026-11-28_h200x2_framework_probe_llama")


def llama_fields(path):
    with open(path) as f:
        for e in json.load(f).get("framework", []):
            if e.get("model") == "gpt" and "llama_tp_median_s" in e:
                return {k: e[k] for k in LLAMA_KEYS}, e.get("ranks", 1)
    return None, 0


def with_fields(src, dst, fields):
    """src's report with its GPT entries' Llama fields replaced by `fields` (none: removed)."""
    with open(src) as f:
        report = json.load(f)
    for e in report.get("framework", []):
        if e.get("model") == "gpt" and "tp_median_s" in e:
            for k in LLAMA_KEYS:
                e.pop(k, None)
            e.update(fields or {})
    with open(dst, "w") as f:
        json.dump(report, f)


def merged(build, folder, tmp, tag, one, two, compute_from=None):
    """The folder's profile with the Llama fields `one` (one rank) and `two` (two ranks) in
    place of its own; compute and collective reports from `compute_from` where it has none."""
    reports = []
    for name in ("compute", "framework", "framework_2ranks", "coll_2gpu"):
        src = os.path.join(folder, name + ".json")
        if not os.path.exists(src) and compute_from and name in ("compute", "coll_2gpu"):
            src = os.path.join(compute_from, name + ".json")
        if not os.path.exists(src):
            continue
        if name.startswith("framework"):
            dst = os.path.join(tmp, f"{os.path.basename(folder)}_{tag}_{name}.json")
            with_fields(src, dst, one if name == "framework" else two)
            src = dst
        reports.append(src)
    out = os.path.join(tmp, f"{os.path.basename(folder)}_{tag}.profile.json")
    subprocess.run([os.path.join(build, "profiler", "xdeep-probe"), "merge", *reports, "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def llama_figure(build, profile, suite):
    """The tuner's Llama-style block figure, as its profile label states it."""
    p = subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare",
                        "--workloads", os.path.join(HERE, "workloads"), "--profile", profile,
                        "--runs", suite], capture_output=True, text=True)
    m = re.search(r"TP ([\d.]+ ms per Llama-style block[^,)]*\))", p.stdout)
    return m[1] if m else "no Llama-style figure"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--llama", default=DEFAULT_CHECK, help="folder of framework probe reports with Llama fields")
    ap.add_argument("--folders", nargs="*")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--compute-from", help="a folder whose compute.json and coll_2gpu.json stand in for"
                    " a folder without them (tp_llama_check.sh's: run 14's, the same card)")
    args = ap.parse_args()
    one, two = None, None
    for path in sorted(glob.glob(os.path.join(args.llama, "framework*.json"))):
        fields, ranks = llama_fields(path)
        if fields and ranks == 1:
            one = fields
        elif fields and two is None:
            two = fields  # the tuner reads the one-rank pass; the two-rank copy shows it is not read
    if not one:
        sys.exit(f"{args.llama}: no one-rank framework report with Llama fields")
    if args.folders:
        folders = args.folders
    elif args.all:
        # Folders whose profile compare_all.py merges from a two-rank probe (older ones had none,
        # or a hand-made profile_with_*.json).
        folders = sorted(f for f in glob.glob(os.path.join(HERE, "data", "calibration", "*library*"))
                         if os.path.exists(os.path.join(f, "suite_tp.json"))
                         and os.path.exists(os.path.join(f, "framework_2ranks.json"))
                         and not glob.glob(os.path.join(f, "profile_with_*.json")))
    else:
        folders = [os.path.join(HERE, "data", "calibration", "2026-11-28_h200x2_library_run14")]
    errs = {"own": [], "llama": []}
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            suite = os.path.join(folder, "suite_tp.json")
            profiles = {"own": merged(args.build, folder, tmp, "own", None, None, args.compute_from),
                        "llama": merged(args.build, folder, tmp, "llama", one, two, args.compute_from)}
            rows = {tag: {(r["model"], r["mb"]): r for r in compare_all.compare(args.build, folder, p)
                          if r["mode"] == "tp"} for tag, p in profiles.items()}
            print(f"{os.path.basename(folder)}: measured ms | own profile | with the check's Llama fields"
                  f" (TP {llama_figure(args.build, profiles['llama'], suite)})")
            for key, r in sorted(rows["own"].items()):
                cells = []
                for tag in profiles:
                    x = rows[tag][key]
                    errs[tag].append(x["step_err"])
                    cells.append(f"{x['step_pred']:7.1f} {x['step_err']:+6.1f}%")
                print(f"   {key[0]:24} tp mb{key[1]:<3} {r['step']:7.1f} | " + " | ".join(cells))
    for tag, e in errs.items():
        if e:
            print(f"{tag:6} TP rows {len(e)}: MAPE {statistics.mean(abs(x) for x in e):5.1f} %,"
                  f" signed {statistics.mean(e):+5.1f} %, beyond 25 %: {sum(abs(x) > 25 for x in e)}")


if __name__ == "__main__":
    main()
