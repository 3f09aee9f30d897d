#!/usr/bin/env python3
"""Host time an eager framework (PyTorch) spends per kernel, for xdeep's step-time model.

  python3 framework_probe.py --out framework.json [--steps 100] [--warmup 10] [--device 0] [--cpu]

At small micro-batches a model trains only as fast as the host issues its kernels
(Python, dispatcher, autograd, the launch), and that speed differs from machine to
machine by tens of percent (bench/validate/README.md). This probe trains a tiny
GPT with the op mix of xdeep's GPT workloads (token and position embeddings,
LayerNorm, bias-free Linear, causal scaled-dot-product attention, GELU, residual
adds, a tied output head, cross-entropy; bf16 autocast, AdamW) at batch 1, where
the GPU idles between kernels, and times forward + backward. It writes an
xdeep.probe_report/1 file with one `framework` entry: the model's shape, the median
wall time and the kernels launched (torch.profiler, one more pass). The tuner divides
the time by its own kernel count for that shape (tuner/hardware_profile.cc), so the
figure is in the step-time model's units; `xdeep-probe merge` joins the file to the
GPU's other reports.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import time

# The tiny model: every kernel runs in a few microseconds on a current GPU.
SHAPE = {"layers": 4, "hidden": 128, "heads": 4, "ffn": 512, "seq": 128, "vocab": 1024, "batch": 1}


def gpt_classes(torch):
    """The GPT-style decoder (also what bench/memory_validation trains, so the probe's op
    mix is the validated one): Gpt(layers, hidden, heads, ffn, seq, vocab), tied head."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, h, heads, ffn):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h, bias=False)
            self.proj = nn.Linear(h, h, bias=False)
            self.fc1 = nn.Linear(h, ffn, bias=False)
            self.fc2 = nn.Linear(ffn, h, bias=False)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class Gpt(nn.Module):
        recompute = False  # full activation recomputation of every block

        def __init__(self, layers, hidden, heads, ffn, seq, vocab):
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(seq, hidden)
            self.blocks = nn.ModuleList(Block(hidden, heads, ffn) for _ in range(layers))
            self.ln_f = nn.LayerNorm(hidden)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                if self.recompute:
                    x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
                else:
                    x = blk(x)
            return F.linear(self.ln_f(x), self.tok.weight)  # tied output projection

    return Block, Gpt


def kernel_count_and_busy_s(torch, fn, device):
    """Kernels (memory copies and sets included: each costs a launch) and their GPU time
    in one call of fn, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    count, busy_us = 0, 0.0
    for evt in prof.key_averages():
        if device.type == "cuda":
            if getattr(evt, "device_type", None) != torch.autograd.DeviceType.CUDA:
                continue
            busy_us += getattr(evt, "self_device_time_total", None) or getattr(evt, "self_cuda_time_total", 0)
        elif not evt.key.startswith("aten::") or evt.self_cpu_time_total <= 0:
            continue  # CPU smoke run: ops that did work stand in for kernels
        count += evt.count
    return count, busy_us * 1e-6


def measure(args):
    import torch
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        sys.exit(f"framework_probe: PyTorch {torch.__version__} has no scaled_dot_product_attention; "
                 "the probe needs PyTorch 2.0 or later")
    if not args.cpu and not torch.cuda.is_available():
        sys.exit("framework_probe: PyTorch sees no CUDA GPU here (CPU-only build, or no GPU "
                 "allocated); run it in a GPU job, or pass --cpu for a smoke run")
    device = torch.device("cpu") if args.cpu else torch.device("cuda", args.device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    shape = SHAPE
    _, gpt = gpt_classes(torch)
    model = gpt(*(shape[k] for k in ("layers", "hidden", "heads", "ffn", "seq", "vocab"))).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device)
    gen.manual_seed(1234)
    idx = torch.randint(0, shape["vocab"], (shape["batch"], shape["seq"]), device=device, generator=gen)
    target = torch.randint(0, shape["vocab"], (shape["batch"], shape["seq"]), device=device, generator=gen)
    dtype = torch.bfloat16

    def forward_backward():
        with torch.autocast(device.type, dtype=dtype):
            out = model(idx)
            loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
        loss.backward()

    times = []
    for i in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        forward_backward()
        sync()
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
        opt.step()  # outside the timing: the model times the optimizer apart
        opt.zero_grad(set_to_none=True)
    kernels, busy_s = kernel_count_and_busy_s(torch, forward_backward, device)
    times.sort()
    median = statistics.median(times)
    entry = dict(name="torch", version=torch.__version__, device=device.type, model="gpt", **shape,
                 kernels=kernels,
                 median_s=median, min_s=times[0], p95_s=times[min(len(times) - 1, int(0.95 * len(times)))],
                 spread=(times[-1] - times[0]) / median, iterations=len(times),
                 gpu_busy_fraction=min(1.0, busy_s / median))
    gpu = None
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        gpu = {"name": p.name, "count": torch.cuda.device_count(), "memory_bytes": p.total_memory,
               "sm_count": p.multi_processor_count, "compute_capability": f"{p.major}.{p.minor}"}
    versions = {"torch": torch.__version__}
    if torch.version.cuda:
        versions["cuda_runtime"] = torch.version.cuda
    return entry, gpu, versions


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="report file (JSON), written atomically")
    # ~5 ms a pass on an H200 host: 100 passes span half a second, long enough that the
    # host's step-to-step swings (30 % on the device machines) average out in the median.
    ap.add_argument("--steps", type=int, default=100, help="timed forward + backward passes")
    ap.add_argument("--warmup", type=int, default=10, help="untimed passes first")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index")
    ap.add_argument("--cpu", action="store_true",
                    help="smoke run on the CPU (no GPU needed; the tuner ignores its figure)")
    args = ap.parse_args()
    if args.steps < 3 or args.warmup < 1:
        ap.error("--steps must be at least 3 and --warmup at least 1")
    t0 = time.perf_counter()
    try:
        entry, gpu, versions = measure(args)
    except ImportError as e:
        sys.exit(f"framework_probe: PyTorch is not importable here ({e}); run it with the "
                 "Python environment the jobs use")
    report = {
        "schema": "xdeep.probe_report/1",
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "versions": versions,
        "nodes": 1, "ranks": 1, "gpus_per_node": gpu["count"] if gpu else 0,
        "elapsed_s": time.perf_counter() - t0,
        "gemm": [], "attention": [], "bandwidth": [], "collectives": [],
        "framework": [entry], "errors": [],
    }
    if gpu:
        report["gpu"] = gpu
    tmp = f"{args.out}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=2)
    os.replace(tmp, args.out)
    print(f"framework_probe: torch {entry['version']}: forward + backward of a {entry['layers']}-layer "
          f"GPT at batch 1 in {entry['median_s'] * 1e3:.2f} ms, {entry['kernels']} kernels, "
          f"{entry['median_s'] / max(entry['kernels'], 1) * 1e6:.1f} us each, "
          f"GPU busy {entry['gpu_busy_fraction']:.0%}")


if __name__ == "__main__":
    main()
