#!/usr/bin/env python3
"""What each two-GPU mode adds to the same run's single-GPU step, measured against predicted.

  mode_increments.py BUILD [--set calibration|heldout|all] [--mode ddp|fsdp|tp|pp]

For every library folder that compare_all.py reads, pairs each two-GPU row with the
single-GPU row of the same run, model and micro-batch, and prints the mode's increment
(mode step minus single step), measured and predicted, so that a mode's own terms are read
apart from the single-GPU terms both share. Summaries per mode:

* ddp: the increment's residual (measured minus predicted) against the gradient's bucket
  count (fp32 gradients in 25 MiB buckets, parameters counted from the workload file):
  a per-bucket or per-byte cost would correlate;
* tp: the increment per block at micro-batch 1 against the framework probe's two-rank TP
  cost per split Linear (framework_2ranks.json), in probe-Linears per block;
* every mode: mean signed and absolute residual at micro-batch 1 and above.

Analysis only (h21x, session 21): nothing here feeds the model.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import tomllib
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_all  # noqa: E402

BUCKET_BYTES = 25 * 2**20  # DDP's default bucket_cap_mb


def workload(model):
    with open(os.path.join(HERE, "workloads", model + ".toml"), "rb") as f:
        return tomllib.load(f)["model"]


def transformer_params(w):
    h, layers = w["hidden"], w["layers"]
    ffn = w.get("ffn", 4 * h)
    head = h // w["heads"]
    kv = w.get("kv_heads", w["heads"])
    block = h * (h + 2 * kv * head) + h * h + (3 if w.get("gated_mlp") else 2) * h * ffn
    return layers * block + w["vocab"] * h * (1 if w.get("tied_embeddings", True) else 2)


def probe_tp_per_linear(folder):
    p = os.path.join(folder, "framework_2ranks.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        for fw in json.load(f).get("framework", []):
            if fw.get("model") == "gpt" and "tp_median_s" in fw:
                return (fw["tp_median_s"] - fw["median_s"]) / fw.get("tp_linears", 16)
    return None


def corr(xs, ys):
    return statistics.correlation(xs, ys) if len(xs) > 2 else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--set", choices=["calibration", "heldout", "all"], default="all")
    ap.add_argument("--mode", choices=["ddp", "fsdp", "tp", "pp"], action="append")
    args = ap.parse_args()
    modes = args.mode or ["ddp", "fsdp", "tp", "pp"]
    sets = ["calibration", "heldout"] if args.set == "all" else [args.set]
    rows, probe = defaultdict(dict), {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in sets:
            for folder in sorted(glob.glob(os.path.join(HERE, "data", s, "*library*"))):
                if not glob.glob(os.path.join(folder, "suite_*.json")):
                    continue
                run = os.path.basename(folder)
                probe[run] = probe_tp_per_linear(folder)
                for r in compare_all.compare(args.build, folder, compare_all.profile_for(args.build, folder, tmp)):
                    rows[(run, r["model"], r["mb"])][r["mode"]] = (r["step"], r["step_pred"])
    for mode in modes:
        print(f"== {mode}: increment over the same run's single-GPU step (ms), measured / predicted")
        res = {True: [], False: []}
        buckets, bres, per_block, per_block_pred, probe_lin, single_block = [], [], [], [], [], []
        for (run, model, mb), d in sorted(rows.items()):
            if mode not in d or "single" not in d:
                continue
            meas = d[mode][0] - d["single"][0]
            pred = d[mode][1] - d["single"][1]
            res[mb == 1].append(meas - pred)
            w = workload(model)
            note = ""
            if mode == "ddp" and mb == 1:
                n = 4 * (transformer_params(w) if w.get("family") == "transformer" else 0) / BUCKET_BYTES
                if n > 0:
                    buckets.append(n)
                    bres.append(meas - pred)
                    note = f"  buckets {n:4.0f}"
            if mode == "tp" and mb == 1 and w.get("family") == "transformer":
                per_block.append(meas / w["layers"])
                per_block_pred.append(pred / w["layers"])
                single_block.append((d["single"][0] / w["layers"], d["single"][1] / w["layers"]))
                note = f"  per block {meas / w['layers']:5.2f} / {pred / w['layers']:5.2f}"
                if probe.get(run):
                    probe_lin.append((probe[run] * 1e3, meas / w["layers"], pred / w["layers"]))
                    note += f"  probe {probe[run] * 1e3:4.2f} ms a split Linear"
            print(f"   {run:38} {model:24} mb{mb:<4} {meas:7.1f} {pred:7.1f}  residual {meas - pred:+6.1f}{note}")
        for mb1, v in res.items():
            if v:
                print(f"   mb{'1' if mb1 else '>1'}: {len(v)} pairs, residual mean {statistics.mean(v):+.1f} ms,"
                      f" mean |residual| {statistics.mean(abs(x) for x in v):.1f} ms")
        if bres:
            print(f"   ddp mb1, transformers: residual against bucket count r = {corr(buckets, bres):+.2f}"
                  f" ({len(bres)} pairs, mean residual {statistics.mean(bres):+.1f} ms)")
        if per_block:
            print(f"   tp mb1 per block: measured {statistics.mean(per_block):.2f} +- {statistics.stdev(per_block):.2f} ms,"
                  f" predicted {statistics.mean(per_block_pred):.2f} +- {statistics.stdev(per_block_pred):.2f};"
                  f" r(measured, predicted) = {corr(per_block, per_block_pred):+.2f}")
            q = [t / s for t, (s, _) in zip(per_block, single_block)]
            print(f"   tp mb1: r(measured per block, same run's single-GPU step per block measured / predicted) ="
                  f" {corr(per_block, [s for s, _ in single_block]):+.2f} / {corr(per_block, [p for _, p in single_block]):+.2f};"
                  f" measured per block = {statistics.mean(q):.2f} +- {statistics.stdev(q):.2f} single-GPU blocks")
        if len(probe_lin) > 2:
            xs, ys, ps = zip(*probe_lin)
            q = [y / x for x, y, _ in probe_lin]
            qp = [p / x for x, _, p in probe_lin]
            print(f"   tp mb1: r(measured per block, probe per split Linear) = {corr(xs, ys):+.2f};"
                  f" per block, measured {statistics.mean(q):.2f} +- {statistics.stdev(q):.2f} probe-Linears,"
                  f" predicted {statistics.mean(qp):.2f} +- {statistics.stdev(qp):.2f} ({len(q)} pairs)")


if __name__ == "__main__":
    main()
