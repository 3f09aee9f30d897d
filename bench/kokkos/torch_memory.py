#!/usr/bin/env python3
"""torch doing the memory-bound operations xdeep-probe's bandwidth kernels time.

Same sizes, same fp32 data, bytes counted as profiler/bandwidth_kernels.h counts them,
timed on device events over batches of back-to-back operations (so Python's launch
cost hides behind the GPU's work, as in training), median of the samples.

  python3 torch_memory.py --elements N --row-length C [--samples 30] [--rounds R] --out torch.json
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

# (full arrays, row-long vectors) moved per operation, as profiler/bandwidth_kernels.h.
TRAFFIC = {"copy": (2, 0), "triad": (3, 0), "adam_update": (7, 0), "layer_norm": (2, 2),
           "softmax": (2, 0), "bias_gelu": (2, 1), "bias_gelu_eager": (2, 1)}


def timed(op, samples, batch):
    start = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    stop = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for _ in range(3):
        op()
    torch.cuda.synchronize()
    for s in range(samples):
        start[s].record()
        for _ in range(batch):
            op()
        stop[s].record()
    torch.cuda.synchronize()
    per_op = [a.elapsed_time(b) / 1e3 / batch for a, b in zip(start, stop)]
    return statistics.median(per_op), min(per_op), max(per_op)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, required=True, help="fp32 elements per full array")
    ap.add_argument("--row-length", type=int, default=4096)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1, help="every kernel once per round")
    ap.add_argument("--kernels", default=",".join(TRAFFIC))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cols = a.row_length
    rows = a.elements // cols
    n = rows * cols
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)

    def rand(*shape):
        return torch.rand(*shape, device=dev, generator=gen) + 0.5

    out = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(0), "elements": n, "row_length": cols, "entries": []}
    compiled = {}
    for kernel in [k for _ in range(a.rounds) for k in a.kernels.split(",")]:
        x = rand(rows, cols)
        y = torch.empty_like(x)
        op = None
        note = ""
        if kernel == "copy":
            op = lambda: y.copy_(x)  # noqa: E731
        elif kernel == "triad":
            z = rand(rows, cols)
            op = lambda: torch.add(x, z, alpha=3.0, out=y)  # noqa: E731
        elif kernel == "adam_update":
            p = torch.nn.Parameter(rand(n))
            p.grad = rand(n)
            opt = torch.optim.AdamW([p], lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                    weight_decay=0.01, fused=True)
            opt.step()  # creates exp_avg / exp_avg_sq
            op = opt.step
            note = "torch.optim.AdamW(fused=True).step() on one fp32 tensor"
        elif kernel == "layer_norm":
            w, b = rand(cols), rand(cols)
            op = lambda: F.layer_norm(x, (cols,), w, b, 1e-5)  # noqa: E731
            note = "also writes per-row mean and rstd (2 floats a row)"
        elif kernel == "softmax":
            op = lambda: torch.softmax(x, dim=-1)  # noqa: E731
            note = "out of place (the probes' softmax is in place: same bytes)"
        elif kernel == "bias_gelu_eager":
            bias = rand(cols)
            op = lambda: F.gelu(x + bias, approximate="tanh")  # noqa: E731
            note = "eager: two kernels, an intermediate written and read (bytes as if fused)"
        elif kernel == "bias_gelu":
            bias = rand(cols)
            try:
                if "bias_gelu" not in compiled:
                    compiled["bias_gelu"] = torch.compile(
                        lambda t, c: F.gelu(t + c, approximate="tanh"))
                fused = compiled["bias_gelu"]
                fused(x, bias)
                op = lambda: fused(x, bias)  # noqa: E731
                note = "torch.compile: one fused kernel"
            except Exception as e:  # no compiler toolchain on the host: say so
                out["entries"].append({"kernel": kernel, "error": f"torch.compile failed: {e}"[:300]})
                continue
        else:
            sys.exit(f"unknown kernel {kernel}")
        full, vecs = TRAFFIC[kernel]
        nbytes = (full * n + vecs * cols) * 4
        # A sample of about 2 ms or more.
        med, _, _ = timed(op, 3, 1)
        batch = max(1, min(200, int(2e-3 / max(med, 1e-7))))
        med, lo, hi = timed(op, a.samples, batch)
        out["entries"].append({"kernel": kernel, "bytes": nbytes, "median_s": med, "min_s": lo,
                               "max_s": hi, "batch": batch, "gbps": nbytes / med / 1e9,
                               "note": note})
        print(f"torch {kernel:16s} {nbytes:>12d} B {med * 1e3:8.3f} ms {nbytes / med / 1e9:8.1f} GB/s",
              flush=True)
        del x, y
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
