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
* fsdp (transformers): the residual against FSDP2's units, parameter tensors, parameters,
  the probe's host charge for them (the folder's profile line), the all-gather copy-in /
  copy-out bytes and the single row's own residual; the increment fitted as a + b x that
  charge and as units + tensors, measured beside predicted; per family of code, split by
  whether the folder's probe timed FSDP on two ranks or on one (h22f, session 22);
* pp: the step over the same run's single-GPU step, measured and predicted, and the
  residual against the blocks a stage holds, the bytes a micro-batch sends and parameters;
* every mode: mean signed and absolute residual at micro-batch 1 and above.

Analysis only (h21x, session 21; h22f, session 22): nothing here feeds the model.
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


def block_tensors(w):
    """Parameter tensors of one transformer block as the tuner counts them (workload.cc)."""
    n = 4 + (4 if w.get("separate_qkv") else 2) + (3 if w.get("gated_mlp") else 2)
    if w.get("linear_bias"):
        n += (3 if w.get("separate_qkv") else 1) + 1 + (2 if w.get("gated_mlp") else 1) + 1
    return n


def fsdp_shape(w):
    """FSDP2's units (one per block, the root once) and parameter tensors of a transformer."""
    embed = (2 if w.get("learned_positions") else 1)
    head = 2 if w.get("tied_embeddings", True) else 3
    return w["layers"] + 1, w["layers"] * block_tensors(w) + embed + head


PROFILE_FIGURES = {
    "fsdp_unit_ms": re.compile(r"FSDP ([\d.]+) ms per unit"),
    "fsdp_tensor_us": re.compile(r"\+ ([\d.]+) us per tensor on"),
    "fsdp_ranks": re.compile(r"us per tensor on (\d+) rank"),
    "host_kernel_us": re.compile(r"host ([\d.]+) us per kernel from the framework probe"),
    "rank_spread_pct": re.compile(r"rank-to-rank spread ([\d.]+) %"),
}


def profile_figures(build, folder, profile):
    """The host figures the tuner read from a folder's probe (its profile line)."""
    runs = sorted(glob.glob(os.path.join(folder, "suite_*.json")))[:1]
    p = subprocess.run([os.path.join(build, "bench", "validate", "xdeep_validate"), "compare",
                        "--workloads", os.path.join(HERE, "workloads"), "--profile", profile,
                        "--runs", *runs], capture_output=True, text=True)
    line = next((x for x in p.stdout.splitlines() if x.startswith("profile:")), "")
    out = {}
    for k, rx in PROFILE_FIGURES.items():
        m = rx.search(line)
        out[k] = float(m[1]) if m else None
    return out


def step_spread(folder, mode, model, mb):
    """(p75 - p25) / median of a measured row's steps, and their count."""
    for f in glob.glob(os.path.join(folder, "suite_*.json")):
        with open(f) as fh:
            for r in json.load(fh)["runs"]:
                if r["model"] == model and r["mode"] == mode and r["micro_batch"] == mb:
                    t = sorted(r.get("step_times_s") or [r["step_time_median_s"]])
                    if len(t) < 4:
                        return float("nan"), len(t)
                    q = statistics.quantiles(t, n=4)
                    return (q[2] - q[0]) / statistics.median(t), len(t)
    return float("nan"), 0


def fit_line(xs, ys):
    """Least squares y = a + b x: (a, b)."""
    b, a = statistics.linear_regression(xs, ys)
    return a, b


def summarize(label, xs_by_name, res):
    """Correlation of a residual with each candidate term; a term the model lacks would correlate."""
    parts = []
    for k, v in xs_by_name.items():
        pairs = [(x, y) for x, y in zip(v, res) if x == x]  # rows with too few steps have no spread
        parts.append(f"{k} {corr([x for x, _ in pairs], [y for _, y in pairs]):+.2f}")
    print(f"   {label}: r(residual, term): " + ", ".join(parts))


