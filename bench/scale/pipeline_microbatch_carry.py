#!/usr/bin/env python3
"""Carry the measured pipeline micro-batch ratios to MT-NLG's same-software picks.

Reads the 4x H100 run of pipeline_microbatch.py (data/2026-11-28_*: 4 stages of
3 blocks, and 2 stages of 6 blocks on 2 of the same host's GPUs) and the model's
steps in published_runs.out ("same software's pick: step ..." and the published
layout's "step ..." line of the mtnlg-530b rows), and prints:

* each run's mb1 step / mb2 step, measured against the form (m + p - 1) x T;
* the trade of cutting stages (2 x 6 blocks at micro-batch 1 against 4 x 3 at
  micro-batch 2, the same samples a GPU), measured against the form;
* the picks' gain over the published layout with the model's A100 micro-batch
  time of the pick replaced by the published layout's times the ratio the H100
  measured (the way the session-18 section carried the 2-GPU run): the pick's
  slowest stage holds k = 105 / pp blocks (and the head), its time at
  micro-batch 1 is a + k b, a line through the measured 3- and 6-block stages
  at micro-batch 1, over the measured 3-block stage at micro-batch 2;
* the model's own ratio for the same stages on h100-sxm and a100-sxm
  (data/2026-11-28_mtnlg_pick_stages.out), and the picks' gain with the A100
  ratio moved by the model's miss on the H100 (measured / model's H100 ratio).

Also the model's own micro-batch 1 / 2 step ratio for the measured runs (its kernels and
accumulation pass; data/2026-11-28_mtnlg_stage_terms_h25c.out, session 20).

Standard library only; no device. Usage: python3 bench/scale/pipeline_microbatch_carry.py [STAGES.out]
ctest (bench.scale.pipeline_microbatch_model): ... --terms <this build's --terms output> --check
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
P4 = os.path.join(HERE, "data", "2026-11-28_h100x4_pipeline_microbatch_p4.json")
P2L6 = os.path.join(HERE, "data", "2026-11-28_h100x2_pipeline_microbatch_p2l6.json")
OUT = os.path.join(HERE, "published_runs.out")
# The model's stage ratios: session 20's model (the fp32 pass at its measured rate);
# session 19's, at f8183ab, in 2026-11-28_mtnlg_pick_stages.out (pass it as the argument).
STAGES = os.path.join(HERE, "data", "2026-11-28_mtnlg_pick_stages_h25c.out")
LAYERS = 105  # MT-NLG 530B


def run(d, acc, mb):
    for r in d["runs"]:
        if r["accumulation"] == acc and r["micro_batch"] == mb:
            return r
    raise KeyError((acc, mb))


def model_rows():
    """{nodes: (published step, m, T2, pick step, pick pp, pick m, pick T1, pick rest)}"""
    rows, name, lines = {}, None, open(OUT).read().splitlines()
    step = re.compile(r"step ([\d.]+) s: compute ([\d.]+), bubble ([\d.]+), "
                      r"exposed comm ([\d.]+), optimizer ([\d.]+)")
    for i, line in enumerate(lines):
        m = re.match(r"mtnlg-530b-(\d+)n\s", line)
        if not m:
            continue
        nodes = int(m.group(1))
        lay = re.search(r"pp(\d+) cp1 dp(\d+) mb(\d+)", line)
        pp, dp, mb = (int(x) for x in lay.groups())
        same = re.search(r"same software: \S*dp(\d+)x\S*pp(\d+) \S+ mb(\d+)", lines[i + 1])
        pdp, ppp, pmb = (int(x) for x in same.groups())
        s_pick = [float(x) for x in step.search(lines[i + 2]).groups()]
        s_lay = [float(x) for x in step.search(lines[i + 3]).groups()]
        m_lay, m_pick = 1920 // (mb * dp), 1920 // (pmb * pdp)
        rows[nodes] = dict(pp=pp, m=m_lay, T2=s_lay[1] / m_lay, step=s_lay[0],
                           ppp=ppp, mp=m_pick, T1=s_pick[1] / m_pick,
                           pick=s_pick[0], rest=s_pick[0] - s_pick[1] - s_pick[2])
    return rows


def stage_ratios():
    """{(profile, pp): T1(pick stage) / T2(published stage)} from the --no-search run of the stage csv."""
    t, lines = {}, open(STAGES).read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(a100|h100)-pp(\d+)-mb(\d)\S*\s.*\sdp(\d+) mb\d", line)
        if not m:
            continue
        prof, pp, mb, dp = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        comp = float(re.search(r"compute ([\d.]+)", lines[i + 2]).group(1))
        t[(prof, pp, mb)] = comp / (1920 // (mb * dp))
    return {(prof, pp): t[(prof, pp, 1)] / t[(prof, 35, 2)] for (prof, pp, mb) in t if mb == 1}


TERMS = os.path.join(HERE, "data", "2026-11-28_mtnlg_stage_terms_h25c.out")
SHARE = 0.82      # tuner/pipeline_engine.h, kMixedDtypeAccumulationShare
H100_BW = 2900e9  # h100-sxm's copy bandwidth in the model


def model_step_ratios(p4, p2):
    """The model's own mb1 / mb2 step ratio for the measured runs (session 20).

    What the script runs, in the model's terms: per micro-batch the stage's
    kernels (published_runs_bench --terms on h100-sxm, a line through the 3-,
    5- and 15-block stages: the model's tensor-parallel collectives and
    Selene's transfers left out, as the script runs neither) plus the
    accumulation pass at the model's rates (fp32: 10 bytes a parameter at
    SHARE of the copy bandwidth; in place: 6 bytes at the copy bandwidth,
    the step's first one free; fp32 zeroes its buffer once a step), a step
    (m + p - 1) of them. The script's NVLink transfers are left out too.
    """
    kern, lines = {}, open(TERMS).read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"h100-pp(\d+)-mb(\d)\s", line)
        if m:
            t = re.search(r"kernels ([\d.]+)", lines[i + 3]).group(1)
            kern[(LAYERS // int(m.group(1)), int(m.group(2)))] = float(t) / 1e3
    print("the model's mb1 / mb2 step ratio for the measured runs (kernels + accumulation pass):")
    worst = 0.0
    for name, d in (("p4 (4 x 3 blocks, 16 samples)", p4), ("p2l6 (2 x 6 blocks, 8 samples)", p2)):
        k, p = d["layers_per_stage"], d["stages"]
        n = max(d["params_per_stage"])
        m2 = run(d, "inplace", 2)["micro_batches"]
        for acc in ("inplace", "fp32"):
            out = []
            for share in ((1.0, SHARE) if acc == "fp32" else (1.0,)):
                steps = {}
                for mb, m in ((1, 2 * m2), (2, m2)):
                    b = (kern[(15, mb)] - kern[(3, mb)]) / 12
                    t = kern[(3, mb)] + (k - 3) * b
                    if acc == "fp32":
                        t += 10 * n / (share * H100_BW)
                        steps[mb] = (m + p - 1) * t + 4 * n / H100_BW
                    else:
                        t += 6 * n / H100_BW
                        steps[mb] = (m + p - 1) * t - 6 * n / H100_BW
                out.append(steps[1] / steps[2])
            meas = run(d, acc, 1)["mean_step_s"] / run(d, acc, 2)["mean_step_s"]
            worst = max(worst, abs(out[-1] - meas))
            txt = " / ".join(f"{r:.3f}" for r in out)
            print(f"  {name} {acc:7s}: measured {meas:.3f}; model {txt}"
                  + (" (pass at the copy bandwidth / at the measured rate)" if acc == "fp32" else ""))
    return worst


def main():
    global STAGES, TERMS
    args = sys.argv[1:]
    if "--terms" in args:  # ctest: the model's kernels of this build
        at = args.index("--terms")
        TERMS = args[at + 1]
        del args[at:at + 2]
    if "--check" in args:
        worst = model_step_ratios(json.load(open(P4)), json.load(open(P2L6)))
        assert worst < 0.01, worst
        print("ok: the model's step ratios within 1 point of the four measured")
        return
    if args:
        STAGES = args[0]
    p4, p2 = json.load(open(P4)), json.load(open(P2L6))
    print("per run: mb1 step / mb2 step, measured and the form (m + p - 1) x T")
    for name, d in (("p4 (4 x 3 blocks, 16 samples)", p4), ("p2l6 (2 x 6 blocks, 8 samples)", p2)):
        t1, t2 = max(d["micro_batch_s"]["1"]), max(d["micro_batch_s"]["2"])
        p = d["stages"]
        m2 = run(d, "inplace", 2)["micro_batches"]
        m1 = 2 * m2
        form = (m1 + p - 1) * t1 / ((m2 + p - 1) * t2)
        half = (m1 + p - 1) * 0.5 / (m2 + p - 1)
        print(f"  {name}: T1/T2 alone {t1 / t2:.3f}; form with measured T {form:.3f}, with T1 = T2/2 {half:.3f}")
        for acc in ("inplace", "fp32"):
            a, b = run(d, acc, 1), run(d, acc, 2)
            ratio = a["mean_step_s"] / b["mean_step_s"]
            pm = a["per_micro_batch_time_s"] / b["per_micro_batch_time_s"]
            print(f"    {acc:7s}: measured {ratio:.3f} (gain {1 / ratio - 1:+.1%}); "
                  f"over the form by {100 * (ratio - form):.1f} points (T measured), "
                  f"{100 * (ratio - half):.1f} (T1 = T2/2); form's gain {1 / form - 1:+.1%}; "
                  f"per micro-batch in the pipeline {1e3 * a['per_micro_batch_time_s']:.1f} / "
                  f"{1e3 * b['per_micro_batch_time_s']:.1f} ms = {pm:.3f}")

    print("cutting stages: 2 x 6 blocks at mb1 (8 samples, m 8) over 4 x 3 blocks at mb2 (16 samples, m 8)")
    t16, t32 = max(p2["micro_batch_s"]["1"]), max(p4["micro_batch_s"]["2"])
    form = 9 * t16 / (11 * t32)
    print(f"  form with measured T {form:.3f}; session 19's prediction (T1(6) = 2 x 0.518 T2(3)) {9 * 2 * 0.518 / 11:.3f}")
    for acc in ("inplace", "fp32"):
        r = run(p2, acc, 1)["mean_step_s"] / run(p4, acc, 2)["mean_step_s"]
        print(f"    {acc:7s}: measured {r:.3f} (step {1 - r:.1%} shorter)")

    model_step_ratios(p4, p2)

    # the stage time at micro-batch 1 as a + k b (k blocks and the head), at micro-batch 2 for 3 blocks
    variants = {}
    t1_3, t1_6 = max(p4["micro_batch_s"]["1"]), max(p2["micro_batch_s"]["1"])
    variants["compute alone"] = (t1_3, t1_6, max(p4["micro_batch_s"]["2"]))
    for acc in ("inplace", "fp32"):
        variants[f"pipelined, {acc}"] = (run(p4, acc, 1)["per_micro_batch_time_s"],
                                        run(p2, acc, 1)["per_micro_batch_time_s"],
                                        run(p4, acc, 2)["per_micro_batch_time_s"])
    rows = model_rows()
    model = stage_ratios()
    print("MT-NLG same-software picks on a100-sxm, the pick's micro-batch time from the H100's ratio")
    for nodes, r in sorted(rows.items()):
        k = LAYERS // r["ppp"]
        rho_model = r["T1"] / r["T2"]
        print(f"  {nodes} nodes: pick pp {r['ppp']} (k {k}), m {r['mp']}; model: T1 / T2 = {rho_model:.3f}, "
              f"step {r['pick']:.2f} against {r['step']:.2f} s, {r['step'] / r['pick'] - 1:+.1%}")
        h100 = model[("h100", r["ppp"])]
        print(f"    model's T1 / T2 for these stages: a100-sxm {model[('a100', r['ppp'])]:.3f}, h100-sxm {h100:.3f}")
        for name, (a3, a6, b3) in variants.items():
            b = (a6 - a3) / 3
            a = a3 - 3 * b
            rho = (a + k * b) / b3
            pick = r["rest"] + (r["mp"] + r["ppp"] - 1) * rho * r["T2"]
            moved = rho_model * rho / h100
            pick2 = r["rest"] + (r["mp"] + r["ppp"] - 1) * moved * r["T2"]
            print(f"    {name:18s}: T1(k) = {1e3 * a:.1f} + {k} x {1e3 * b:.2f} ms = {1e3 * (a + k * b):.1f} ms, "
                  f"/ T2(3) {1e3 * b3:.1f} ms = {rho:.3f} (model's h100 {100 * (h100 / rho - 1):+.1f} %); "
                  f"carried directly: step {pick:.2f} s, {r['step'] / pick - 1:+.1%}; "
                  f"A100 ratio x measured / model's h100 = {moved:.3f}: step {pick2:.2f} s, {r['step'] / pick2 - 1:+.1%}")


if __name__ == "__main__":
    main()
