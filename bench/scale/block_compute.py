#!/usr/bin/env python3
"""One GPU's share of a published run's transformer block, measured: what the
built-in hardware profiles' compute figures (tuner/hardware_profile.cc) are
checked against (bench/scale/README.md, "The built-in profiles' compute").

For each shape below -- the slice that one tensor-parallel rank of a published
layout computes -- times on one GPU, bf16, with CUDA events:
  * each of the block's GEMMs as the tuner names them (forward x W^T, dgrad
    dY W, wgrad dY^T X), alone, TFLOP/s;
  * the attention core alone, forward and forward + backward;
  * the whole block forward + backward through autograd, as Megatron runs it
    with sequence parallelism: norms and residual adds on s / tp tokens, the
    all-gather before the column-split GEMMs stood in for by a local copy
    (x.repeat(tp)), the reduce-scatter after the row-split ones by a slice --
    communication itself is not timed (the tuner charges it apart);
  * the block again for SUSTAIN_S seconds, the mean of the second half:
    clocks settle under sustained load, as in training.
Writes $OUT/block_compute.json and prints one line per measurement.

    OUT=/tmp/out python3 bench/scale/block_compute.py          # ~60-90 s on one H100
    OUT=/tmp/out SHAPES=llama3-405b-tp8 python3 bench/scale/block_compute.py
"""
import json
import math
import os
import subprocess
import time

import torch
import torch.nn.attention
import torch.nn.functional as F

