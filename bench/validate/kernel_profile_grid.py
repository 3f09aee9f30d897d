#!/usr/bin/env python3
"""The per-op times of transformer_kernel_profile.py's profiles as elementwise_grid_check.py's grid (h20k, session 20).

  kernel_profile_grid.py PROFILE_DIR OUT.json

Takes from each profiled training step the GPU time per call of aten's native_layer_norm and its
backward (rows = batch x tokens, width), of the 2-D column sums (`aten::sum` of a [tokens, cols]
gradient: the Linears' bias gradients) and of cuDNN's SDPA forward and backward (batch, heads,
seq, head size; causal for the decoders; GPT-2's attention runs with dropout and is left out), and
writes them in the grid's format, so kernel_rate_tables.py can build the tuner's tables from the
shapes training ran as well as from the grid.
"""
import ast
import json
import os
import sys

CAUSAL = {"hf-pythia-1b", "hf-olmo-1b", "hf-gpt2"}
DROPOUT_ATTENTION = {"hf-gpt2"}


def shapes(o):
    return ast.literal_eval(o["shapes"])


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


if __name__ == "__main__":
    main()