def fsdp_terms(rows, folders, figures):
    """FSDP2's increment against the terms it could be missing, transformers only (the probe's
    per-unit figure is read per folder; units, tensors and parameters from the workload file).

    H: the probe's host charge (units x per-unit + tensors x per-tensor, before the straggle);
    copy: FSDP2's all-gather copy-in (cast of each fp32 shard to bf16, 3 bytes a parameter a
    gather) and copy-out (split of the gathered bf16 buffer into the parameters, 4 bytes a
    parameter), forward and backward, 14 bytes a parameter a step, at the probe's elementwise
    bandwidth -- a GPU term the model does not charge."""
    # measured, predicted, pairs, above, pairs at mb <= 8; of folders whose probe timed FSDP on two
    # ranks (the 2026-11-26 runs' and one 2026-11-27 run's probe timed it on one: h21t)
    families = defaultdict(lambda: [0.0, 0.0, 0, 0, 0])
    print("   -- fsdp, transformers: per pair U units, T tensors, P parameters (M), H probe host ms,"
          " copy ms, single residual ms, the row's step spread (IQR / median, steps)")
    data = defaultdict(list)
    for (run, model, mb), d in sorted(rows.items()):
        if "fsdp" not in d or "single" not in d:
            continue
        w = workload(model)
        f = figures.get(run) or {}
        if w.get("family") != "transformer" or f.get("fsdp_unit_ms") is None:
            continue
        units, tensors = fsdp_shape(w)
        params = transformer_params(w)
        h = units * f["fsdp_unit_ms"] + tensors * f["fsdp_tensor_us"] / 1e3
        copy = 14 * params / 3.8e12 * 1e3
        meas = d["fsdp"][0] - d["single"][0]
        pred = d["fsdp"][1] - d["single"][1]
        single_res = d["single"][0] - d["single"][1]
        ratio_res = d["fsdp"][0] / d["single"][0] - d["fsdp"][1] / d["single"][1]
        spread, n = step_spread(folders[run], "fsdp", model, mb)
        fam = families[(family(model, w), "two-rank" if (f.get("fsdp_ranks") or 1) > 1 else "one-rank")]
        fam[0] += meas
        fam[1] += pred
        fam[2] += 1
        fam[3] += mb <= 8 and meas > pred
        fam[4] += mb <= 8
        keys = ["mb1" if mb == 1 else "mb>1"]
        if (f.get("fsdp_ranks") or 1) > 1:
            keys.append(keys[0] + ", two-rank probes")
        for key in keys:
            for k, v in (("res", meas - pred), ("meas", meas), ("pred", pred), ("U", units), ("T", tensors),
                         ("P", params / 1e6), ("H", h), ("copy", copy), ("single_res", single_res),
                         ("ratio_res", ratio_res), ("unit_ms", f["fsdp_unit_ms"]), ("spread", spread),
                         ("per_unit", meas / units)):
                data[(key, k)].append(v)
        print(f"   {run:38} {model:22} mb{mb:<3} U {units:3d} T {tensors:4d} P {params / 1e6:6.0f}"
              f"  H {h:6.1f}  copy {copy:4.1f}  inc {meas:6.1f} / {pred:6.1f}  res {meas - pred:+6.1f}"
              f"  single res {single_res:+6.1f}  spread {spread:4.2f} ({n})")
    for key in ("mb1", "mb>1", "mb1, two-rank probes", "mb>1, two-rank probes"):
        res = data[(key, "res")]
        if len(res) < 3:
            continue
        summarize(f"fsdp {key} ({len(res)} pairs)", {k: data[(key, k)] for k in
                  ("U", "T", "P", "H", "copy", "single_res", "spread")}, res)
        a, b = fit_line(data[(key, "H")], data[(key, "meas")])
        ap, bp = fit_line(data[(key, "H")], data[(key, "pred")])
        print(f"   fsdp {key}: increment = a + b H: measured a {a:+.1f} ms, b {b:.2f};"
              f" predicted a {ap:+.1f} ms, b {bp:.2f}; r(measured, H) {corr(data[(key, 'H')], data[(key, 'meas')]):+.2f},"
              f" r(measured, predicted) {corr(data[(key, 'pred')], data[(key, 'meas')]):+.2f}")
        q = [m / x for m, x in zip(data[(key, "per_unit")], data[(key, "unit_ms")])]
        print(f"   fsdp {key}: measured increment per unit {statistics.mean(data[(key, 'per_unit')]):.2f}"
              f" +- {statistics.stdev(data[(key, 'per_unit')]):.2f} ms = {statistics.mean(q):.2f} +- {statistics.stdev(q):.2f}"
              f" probe units; r(per unit, probe per unit) {corr(data[(key, 'per_unit')], data[(key, 'unit_ms')]):+.2f};"
              f" ratio residual (fsdp / single, measured - predicted) mean {statistics.mean(data[(key, 'ratio_res')]):+.2f}"
              f" +- {statistics.stdev(data[(key, 'ratio_res')]):.2f}")
        xs = list(zip(data[(key, "U")], data[(key, "T")]))
        um, tm = fit_units_tensors(xs, data[(key, "meas")])
        up, tp = fit_units_tensors(xs, data[(key, "pred")])
        print(f"   fsdp {key}: increment = u U + t T (least squares, no constant): measured u {um:.2f} ms,"
              f" t {tm * 1e3:.0f} us; predicted u {up:.2f} ms, t {tp * 1e3:.0f} us")
        ranked = sorted(zip(data[(key, "copy")], res))
        half = len(ranked) // 2
        print(f"   fsdp {key}: mean residual of the smaller / larger half by parameters"
              f" {statistics.mean(r for _, r in ranked[:half]):+.1f} / {statistics.mean(r for _, r in ranked[half:]):+.1f} ms")
    for (name, probe_ranks), (meas, pred, n, above, small) in sorted(families.items()):
        print(f"   fsdp, {name}, {probe_ranks} FSDP probe: measured / predicted increment {meas / pred:.2f} over {n} pairs;"
              f" above the model in {above} of {small} at micro-batch <= 8")


