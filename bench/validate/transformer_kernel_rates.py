#!/usr/bin/env python3
"""Per-kind rates of the transformer kernel profiles (issue 19 item 6, session 19; analysis only).

  transformer_kernel_rates.py [PROFILE_DIR ...]

Reads transformer_kernel_profile.py's JSON from each folder (default: the committed H100 and H200
profiles under data/checks/) and prints, per configuration, each kind's GPU time per element of
the blocks' residual stream (layers x tokens x hidden, picoseconds), the attention kernels'
throughput, the loss's kernels per logit against the framework probe's `loss_s` on the same kind
of card, and the H100 / H200 time ratio per kind for the configurations both cards ran.
Shapes are the library workloads' (bench/validate/workloads/*.toml). The kinds lump the head and
the loss with the blocks (the decoders' cast_copy and mul hold the logits' passes), so only the
ViT rows are block-only.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = [os.path.join(HERE, "data", "checks", d) for d in
           ("2026-11-27_h100x1_transformer_kernel_profile", "2026-11-27_h200x1_transformer_kernel_profile")]
# layers, hidden, ffn, tokens per sample, causal (workloads/*.toml)
SHAPES = {"timm-vit-s8": (12, 384, 1536, 785, False), "timm-deit-s": (12, 384, 1536, 197, False),
          "timm-vit-b8": (12, 768, 3072, 785, False), "timm-vit-l32": (24, 1024, 4096, 50, False),
          "hf-pythia-1b": (16, 2048, 8192, 1024, True), "hf-olmo-1b": (16, 2048, 8192, 1024, True),
          "hf-gpt2": (12, 768, 3072, 1024, True), "hf-bert-base": (12, 768, 3072, 512, False)}
KINDS = ["layer_norm_fwd", "layer_norm_bwd", "act_fwd", "act_bwd", "add", "cast_copy", "reduce", "mul",
         "dropout", "other"]
SHORT = ["LN f", "LN b", "act f", "act b", "add", "cast", "reduce", "mul", "drop", "other"]


# Bytes per element of the residual stream (layer x token x hidden) that each kind of a timm ViT block's
# kernels moves, counted kernel by kernel (eager, bf16 autocast, fp32 residual stream, f = 4h, biased
# Linears, cuDNN's SDPA writing its output in (b, s, heads, d) order) -- h20k, session 20:
#   LayerNorm forward: 2 x (read 4 + write 4); backward: 2 x (dy, x, dx 12 + dy, x again for the weight
#   and bias gradients 8); GELU forward 4 x (2 + 2), backward 4 x (grad, input, out 6); adds: forward the two
#   residual adds 2 x (4 + 2 + 4), backward the two gradient sums 2 x (4 + 4 + 4); casts and copies:
#   forward the two LayerNorm outputs to 16 bits 2 x 6, backward their gradients back 2 x 6, the 16-bit
#   branch gradients 2 x 6, the q/k/v gradients' stack (UnbindBackward) 3 x 4 and clone (ViewBackward)
#   3 x 4; reductions: the four bias gradients (3h + h + 4h + h) x 2.
VIT_BLOCK_BYTES = {"layer_norm_fwd": 16, "layer_norm_bwd": 40, "act_fwd": 16, "act_bwd": 24, "add": 44,
                   "cast_copy": 60, "reduce": 18}


# The framework probe's loss timed apart (`loss_s` over batch x seq x vocab logits: cross-entropy under
# autocast over 16-bit logits), one report per card of the kernel profiles (h21k, session 21).
PROBES = {"NVIDIA H100 80GB HBM3": "checks/2026-11-28_h100x1_framework_probe_split",
          "NVIDIA H200": "calibration/2026-11-28_h200x2_library_run13"}
# aten ops of a cross-entropy over the logits (top-level ops only: each kernel once).
LOSS_OPS = {"aten::_log_softmax": "log_softmax", "aten::_log_softmax_backward_data": "backward",
            "aten::nll_loss_backward": "zero-fill", "aten::copy_": "casts"}


def loss_table(device, entries):
    """Training's loss kernels per logit against the probe's loss on the same kind of card."""
    path = os.path.join(HERE, "data", PROBES.get(device, "-"), "framework.json")
    probe = None
    if os.path.exists(path):
        for f in json.load(open(path))["framework"]:
            if f.get("loss_s"):
                probe = f["loss_s"] / (f["batch"] * f["seq"] * f["vocab"])
    print(f"{device}: the loss's kernels over the logits (ms; ps per logit)"
          + (f"; the probe's loss {probe * 1e12:.2f} ps per logit" if probe else ""))
    print(f"{'step':<20} {'logits':>7} " + " ".join(f"{k:>11}" for k in LOSS_OPS.values())
          + f" {'w/o casts':>10} {'ps/logit':>9} {'casts ps':>9}")
    for (model, mb), e in entries.items():
        got, logits = {}, 0
        for o in e.get("ops", []):
            if o["op"] not in LOSS_OPS:
                continue
            dims = [d for d in json.loads(o["shapes"]) if isinstance(d, list) and len(d) >= 2]
            if not dims or dims[0][-1] < 20000:  # a vocabulary's width, not a block's
                continue
            n = 1
            for x in dims[0]:
                n *= x
            logits = max(logits, n)
            got[LOSS_OPS[o["op"]]] = got.get(LOSS_OPS[o["op"]], 0.0) + o["s"]
        if "log_softmax" not in got:
            continue
        rest = sum(v for k, v in got.items() if k != "casts")
        print(f"{model + ' mb' + str(mb):<20} {logits / 1e6:6.0f}M "
              + " ".join(f"{got.get(k, 0) * 1e3:11.2f}" for k in LOSS_OPS.values())
              + f" {rest * 1e3:10.2f} {rest / logits * 1e12:9.2f} {got.get('casts', 0) / logits * 1e12:9.2f}")
    print()


def load(folder):
    d = json.load(open(os.path.join(folder, "transformer_kernel_profile.json")))
    return d["device"], {(e["model"], e["micro_batch"]): e for e in d["entries"]}


def secs(e, k):
    return e["kinds"].get(k, {"s": 0.0})["s"]


def main():
    folders = sys.argv[1:] or DEFAULT
    cards = [load(f) for f in folders]
    for device, entries in cards:
        print(f"{device}: ps per layer x token x hidden element (GPU-bound steps: > 50 M elements)")
        print(f"{'step':<20} {'M el':>5} " + " ".join(f"{s:>6}" for s in SHORT)
              + f" {'sum':>6} {'attn TF/s f/b':>14}")
        for (model, mb), e in entries.items():
            L, h, f, s, causal = SHAPES[model]
            n = L * mb * s * h
            if n < 5e7:
                continue
            row = [secs(e, k) * 1e12 / n for k in KINDS]
            # Attention FLOPs as the model counts them: 4 s^2 h per sample and layer forward
            # (half under a causal mask), backward 2.5x.
            fl = 4.0 * s * s * h * (0.5 if causal else 1.0) * mb * L
            af, ab = secs(e, "attn_fwd"), secs(e, "attn_bwd")
            tf = f"{fl / af / 1e12:.0f}/{2.5 * fl / ab / 1e12:.0f}" if af > 0 and ab > 0 else "-"
            print(f"{model + ' mb' + str(mb):<20} {n / 1e6:5.0f} " + " ".join(f"{x:6.1f}" for x in row)
                  + f" {sum(row):6.1f} {tf:>14}")
        print()
    for device, entries in cards:
        print(f"{device}: timm ViT blocks, counted bytes per element and the rate each kind ran at (GB/s)")
        kinds = list(VIT_BLOCK_BYTES)
        print(f"{'step':<20} " + " ".join(f"{k[:10]:>10}" for k in kinds) + f" {'all':>6}")
        for (model, mb), e in entries.items():
            L, h, f, s, causal = SHAPES[model]
            n = L * mb * s * h
            if not model.startswith("timm-") or n < 5e7:
                continue
            rates = [VIT_BLOCK_BYTES[k] * n / secs(e, k) / 1e9 if secs(e, k) > 0 else 0 for k in kinds]
            total = sum(VIT_BLOCK_BYTES.values()) * n / sum(secs(e, k) for k in kinds) / 1e9
            print(f"{model + ' mb' + str(mb):<20} " + " ".join(f"{r:10.0f}" for r in rates) + f" {total:6.0f}")
        print(f"  counted {sum(VIT_BLOCK_BYTES.values())} bytes per element in all; the 4x / 8x rule counts 432")
        print()
    for device, entries in cards:
        loss_table(device, entries)
    if len(cards) == 2:
        (d0, a), (d1, b) = cards
        common = [k for k in a if k in b and SHAPES[k[0]][0] * k[1] * SHAPES[k[0]][3] * SHAPES[k[0]][1] >= 5e7]
        print(f"time ratio {d0} / {d1} per kind, GPU-bound steps both ran ({len(common)})")
        allk = KINDS + ["attn_fwd", "attn_bwd", "gemm", "optimizer", "softmax_loss"]
        for k in allk:
            ta = sum(secs(a[c], k) for c in common)
            tb = sum(secs(b[c], k) for c in common)
            if tb > 0:
                per = " ".join(f"{secs(a[c], k) / secs(b[c], k):.2f}" if secs(b[c], k) > 0 else "-" for c in common)
                print(f"  {k:<15} pooled {ta / tb:.2f}   per step {per}")
        ta = sum(a[c]["gpu_busy_s"] for c in common)
        tb = sum(b[c]["gpu_busy_s"] for c in common)
        print(f"  {'GPU busy':<15} pooled {ta / tb:.2f}")


if __name__ == "__main__":
    main()
