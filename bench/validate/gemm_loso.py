#!/usr/bin/env python3
"""The GEMM model judged seed by seed: leave one seed out (issue 19, item 1).

  gemm_loso.py BUILD_DIR [--card h200|h100|all] [--worst N] [--tsv]

Every committed GEMM check seed of a card is held out in turn. Two fits per fold, both
by the C++ model (`xdeep_validate gemm-check`, the frozen model of the build):

* own: the held-out seed's own probe report (what the device run fits to), checked on
  its own cuBLAS-timed shapes -- the held-out run's figure, seed by seed;
* others: every OTHER seed of the card, its probe report and its check shapes timed by
  cuBLAS (with the kernel cuBLASLt's heuristic named for them, where recorded), plus the
  held-out seed's own probe report, checked on the held-out seed's shapes.

Both print median / 95th percentile of |predicted / measured - 1|, blind (the best tile)
and knowing the heuristic's kernels where the seed recorded them. All of this data is
calibration: it was read to change the model (gemm_model_calibration.md).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
# card -> seed -> folder (relative to data/); folders without a fit report of their
# own are only ever "others".
SEEDS = {
    "h200": {
        "6607": "calibration/2026-11-27_h200x1_gemm_seed6607",
        "9127": "calibration/2026-11-27_h200x2_gemm_seed9127",
        "7411": "calibration/2026-11-27_h200x1_gemm_seed7411",
        "4517": "calibration/2026-11-28_h200x1_gemm_seed4517",
        "5309": "calibration/2026-11-28_h200x1_gemm_seed5309",
        "8677": "calibration/2026-11-28_h200x1_gemm_seed8677",
        "3907": "calibration/2026-11-28_h200x1_gemm_seed3907",
        "6271": "calibration/2026-11-28_h200x1_gemm_seed6271",
        "2411": "calibration/2026-11-28_h200x1_gemm_seed2411",
        "7919": "calibration/2026-11-28_h200x1_gemm_seed7919",
    },
    "h100": {
        "8081": "calibration/2026-11-27_h100x1_gemm_seed8081",
        "3301": "calibration/2026-11-27_h100x2_gemm_seed3301",
        "1203": "calibration/2026-11-27_h100x2_library_heldout3",
        "4517": "calibration/2026-11-28_h100x1_gemm_seed4517",
        "5309": "calibration/2026-11-28_h100x1_gemm_seed5309",
        "8677": "calibration/2026-11-28_h100x1_gemm_seed8677",
    },
}


def load(path):
    with open(path) as f:
        return json.load(f)


def shape_key(g):
    return (g["dtype"], g.get("pass", "fwd"), int(g["m"]), int(g["n"]), int(g["k"]))


def fit_report(folder):
    """A seed's probe report: gemm_fit.json, or a library run's compute.json."""
    for name in ("gemm_fit.json", "compute.json"):
        if os.path.exists(os.path.join(folder, name)):
            return load(os.path.join(folder, name))
    raise SystemExit(f"gemm_loso.py: {folder} has no probe report")


def checked_points(folder):
    """A seed's cuBLAS-timed check shapes as probe report entries, with the kernel the
    heuristic named for each where the seed asked it."""
    check = load(os.path.join(folder, "gemm_check.json"))["gemm"]
    kernels = {}
    algos = os.path.join(folder, "check_algos.json")
    if os.path.exists(algos):
        kernels = {shape_key(a): a["kernel"] for a in load(algos).get("gemm_algos", [])}
    out = []
    for g in check:
        e = {k: g[k] for k in ("m", "n", "k", "dtype", "median_s", "tflops")}
        e["pass"] = g.get("pass", "fwd")
        e["layer"] = "check." + g.get("layer", "")
        if shape_key(g) in kernels:
            e["kernel"] = kernels[shape_key(g)]
        out.append(e)
    return out


def gemm_check(build, fit_doc, folder, algos, tmp, worst):
    """`xdeep_validate gemm-check` of `folder`'s check shapes with the model fitted to
    `fit_doc` (a probe report), knowing the heuristic's kernels with `algos`: its output."""
    fit_path = os.path.join(tmp, "fit.json")
    with open(fit_path, "w") as f:
        json.dump(fit_doc, f)
    cmd = [os.path.join(build, "bench/validate/xdeep_validate"), "gemm-check", "--fit", fit_path,
           "--check", os.path.join(folder, "gemm_check.json"), "--worst", str(worst)]
    if algos:
        cmd += ["--algos", os.path.join(folder, "check_algos.json")]
    return subprocess.run(cmd, capture_output=True, text=True).stdout


