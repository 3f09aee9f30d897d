#!/usr/bin/env python3
"""Which of the framework probe's host readings predicts the host-bound training rows after it
(h23h, session 23; issue 19 item 6).

  python3 bench/validate/host_reading_study.py BUILD    # ~4 minutes on a 2-core VM

BUILD is a build of the model before h23h's change (e.g. a5f6e05): there the one-rank GPT pass
alone sets the transformers' host figure and the ResNet's the CNNs', so k* is relative to each.

For every calibration library folder (compare_all.py's set): its profile (compare_all's merge)
with the one-rank probe's GPT and ResNet passes scaled by k in 0.5-2.0, `xdeep_validate compare`
of its single-GPU suites at each k, and for each row the k* at which the prediction meets the
measurement (interpolated): the host time training took over the host time the profile's
reading gives it. Rows whose prediction moves less than 0.6x as fast as k (kernel-bound) are
left out. Then, for transformer rows at micro-batch 1 (the model's host figure applies to
them) and for CNN rows, the log of training's implied host figure over a candidate reading:
its mean (the bias) and spread over the rows of all folders. Candidates: the one-rank GPT pass
(the model before h23h), the GPT's two-rank pass, both, the one-rank pass's min and p95, the
geometric mean of the one-rank GPT and ResNet (over their op ratio: the model since h23h) and
of all four passes. The smaller the spread, the better the reading predicts the rows.
"""
import glob
import json
import math
import os
import re
import statistics as st
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_all  # noqa: E402

KS = [0.5, 0.7, 0.85, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0]


def plain_entries(profile):
    """{(network, ranks): entry} of the probe's plain GPT / ResNet passes."""
    out = {}
    for e in json.load(open(profile))["framework"]:
        if e.get("device", "cuda") != "cuda" or "elementwise_s" in e:
            continue
        if e["model"] == "resnet" or (e["model"] == "gpt" and e.get("hidden") == 128):
            out[(e["model"], e.get("ranks", 1))] = e
    return out


def scaled(profile, k, out):
    d = json.load(open(profile))
    for e in d["framework"]:
        if (e.get("ranks", 1) == 1 and e.get("device", "cuda") == "cuda" and "elementwise_s" not in e
                and (e["model"] == "resnet" or e.get("hidden") == 128)):
            e["median_s"] *= k
    json.dump(d, open(out, "w"))


def family(model):
    text = open(os.path.join(HERE, "workloads", model + ".toml")).read()
    return "cnn" if re.search(r'^family\s*=\s*"cnn"', text, re.M) else "transformer"


def implied_host_factors(build, profile, runs, tmp, refuse_both_passes=False):
    """Each host-sensitive row of `runs` predicted with `profile`'s one-rank GPT and ResNet passes
    scaled by each k of KS: (model, micro-batch, measured step, k*, sensitivity, error at k = 1),
    k* the interpolated k at which the prediction meets the measurement. Rows whose prediction
    moves less than 0.6x as fast as k (kernel-bound) are left out."""
    preds = {}
    for k in KS:
        sp, js = os.path.join(tmp, "scaled.json"), os.path.join(tmp, "out.json")
        scaled(profile, k, sp)
        out = subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare",
                              "--workloads", os.path.join(HERE, "workloads"), "--profile", sp, "--runs", *runs,
                              "--json", js], capture_output=True, text=True).stdout
        if refuse_both_passes and "over their op ratio" in out:
            sys.exit("host_reading_study.py: BUILD reads the host from both passes (h23h); give it a build "
                     "of the model before that change")
        for r in json.load(open(js))["runs"]:
            p = preds.setdefault((r["model"], r["micro_batch"]), {"step": r["step_s"], "pred": {}})
            p["pred"][k] = r["predicted_step_s"]
    rows = []
    for (model, mb), v in preds.items():
        p = [v["pred"][k] for k in KS]
        i = KS.index(1.0)
        sens = (p[i + 1] - p[i - 1]) / p[i] / (KS[i + 1] - KS[i - 1])
        kstar = None
        for a in range(len(KS) - 1):
            if (p[a] - v["step"]) * (p[a + 1] - v["step"]) <= 0 and p[a + 1] != p[a]:
                kstar = KS[a] + (v["step"] - p[a]) * (KS[a + 1] - KS[a]) / (p[a + 1] - p[a])
                break
        if sens > 0.6 and kstar:
            rows.append((model, mb, v["step"], kstar, sens, p[i] / v["step"] - 1))
    return rows


