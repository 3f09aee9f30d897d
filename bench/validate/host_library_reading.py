#!/usr/bin/env python3
"""Does a tiny transformers decoder read its class's host cost at full size? (h26h, session 26;
issue 19 item 6)

  python3 bench/validate/host_library_reading.py BUILD CHECK_FOLDER [--compute COMPUTE_JSON]

CHECK_FOLDER: a check with the framework probe's report (framework.json, its hf_* fields: the
probe's GPT pass taking turns with transformers' GPT-2, Llama and GPTNeoX decoders of the GPT's
shape) and a host_phase_check.py output (host_phase.json) that ran the same tiny decoders
("probe-hf-KIND", PROBE_HF) beside full-size decoders of each class in the same rounds.
COMPUTE_JSON: a compute report of the same GPU kind for the GEMM model (default: the newest H200
calibration library run's), merged with the check's framework.json as compare_all.py merges.

Each network's micro-batch-1 step (pass + optimizer step, medians over the rounds' windows) is
predicted by `xdeep_validate compare` at that profile: the full-size decoders from their workload
files, the tiny ones from the workload file of their class (hf-gpt2, hf-llama2c-42m,
hf-pythia-160m) at the probe GPT's shape. Prints measured / predicted per network, and per class
the full-size decoder's ratio over its tiny one's: 1 means the tiny decoder, timed by the probe
beside its GPT, would price that class's host time at full size on this host (a reading of the
library's Python share); the GPT-pass-only model is the ratio's numerator alone. Also prints the
probe window's own ratios (hf_KIND_median_s / hf_gpt_median_s).
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics as st
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "profiler"))

# The tiny decoders' workload files: their class's file at the probe GPT's shape (framework_probe's
# library_decoder builds each with its config's defaults: GPT2Config's gelu_new and tied head,
# LlamaConfig tied as written there, GPTNeoXConfig untied).
CLASS_FILE = {"gpt2": "hf-gpt2", "llama": "hf-llama2c-42m", "gpt_neox": "hf-pythia-160m"}
# Full-size decoders of each class (library_suite.py names).
CLASS_OF = {"hf-gpt2": "gpt2", "hf-cerebras-gpt-111m": "gpt2", "hf-cerebras-gpt-256m": "gpt2",
            "hf-gpt-sw3-356m": "gpt2", "hf-llama2c-42m": "llama", "hf-llama2c-15m": "llama",
            "hf-amd-llama-135m": "llama", "hf-smollm-135m": "llama", "hf-pythia-70m": "gpt_neox",
            "hf-pythia-160m": "gpt_neox", "hf-pythia-410m": "gpt_neox"}
GPT_SHAPE = {"layers": 4, "hidden": 128, "heads": 4, "ffn": 512, "seq": 128, "vocab": 1024}
ROW = re.compile(r"^(\S+)\s+single\s+x1\s+mb1\s+([\d.]+)\s+([\d.]+)\s+([+-][\d.]+)%")


def tiny_toml(text, name):
    """A workload file's text at the probe GPT's shape, named `name`."""
    keys = {"name": f'"{name}"', "layers": GPT_SHAPE["layers"], "hidden": GPT_SHAPE["hidden"],
            "heads": GPT_SHAPE["heads"], "kv_heads": GPT_SHAPE["heads"], "ffn": GPT_SHAPE["ffn"],
            "seq_len": GPT_SHAPE["seq"], "vocab": GPT_SHAPE["vocab"]}
    for k, v in keys.items():
        text = re.sub(rf"^{k}\s*=.*$", f"{k} = {v}", text, flags=re.M)
    return text


def newest_h200_compute():
    folders = sorted(glob.glob(os.path.join(HERE, "data", "calibration", "*h200*library*")))
    for f in reversed(folders):
        if os.path.exists(os.path.join(f, "compute.json")):
            return os.path.join(f, "compute.json")
    sys.exit("no H200 calibration compute.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("check")
    ap.add_argument("--compute", default=None)
    args = ap.parse_args()
    fw_path = os.path.join(args.check, "framework.json")
    phase = json.load(open(os.path.join(args.check, "host_phase.json")))
    fw = json.load(open(fw_path))
    gpt = next(e for e in fw["framework"] if e.get("model") == "gpt" and e.get("hidden") == 128)
    print(f"probe window: GPT pass {gpt['median_s'] * 1e3:.2f} ms ({gpt['kernels']} kernels, "
          f"{gpt.get('module_calls', '?')} module calls); in the decoders' turns "
          f"{gpt.get('hf_gpt_median_s', float('nan')) * 1e3:.2f} ms")
    for kind in CLASS_FILE:
        if f"hf_{kind}_median_s" in gpt:
            print(f"  transformers {kind:8} {gpt[f'hf_{kind}_median_s'] * 1e3:6.2f} ms "
                  f"= {gpt[f'hf_{kind}_median_s'] / gpt['hf_gpt_median_s']:.2f}x the GPT's turns, "
                  f"{gpt.get(f'hf_{kind}_kernels', '?')} kernels, {gpt.get(f'hf_{kind}_module_calls', '?')} "
                  f"module calls, fused step {gpt.get(f'hf_{kind}_step_host_s', float('nan')) * 1e3:.2f} ms")

    with tempfile.TemporaryDirectory(prefix="h26h-reading.") as tmp:
        profile = os.path.join(tmp, "profile.json")
        subprocess.run([os.path.join(args.build, "profiler", "xdeep-probe"), "merge", fw_path,
                        args.compute or newest_h200_compute(), "--out", profile],
                       check=True, stdout=subprocess.DEVNULL)
        wl = os.path.join(tmp, "workloads")
        shutil.copytree(os.path.join(HERE, "workloads"), wl)
        for kind, src in CLASS_FILE.items():
            with open(os.path.join(wl, f"{src}.toml")) as f:
                text = f.read()
            with open(os.path.join(wl, f"tiny-{kind}.toml"), "w") as f:
                f.write(tiny_toml(text, f"tiny-{kind}"))
        # Each network's step (pass + step, medians over its windows' medians).
        measured = {}
        for w in phase["windows"]:
            name = w["model"]
            if name.startswith("probe-hf-"):
                name = "tiny-" + name[len("probe-hf-"):]
            elif name.startswith("probe-"):
                continue
            step = st.median(p + s for p, s in zip(w["pass_s"], w["step_host_s"]))
            measured.setdefault(name, []).append(step)
        runs = [{"model": m, "mode": "single", "world_size": 1, "micro_batch": 1, "grad_accum": 1,
                 "tp": 1, "pp": 1, "step_time_median_s": st.median(v)} for m, v in measured.items()]
        suite = os.path.join(tmp, "suite.json")
        with open(suite, "w") as f:
            json.dump({"meta": {"mode": "single"}, "runs": runs}, f)
        p = subprocess.run([os.path.join(args.build, "bench", "validate", "xdeep_validate"), "compare",
                            "--workloads", wl, "--profile", profile, "--runs", suite],
                           capture_output=True, text=True)
        ratio = {}
        for line in p.stdout.splitlines():
            m = ROW.match(line.strip())
            if m:
                ratio[m[1]] = float(m[2]) / float(m[3])
        if not ratio:
            sys.exit(f"compare printed no rows:\n{p.stdout}\n{p.stderr}")
    print("\nnetwork                 measured / predicted (mb1 step)   over its class's tiny decoder")
    for name, r in sorted(ratio.items(), key=lambda kv: (CLASS_OF.get(kv[0], kv[0][5:]), kv[0])):
        kind = name[5:] if name.startswith("tiny-") else CLASS_OF.get(name)
        tiny = ratio.get(f"tiny-{kind}") if kind else None
        rel = f"{r / tiny:6.3f}" if tiny and not name.startswith("tiny-") else ""
        print(f"{name:24} {r:6.3f}                            {rel}")


if __name__ == "__main__":
    main()