def run_check(build, fit_doc, folder, algos, tmp):
    out = gemm_check(build, fit_doc, folder, algos, tmp, ARGS.worst)
    figures = {}
    for line in out.splitlines():
        m = re.match(r"(\w+)\s+(\d+) shapes: median error\s+([\d.]+) %, 95th percentile\s+([\d.]+) %",
                     line)
        if m:
            figures[m.group(1)] = (float(m.group(3)), float(m.group(4)), int(m.group(2)))
    worst = [l for l in out.splitlines() if l.startswith("  ") and "predicted" in l]
    return figures, worst


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--card", default="all", choices=["all", "h200", "h100"])
    p.add_argument("--worst", type=int, default=0)
    p.add_argument("--fits", default="own,others",
                   help="which fits to run, comma-separated: own, others (default both)")
    p.add_argument("--modes", default="blind,kernels",
                   help="blind (the best tile), kernels (knowing the heuristic's kernels) or both")
    p.add_argument("--own-plus", default="",
                   help="comma-separated layer-name prefixes (e.g. cnn.c3x): the own fit also gets "
                        "the other seeds' (same card) check shapes of those layers, standing in for "
                        "probe fit points of that kind that the committed reports do not have")
    ARGS = p.parse_args()
    cards = SEEDS if ARGS.card == "all" else {ARGS.card: SEEDS[ARGS.card]}
    with tempfile.TemporaryDirectory() as tmp:
        for card, seeds in cards.items():
            for held, rel in seeds.items():
                folder = os.path.join(DATA, rel)
                own = fit_report(folder)
                algos = os.path.exists(os.path.join(folder, "check_algos.json"))
                pooled = dict(own)
                pooled["gemm"] = list(own["gemm"])
                prefixes = [x for x in ARGS.own_plus.split(",") if x]
                if prefixes:
                    own = dict(own)
                    own["gemm"] = list(own["gemm"]) + [
                        g for other, orel in seeds.items() if other != held
                        for g in checked_points(os.path.join(DATA, orel))
                        if any(g["layer"].startswith("check." + x) for x in prefixes)]
                for other, orel in seeds.items():
                    if other == held:
                        continue
                    ofolder = os.path.join(DATA, orel)
                    pooled["gemm"] += fit_report(ofolder)["gemm"]
                    pooled["gemm"] += checked_points(ofolder)
                for name, doc in (("own", own), ("others", pooled)):
                    if name not in ARGS.fits.split(","):
                        continue
                    for use_algos in ([False, True] if algos else [False]):
                        if ("kernels" if use_algos else "blind") not in ARGS.modes.split(","):
                            continue
                        figures, worst = run_check(ARGS.build, doc, folder, use_algos, tmp)
                        cells = "  ".join(
                            f"{dt} {figures[dt][0]:4.1f} / {figures[dt][1]:5.1f}"
                            for dt in ("all", "bf16", "fp16", "tf32") if dt in figures)
                        print(f"{card} seed {held:>5} fit {name:<6} ({len(doc['gemm']):4d} pts) "
                              f"{'kernels' if use_algos else 'blind  '}  {cells}")
                        for w in worst:
                            print("   ", w.strip())
                        sys.stdout.flush()


if __name__ == "__main__":
    main()