def rows_of(build, folder, tmp):
    runs = sorted(glob.glob(os.path.join(folder, "suite_single_*.json")))
    if not runs:
        return [], {}
    profile = compare_all.profile_for(build, folder, tmp)
    rows = [dict(model=model, mb=mb, family=family(model), kstar=kstar)
            for model, mb, _, kstar, _, _ in implied_host_factors(build, profile, runs, tmp, True)]
    return rows, plain_entries(profile)


def figure(e):
    return e["median_s"] * math.sqrt(1 - e["gpu_busy_fraction"] ** 2)


def main():
    build = sys.argv[1]
    data = []
    with tempfile.TemporaryDirectory() as tmp:
        for folder in sorted(glob.glob(os.path.join(HERE, "data", "calibration", "*library*"))):
            rows, entries = rows_of(build, folder, tmp)
            if rows:
                data.append((os.path.basename(folder), rows, entries))
                print(f"{os.path.basename(folder)}: {len(rows)} host-sensitive single-GPU rows", file=sys.stderr)
    ratios = [figure(e[("resnet", r)]) / figure(e[("gpt", r)]) for _, _, e in data for r in (1, 2)
              if ("resnet", r) in e and ("gpt", r) in e]
    rho_raw = st.median(ratios)
    print(f"ResNet / GPT pass (raw, busy share out), median of {len(ratios)} entries: {rho_raw:.3f}")

    def geo(xs):
        return math.exp(st.mean(math.log(x) for x in xs))

    cands = {  # transformer rows: readings in the GPT pass's units
        "one-rank GPT median (before h23h)": lambda e: figure(e[("gpt", 1)]),
        "one-rank GPT min": lambda e: e[("gpt", 1)]["min_s"],
        "one-rank GPT p95": lambda e: e[("gpt", 1)]["p95_s"],
        "two-rank GPT median": lambda e: figure(e[("gpt", 2)]) if ("gpt", 2) in e else None,
        "GPT one- and two-rank": lambda e: geo([figure(e[k]) for k in (("gpt", 1), ("gpt", 2)) if k in e]),
        "GPT and ResNet, one rank (h23h)": lambda e: geo([figure(e[("gpt", 1)]), figure(e[("resnet", 1)]) / rho_raw]),
        "all four passes": lambda e: geo([figure(e[k]) / (rho_raw if k[0] == "resnet" else 1) for k in e]),
    }
    cnn_cands = {  # CNN rows: readings in the ResNet pass's units
        "one-rank ResNet median (before h23h)": lambda e: figure(e[("resnet", 1)]),
        "GPT and ResNet, one rank (h23h)": lambda e: geo([figure(e[("gpt", 1)]) * rho_raw, figure(e[("resnet", 1)])]),
        "all four passes": lambda e: geo([figure(e[k]) * (rho_raw if k[0] == "gpt" else 1) for k in e]),
    }
    # Per run: the median of its transformer rows' k*, against readings of the one-rank GPT pass
    # and a constant (the same figure for every run).
    print("\nper run (median k* of its transformer rows at micro-batch 1): sd over runs of log(level / reading)")
    level = {f: st.median([r["kstar"] for r in rows if r["family"] == "transformer" and r["mb"] == 1])
             * figure(e[("gpt", 1)]) for f, rows, e in data
             if any(r["family"] == "transformer" and r["mb"] == 1 for r in rows)}
    entries = {f: e for f, _, e in data}
    for name, f in (("one-rank GPT median", lambda e: figure(e[("gpt", 1)])),
                    ("one-rank GPT min", lambda e: e[("gpt", 1)]["min_s"]),
                    ("one-rank GPT p95", lambda e: e[("gpt", 1)]["p95_s"]),
                    ("one-rank GPT optimizer step", lambda e: e[("gpt", 1)]["step_host_s"]),
                    ("a constant", lambda e: 1.0)):
        logs = [math.log(v / f(entries[k])) for k, v in level.items()]
        print(f"  {name:36} runs {len(logs):3}  sd {st.pstdev(logs):.3f}")
    for fam, base, table in (("transformer", ("gpt", 1), cands), ("cnn", ("resnet", 1), cnn_cands)):
        print(f"\n{fam} rows (micro-batch 1): log(training's host figure / reading)")
        for name, f in table.items():
            logs = []
            for _, rows, e in data:
                reading = f(e)
                if not reading:
                    continue
                for r in rows:
                    if r["family"] == fam and r["mb"] == 1:
                        logs.append(math.log(r["kstar"] * figure(e[base]) / reading))
            if logs:
                print(f"  {name:36} rows {len(logs):3}  mean {st.mean(logs):+.3f}  sd {st.pstdev(logs):.3f}"
                      f"  rms {math.sqrt(st.mean(x * x for x in logs)):.3f}")


if __name__ == "__main__":
    main()
