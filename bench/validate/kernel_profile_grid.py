#!/usr/bin/env python3
"""The per-op times of transformer_kernel_profile.py's profiles as elementwise_grid_check.py's grid (h20k, session 20).

  kernel_profile_grid.py PROFILE_DIR OUT.json [--against GRID.json]

Takes from each profiled training step the GPU time per call of aten's native_layer_norm and its
backward (rows = batch x tokens, width), of the 2-D column sums (`aten::sum` of a [tokens, cols]
gradient: the Linears' bias gradients) and of cuDNN's SDPA forward and backward (batch, heads,
seq, head size; causal for the decoders; GPT-2's attention runs with dropout and is left out), and
writes them in the grid's format, so kernel_rate_tables.py can build the tuner's tables from the
shapes training ran as well as from the grid. --against: each training point's time over the grid's at
that shape (log-interpolated in rows / width, sequence / head size; the grid's SDPA rate per (sample, head)
tile wave as the tuner would scale it is not applied: the training points here fill the GPU).
"""
import ast
import json
import os
import sys

CAUSAL = {"hf-pythia-1b", "hf-olmo-1b", "hf-gpt2"}
DROPOUT_ATTENTION = {"hf-gpt2"}


def shapes(o):
    return ast.literal_eval(o["shapes"])


def interp(xy, x):
    xy = sorted(xy)
    if x <= xy[0][0]:
        return xy[0][1]
    if x >= xy[-1][0]:
        return xy[-1][1]
    for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
        if x0 <= x <= x1:
            return y0 + (x - x0) / (x1 - x0) * (y1 - y0)


def grid_value(points, a, b, get_a, get_b, get_v):
    """log-interpolated in a within each b, then in log b (as tuner's GridValue on branch h20k-wip)."""
    import math
    by_b = {}
    for p in points:
        by_b.setdefault(get_b(p), []).append((math.log(get_a(p)), get_v(p)))
    over_b = [(math.log(bv), interp(xy, math.log(a))) for bv, xy in by_b.items()]
    return interp(over_b, math.log(b))


def against(rep, grid):
    print(f"training ({rep['gpu']}) over the grid ({grid['gpu']}), per point:")
    for p in sorted(rep["layer_norm"], key=lambda p: (p["width"], p["rows"])):
        n = p["rows"] * p["width"]
        for k in ("fwd_s", "bwd_s"):
            g = grid_value(grid["layer_norm"], p["rows"], p["width"], lambda q: q["rows"], lambda q: q["width"],
                           lambda q, k=k: q[k] / (q["rows"] * q["width"])) * n
            print(f"  layer_norm {k[:3]} rows {p['rows']:6d} width {p['width']:4d}: {p[k] / g:5.2f}")
    for p in sorted(rep["column_sum"], key=lambda p: (p["cols"], p["rows"])):
        n = p["rows"] * p["cols"]
        g = grid_value(grid["column_sum"], p["rows"], p["cols"], lambda q: q["rows"], lambda q: q["cols"],
                       lambda q: q["s"] / (q["rows"] * q["cols"])) * n
        print(f"  column_sum rows {p['rows']:6d} cols {p['cols']:5d}: {p['s'] / g:5.2f}")
    for p in rep["sdpa"]:
        pts = [q for q in grid["sdpa"] if q["causal"] == p["causal"]]
        for k in ("fwd_s", "bwd_s"):
            def rate(q, k=k):
                return q["batch"] * q["heads"] * q["seq"] ** 2 * q["head_dim"] / q[k]
            r = grid_value(pts, p["seq"], p["head_dim"], lambda q: q["seq"], lambda q: q["head_dim"], rate)
            g = p["batch"] * p["heads"] * p["seq"] ** 2 * p["head_dim"] / r
            print(f"  sdpa {k[:3]} seq {p['seq']:4d} head {p['head_dim']:3d} causal {int(p['causal'])} "
                  f"pairs {p['batch'] * p['heads']:5d}: {p[k] / g:5.2f}")


def main():
    folder, out = sys.argv[1], sys.argv[2]
    d = json.load(open(os.path.join(folder, "transformer_kernel_profile.json")))
    ln, cs, sd = {}, {}, {}
    for e in d["entries"]:
        model = e["model"]
        fwd_attn = {}
        for o in e["ops"]:
            op, n, s = o["op"], o["count"], o["s"]
            if n <= 0 or s <= 0:
                continue
            if op in ("aten::native_layer_norm", "aten::native_layer_norm_backward"):
                x = shapes(o)[0]
                rows, width = x[0] * (x[1] if len(x) == 3 else 1), x[-1]
                p = ln.setdefault((rows, width), {"rows": rows, "width": width, "fwd_s": 0, "bwd_s": 0})
                p["bwd_s" if op.endswith("backward") else "fwd_s"] = s / n
            elif op == "aten::sum":
                x = shapes(o)[0]
                if len(x) == 2 and x[0] >= 4 * x[1] / 8 and x[0] >= 1024 and x[0] * x[1] >= 1 << 20:
                    cs[(x[0], x[1])] = {"rows": x[0], "cols": x[1], "s": s / n}
            elif op in ("aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_cudnn_attention_backward",
                        "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_backward"):
                if model in DROPOUT_ATTENTION:
                    continue
                b, h, sq, dd = shapes(o)[0]
                key = (b, h, sq, dd, model in CAUSAL)
                p = sd.setdefault(key, {"batch": b, "heads": h, "seq": sq, "head_dim": dd,
                                        "causal": model in CAUSAL, "fwd_s": 0, "bwd_s": 0})
                p["bwd_s" if op.endswith("backward") else "fwd_s"] = s / n
    # The block's own rows: LayerNorms where both passes ran; sums whose rows are a step's tokens.
    rep = {"schema": "xdeep.elementwise_grid/1", "gpu": d.get("device", "?"), "torch": d.get("torch", "?"),
           "from": "transformer_kernel_profile ops", "layer_norm": [p for p in ln.values() if p["fwd_s"] > 0 and p["bwd_s"] > 0],
           "column_sum": list(cs.values()), "sdpa": [p for p in sd.values() if p["fwd_s"] > 0 and p["bwd_s"] > 0]}
    json.dump(rep, open(out, "w"), indent=1)
    print(f"{out}: {len(rep['layer_norm'])} LayerNorm, {len(rep['column_sum'])} column sums, {len(rep['sdpa'])} SDPA points")
    if len(sys.argv) > 4 and sys.argv[3] == "--against":
        against(rep, json.load(open(sys.argv[4])))


if __name__ == "__main__":
    main()
