#!/usr/bin/env python3
"""Kernels a transformers decoder block launches in one training step at micro-batch 1, by kind,
from committed torch.profiler summaries (transformer_kernel_profile.py's JSON), beside the
step-time model's count (h25h, session 25; issue 19 item 6).

  python3 bench/validate/host_block_kinds.py [PROFILE_JSON...]   # default: every committed one

Per block-step: (kernels a step less the optimizer's and NON_BLOCK for the embeddings, head and
loss) over the workload file's layers; each kind over the layers. The model's count is its
forward units times three (backward launches twice the forward's), from tuner/workload.cc's
BuildTransformerLayers: 17 a block (two norms, four GEMMs, four weight and two input casts,
attention, activation, two residual adds and one more), +3 gated MLP, +10 eager RMSNorm, +10
rotary, +8 gelu_new, +half the biased Linears.
"""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NON_BLOCK = 31  # embeddings, final norm, head and loss a step (the two 768-wide GPT-2-class profiles, h24h)


def model_units(toml):
    get = lambda k, d=None: (re.search(rf'^{k}\s*=\s*"?([^"\n#]+?)"?\s*(#.*)?$', toml, re.M) or [None, d])[1]  # noqa: E731
    units = 17
    gated = get("gated_mlp", "false") == "true"
    units += 3 if gated else 0
    units += 10 if get("norm", "") == "rmsnorm_eager" else 0
    units += 10 if get("learned_positions", "true") == "false" else 0
    units += 8 if get("activation", "") == "gelu_new" else 0
    if get("linear_bias", "false") == "true":
        separate = get("separate_qkv", "false") == "true"
        units += ((3 if separate else 1) + 1 + (2 if gated else 1) + 1) // 2
    return units


def main():
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "data", "checks", "*", "transformer_kernel_profile.json"))
                                   + glob.glob(os.path.join(HERE, "data", "checks", "*", "prof",
                                                            "transformer_kernel_profile.json")))
    print(f"{'model':24} {'layers':>6} {'a block-step':>12} {'model':>6} {'ratio':>6}  kinds a block-step")
    for f in files:
        for e in json.load(open(f))["entries"]:
            if e["micro_batch"] != 1 or not e["model"].startswith("hf-"):
                continue
            toml = open(os.path.join(HERE, "workloads", e["model"] + ".toml")).read()
            layers = int(re.search(r"^layers\s*=\s*(\d+)", toml, re.M)[1])
            kinds = {k: v["kernels"] for k, v in e["kinds"].items() if k != "optimizer"}
            block = (sum(kinds.values()) - NON_BLOCK) / layers
            units = 3 * model_units(toml)
            print(f"{e['model']:24} {layers:6} {block:12.1f} {units:6} {block / units:6.2f}  "
                  + " ".join(f"{k} {v / layers:.1f}" for k, v in sorted(kinds.items())))


if __name__ == "__main__":
    main()