# name: hidden, heads, kv_heads, ffn, seq, micro-batch, tp, gated (SwiGLU +
# RMSNorm + RoPE, no biases) or not (GELU + LayerNorm, biases), attention
# (flash: sdpa's FlashAttention; math: scores materialised, softmax, dropout,
# as Megatron ran before FlashAttention), kv_seq (context parallel: keys and
# values a rank attends to, causal work balanced: half of them, unmasked).
SHAPES = {
    # Dubey et al. 2024, Table 4: TP 8, sequence 8192, micro-batch 1.
    "llama3-405b-tp8": dict(h=16384, heads=128, kv=8, ffn=53248, s=8192, mb=1, tp=8, gated=True,
                            attn="flash", kv_seq=0),
    # The 128K row: CP 16, each rank 8192 queries against the gathered keys.
    "llama3-405b-tp8-cp16": dict(h=16384, heads=128, kv=8, ffn=53248, s=8192, mb=1, tp=8,
                                 gated=True, attn="flash", kv_seq=131072 // 2),
    # Korthikanti et al. 2022 / Narayanan et al. 2021: TP 8, sequence 2048, micro-batch 1.
    "gpt-175b-tp8": dict(h=12288, heads=96, kv=96, ffn=49152, s=2048, mb=1, tp=8, gated=False,
                         attn="math", kv_seq=0),
    "gpt-530b-tp8": dict(h=20480, heads=128, kv=128, ffn=81920, s=2048, mb=1, tp=8, gated=False,
                         attn="math", kv_seq=0),
    "gpt-1t-tp8": dict(h=25600, heads=160, kv=160, ffn=102400, s=2048, mb=1, tp=8, gated=False,
                       attn="math", kv_seq=0),
    "gpt-22b-tp8": dict(h=6144, heads=64, kv=64, ffn=24576, s=2048, mb=1, tp=8, gated=False,
                        attn="math", kv_seq=0),
    # BLOOM 176B: TP 4, micro-batch 2 (BigScience's training README).
    "bloom-176b-tp4": dict(h=14336, heads=112, kv=112, ffn=57344, s=2048, mb=2, tp=4,
                           gated=False, attn="math", kv_seq=0),
}
GEMM_REPS = int(os.environ.get("GEMM_REPS", "20"))
BLOCK_REPS = int(os.environ.get("BLOCK_REPS", "10"))
SUSTAIN_S = float(os.environ.get("SUSTAIN_S", "4"))
DT = torch.bfloat16
DEV = torch.device("cuda", 0)
FLASH_GQA = [True]  # sdpa's FlashAttention takes grouped keys (enable_gqa); found out on first use


def timed(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps  # ms


def rand(*shape, grad=False):
    return (torch.randn(*shape, device=DEV, dtype=DT) * 0.02).requires_grad_(grad)


def local_dims(c):
    d = c["h"] // c["heads"]
    heads, kv = c["heads"] // c["tp"], max(1, c["kv"] // c["tp"])
    ffn = c["ffn"] // c["tp"]
    return d, heads, kv, ffn


def gemm_list(c):
    """The block's GEMMs on one rank, (name, m, n, k): out = X[m,k] W[n,k]^T."""
    d, heads, kv, ffn = local_dims(c)
    m = c["s"] * c["mb"]
    return [("qkv", m, (heads + 2 * kv) * d, c["h"]),
            ("out", m, c["h"], heads * d),
            ("fc1", m, (2 if c["gated"] else 1) * ffn, c["h"]),
            ("fc2", m, c["h"], ffn)]


def time_gemms(c):
    rows = []
    for name, m, n, k in gemm_list(c):
        x, w, dy = rand(m, k), rand(n, k), rand(m, n)
        flops = 2.0 * m * n * k
        for layout, fn in (("forward", lambda: x @ w.t()), ("dgrad", lambda: dy @ w),
                           ("wgrad", lambda: dy.t() @ x)):
            ms = timed(fn, GEMM_REPS)
            rows.append(dict(gemm=name, layout=layout, m=m, n=n, k=k, ms=ms,
                             tflops=flops / ms / 1e9))
            print(f"  {name:4s} {layout:7s} m {m:6d} n {n:6d} k {k:6d}: {ms:8.3f} ms "
                  f"{flops / ms / 1e9:6.1f} TFLOP/s", flush=True)
        del x, w, dy
    return rows


def rope(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def attention(c, q, k, v, mask):
    """q: (mb, heads, s, d); k, v: (mb, kv, s_kv, d)."""
    if c["attn"] == "flash":
        gqa = k.shape[1] != q.shape[1]
        if gqa and not FLASH_GQA[0]:
            # this torch's FlashAttention takes no grouped keys: expand them
            # (a copy of 1 / group of the queries' size; the kernel's work is the same)
            k = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
            v = v.repeat_interleave(q.shape[1] // v.shape[1], 1)
            gqa = False
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            try:
                return F.scaled_dot_product_attention(q, k, v, is_causal=c["kv_seq"] == 0,
                                                      enable_gqa=gqa)
            except RuntimeError:
                if not gqa:
                    raise
                FLASH_GQA[0] = False
        return attention(c, q, k, v, mask)
    # Megatron before FlashAttention: baddbmm of q k^T, masked softmax (its
    # fused kernel reads and writes 16 bits), dropout, scores x v.
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    scores = scores.masked_fill(mask, float("-inf"))
    p = F.dropout(torch.softmax(scores, dim=-1), 0.1, training=True)
    return torch.matmul(p, v)


def attention_flops(c):
    d, heads, _, _ = local_dims(c)
    s = c["s"]
    if c["kv_seq"]:
        return 4.0 * c["mb"] * heads * s * c["kv_seq"] * d
    causal = 0.5 if c["attn"] == "flash" else 1.0  # math attention computes the masked half
    return 4.0 * c["mb"] * heads * s * s * d * causal


def make_inputs(c):
    d, heads, kv, _ = local_dims(c)
    s_kv = c["kv_seq"] or c["s"]
    q = rand(c["mb"], heads, c["s"], d, grad=True)
    k = rand(c["mb"], kv, s_kv, d, grad=True)
    v = rand(c["mb"], kv, s_kv, d, grad=True)
    mask = None
    if c["attn"] == "math":
        mask = torch.ones(c["s"], s_kv, device=DEV, dtype=torch.bool).triu(1)
    return q, k, v, mask


def time_attention(c):
    q, k, v, mask = make_inputs(c)
    g = torch.randn(q.shape, device=DEV, dtype=DT)
    fwd = timed(lambda: attention(c, q, k, v, mask), BLOCK_REPS)

    def both():
        attention(c, q, k, v, mask).backward(g)

    fb = timed(both, BLOCK_REPS)
    fl = attention_flops(c)
    print(f"  attention {c['attn']}: forward {fwd:.3f} ms ({fl / fwd / 1e9:.1f} TFLOP/s), "
          f"forward + backward {fb:.3f} ms ({3.5 * fl / fb / 1e9:.1f} TFLOP/s at 3.5x forward "
          f"FLOPs)", flush=True)
    return dict(flops_fwd=fl, fwd_ms=fwd, fwd_bwd_ms=fb, fwd_tflops=fl / fwd / 1e9,
                fwd_bwd_tflops_at_3_5x=3.5 * fl / fb / 1e9)


def make_block(c):
    d, heads, kv, ffn = local_dims(c)
    h, gated = c["h"], c["gated"]
    w = dict(qkv=rand((heads + 2 * kv) * d, h, grad=True), out=rand(h, heads * d, grad=True),
             fc1=rand((2 if gated else 1) * ffn, h, grad=True), fc2=rand(h, ffn, grad=True),
             n1=torch.ones(h, device=DEV, dtype=DT, requires_grad=True),
             n2=torch.ones(h, device=DEV, dtype=DT, requires_grad=True))
    if not gated:
        for name, size in (("qkv", (heads + 2 * kv) * d), ("out", h), ("fc1", ffn), ("fc2", h)):
            w[name + "_b"] = torch.zeros(size, device=DEV, dtype=DT, requires_grad=True)
        w["n1_b"] = torch.zeros(h, device=DEV, dtype=DT, requires_grad=True)
        w["n2_b"] = torch.zeros(h, device=DEV, dtype=DT, requires_grad=True)
    pos = torch.arange(c["s"], device=DEV, dtype=torch.float32)[:, None]
    inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d))
    ang = torch.cat((pos * inv, pos * inv), dim=-1)
    w["cos"], w["sin"] = ang.cos().to(DT), ang.sin().to(DT)
    return w


def block(c, w, x, kv_extra, mask):
    """x: this rank's s / tp tokens of the sequence (sequence parallel), (mb, s / tp, h)."""
    d, heads, kv, ffn = local_dims(c)
    mb, s, h, tp, gated = c["mb"], c["s"], c["h"], c["tp"], c["gated"]

    def norm(t, name):
        if gated:
            return F.rms_norm(t, (h,), w[name])
        return F.layer_norm(t, (h,), w[name], w[name + "_b"])

    def linear(t, name):
        return F.linear(t, w[name], None if gated else w[name + "_b"])

    y = norm(x, "n1").repeat(1, tp, 1)  # stands for the all-gather of sequence parallelism
    qkv = linear(y, "qkv").view(mb, s, heads + 2 * kv, d)
    q, k, v = qkv.split([heads, kv, kv], dim=2)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if gated:
        q, k = rope(q, w["cos"], w["sin"]), rope(k, w["cos"], w["sin"])
    if kv_extra is not None:
        # context parallel: the keys and values gathered from the other ranks
        k = torch.cat((k, kv_extra[0]), dim=2)
        v = torch.cat((v, kv_extra[1]), dim=2)
    a = attention(c, q, k, v, mask).transpose(1, 2).reshape(mb, s, heads * d)
    o = linear(a, "out")[:, : s // tp]  # stands for the reduce-scatter
    if not gated:
        o = F.dropout(o, 0.1, training=True)
    x = x + o
    y = norm(x, "n2").repeat(1, tp, 1)
    u = linear(y, "fc1")
    if gated:
        gate, up = u.chunk(2, dim=-1)
        u = F.silu(gate) * up
    else:
        u = F.gelu(u, approximate="tanh")
    o = linear(u, "fc2")[:, : s // tp]
    if not gated:
        o = F.dropout(o, 0.1, training=True)
    return x + o


def time_block(c):
    w = make_block(c)
    d, _, kv, _ = local_dims(c)
    kv_extra = None
    if c["kv_seq"]:
        kv_extra = (rand(c["mb"], kv, c["kv_seq"] - c["s"], d), rand(c["mb"], kv, c["kv_seq"] - c["s"], d))
    mask = None
    if c["attn"] == "math":
        mask = torch.ones(c["s"], c["s"], device=DEV, dtype=torch.bool).triu(1)
    x = rand(c["mb"], c["s"] // c["tp"], c["h"], grad=True)
    g = torch.randn(x.shape, device=DEV, dtype=DT)
    fwd = timed(lambda: block(c, w, x, kv_extra, mask), BLOCK_REPS)

    def both():
        block(c, w, x, kv_extra, mask).backward(g)

    fb = timed(both, BLOCK_REPS)
    # sustained: as many iterations as fit SUSTAIN_S, the second half timed
    n = max(4, int(SUSTAIN_S * 1e3 / fb))
    for _ in range(n // 2):
        both()
    sustained = timed(both, n - n // 2, warmup=0)
    gemm_flops = sum(2.0 * m * n_ * k for _, m, n_, k in gemm_list(c))
    fl = 3 * gemm_flops + 3.5 * attention_flops(c)
    print(f"  block: forward {fwd:.3f} ms, forward + backward {fb:.3f} ms, sustained {sustained:.3f} ms "
          f"({n} runs); {fl / sustained / 1e9:.1f} TFLOP/s (GEMMs x3 + attention x3.5)", flush=True)
    return dict(fwd_ms=fwd, fwd_bwd_ms=fb, sustained_fwd_bwd_ms=sustained, sustained_runs=n,
                gemm_flops_fwd=gemm_flops, attention_flops_fwd=attention_flops(c),
                tflops_sustained=fl / sustained / 1e9)


def smi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.max.sm,power.draw,"
                               "power.limit,temperature.gpu", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvidia-smi: {e}"


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    names = os.environ.get("SHAPES", ",".join(SHAPES)).split(",")
    doc = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
               cuda=torch.version.cuda, cublas_note="torch.matmul, default cuBLAS(Lt) heuristics",
               smi_before=smi(), shapes={})
    print(f"{doc['device']}, torch {doc['torch']}, CUDA {doc['cuda']}; {doc['smi_before']}", flush=True)
    t0 = time.time()
    for name in names:
        c = SHAPES[name]
        print(f"{name}: {c}", flush=True)
        entry = dict(shape=c)
        if not c["kv_seq"]:
            entry["gemms"] = time_gemms(c)
        entry["attention"] = time_attention(c)
        torch.cuda.empty_cache()
        entry["block"] = time_block(c)
        torch.cuda.empty_cache()
        doc["shapes"][name] = entry
        print(f"  ({time.time() - t0:.0f} s so far; {smi()})", flush=True)
    doc["smi_after"] = smi()
    doc["flash_enable_gqa"] = FLASH_GQA[0]
    out = os.environ.get("OUT", ".")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "block_compute.json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