def family(model, w):
    """The code that builds a transformer, as far as FSDP2's increment tells them apart."""
    if model.startswith("timm-"):
        return "timm ViT (LayerNorm, biases, foreach AdamW)"
    if "gpt2" in model or "cerebras" in model:
        return "transformers GPT2LMHeadModel (Conv1D)"
    if w.get("norm", "").startswith("rmsnorm"):
        return "transformers Llama-style (RMSNorm)"
    return "transformers other LayerNorm (nn.Linear)"


def fit_units_tensors(xs, ys):
    """Least squares y = u U + t T through the origin: (u, t)."""
    a = sum(u * u for u, _ in xs)
    b = sum(u * t for u, t in xs)
    d = sum(t * t for _, t in xs)
    p = sum(u * y for (u, _), y in zip(xs, ys))
    q = sum(t * y for (_, t), y in zip(xs, ys))
    det = a * d - b * b
    return (d * p - b * q) / det, (a * q - b * p) / det


def pp_terms(rows, folders):
    """PP=2 (torch.distributed.pipelining, 1F1B over 4 micro-batches) against the same run's
    single-GPU step: the step over the single step, measured and predicted (a host-bound
    pipeline of 4 micro-batches of half the model reads ~2, a GPU-bound one with its bubble
    ~2.5), and the residual against the stage's blocks, the bytes each micro-batch sends
    (fp32 hidden states of seq x hidden) and the parameters."""
    print("   -- pp: step / single step, measured / predicted; per pair blocks a stage, MB sent a micro-batch")
    data = defaultdict(list)
    for (run, model, mb), d in sorted(rows.items()):
        if "pp" not in d or "single" not in d:
            continue
        w = workload(model)
        if w.get("family") != "transformer":
            continue
        q, qp = d["pp"][0] / d["single"][0], d["pp"][1] / d["single"][1]
        sent = mb * w["seq_len"] * w["hidden"] * 4 / 1e6
        res = d["pp"][0] - d["pp"][1]
        single_res = d["single"][0] - d["single"][1]
        spread, n = step_spread(folders[run], "pp", model, mb)
        key = "mb1" if mb == 1 else "mb>1"
        for k, v in (("q", q), ("qp", qp), ("res", res), ("inc_res", res - single_res), ("blocks", w["layers"] / 2),
                     ("sent", sent), ("P", transformer_params(w) / 1e6), ("single_res", single_res),
                     ("spread", spread)):
            data[(key, k)].append(v)
        print(f"   {run:38} {model:22} mb{mb:<3} ratio {q:4.2f} / {qp:4.2f}  step res {res:+6.1f}"
              f"  single res {single_res:+6.1f}  blocks {w['layers'] / 2:4.1f}  sent {sent:5.1f} MB  spread {spread:4.2f} ({n})")
    for key in ("mb1", "mb>1"):
        if len(data[(key, "q")]) < 3:
            continue
        print(f"   pp {key} ({len(data[(key, 'q')])} pairs): step / single step measured {statistics.mean(data[(key, 'q')]):.2f}"
              f" +- {statistics.stdev(data[(key, 'q')]):.2f}, predicted {statistics.mean(data[(key, 'qp')]):.2f}"
              f" +- {statistics.stdev(data[(key, 'qp')]):.2f}; r(step residual, single residual)"
              f" {corr(data[(key, 'res')], data[(key, 'single_res')]):+.2f}")
        summarize(f"pp {key} increment", {k: data[(key, k)] for k in ("blocks", "sent", "P", "single_res", "spread")},
                  data[(key, "inc_res")])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--set", choices=["calibration", "heldout", "all"], default="all")
    ap.add_argument("--mode", choices=["ddp", "fsdp", "tp", "pp"], action="append")
    args = ap.parse_args()
    modes = args.mode or ["ddp", "fsdp", "tp", "pp"]
    sets = ["calibration", "heldout"] if args.set == "all" else [args.set]
    rows, probe, folders, figures = defaultdict(dict), {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in sets:
            for folder in sorted(glob.glob(os.path.join(HERE, "data", s, "*library*"))):
                if not glob.glob(os.path.join(folder, "suite_*.json")):
                    continue
                run = os.path.basename(folder)
                probe[run] = probe_tp_per_linear(folder)
                folders[run] = folder
                profile = compare_all.profile_for(args.build, folder, tmp)
                figures[run] = profile_figures(args.build, folder, profile)
                for r in compare_all.compare(args.build, folder, profile):
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
        if mode == "fsdp":
            fsdp_terms(rows, folders, figures)
        if mode == "pp":
            pp_terms(rows, folders)
        if len(probe_lin) > 2:
            xs, ys, ps = zip(*probe_lin)
            q = [y / x for x, y, _ in probe_lin]
            qp = [p / x for x, _, p in probe_lin]
            print(f"   tp mb1: r(measured per block, probe per split Linear) = {corr(xs, ys):+.2f};"
                  f" per block, measured {statistics.mean(q):.2f} +- {statistics.stdev(q):.2f} probe-Linears,"
                  f" predicted {statistics.mean(qp):.2f} +- {statistics.stdev(qp):.2f} ({len(q)} pairs)")


if __name__ == "__main__":
    main()
