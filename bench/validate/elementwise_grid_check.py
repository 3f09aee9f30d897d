#!/usr/bin/env python3
"""GPU time of a transformer block's non-GEMM kernels over a grid of shapes (issue 19 item 6, h20k).

  OUT=DIR python3 bench/validate/elementwise_grid_check.py [--quick]

Times, each kernel alone on one GPU (CUDA graphs of 10 calls, the fastest of 3 replays, so
the host's launch cost is not in it):

* LayerNorm forward and backward (aten's native_layer_norm and its backward: dx and the
  weight / bias gradients) over rows (tokens) x width, fp32 in and out, as autocast runs it on
  a transformer's fp32 residual stream;
* the column sum of a 16-bit gradient over its rows (a Linear's bias gradient, `grad.sum(0)`)
  over rows x columns;
* scaled_dot_product_attention forward and forward + backward, bf16, the (b, s, heads, d)
  layout a fused QKV projection gives, over sequence length x head size x causal, with the
  backend PyTorch picks (cuDNN's or flash on Hopper);
* streaming kinds at one large size (copy, fp32 + bf16 add, fp32 -> bf16 cast, GELU forward
  and backward) to relate the others to the bandwidth eager kernels reach.

The kernel profiles (data/checks/2026-11-27_h{100,200}x1_transformer_kernel_profile) show that
LayerNorm's forward costs more per element at short rows and that its backward and the bias
reductions cost twice as much per element at 25-50 k tokens as at 200 k, and that attention
runs at 0.22-0.49 of the block's first GEMM's rate: these are the functions the tuner needs,
measured, not fitted to the training steps. Writes $OUT/elementwise_grid.json and one line
per point on stdout.
"""
import argparse
import datetime
import json
import os
import socket
import sys
import time

LN_ROWS = [4096, 16384, 32768, 65536, 131072, 262144]
LN_WIDTHS = [384, 768, 1024, 2048, 4096]
SUM_COLS = [384, 768, 1152, 2048, 3072, 4096, 8192]
SDPA_SEQ = [128, 197, 256, 512, 785, 1024, 2048, 4096]
SDPA_HEAD_DIM = [64, 128, 256]
SDPA_TOKENS = 16384  # batch x seq per point
SDPA_HIDDEN = 2048   # heads x head_dim per point


def graph_seconds(torch, fn, reps=10):
    """GPU seconds of one fn() call: reps calls captured in a CUDA graph, the fastest of three
    replays; eager calls timed by events where capture fails."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                fn()
        run = g.replay
    except Exception:  # noqa: BLE001 - an op that cannot be captured is timed eagerly
        torch.cuda.synchronize()

        def run():
            for _ in range(reps):
                fn()
    run()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        run()
        e1.record()
        e1.synchronize()
        best = min(best, e0.elapsed_time(e1) * 1e-3 / reps)
    return best


def layer_norm_points(torch, dev, rows_list, widths):
    out = []
    aten = torch.ops.aten
    for w in widths:
        for rows in rows_list:
            x = torch.randn(rows, w, device=dev)
            weight = torch.randn(w, device=dev)
            bias = torch.randn(w, device=dev)
            dy = torch.randn(rows, w, device=dev)
            y, mean, rstd = aten.native_layer_norm(x, [w], weight, bias, 1e-5)
            fwd = graph_seconds(torch, lambda: aten.native_layer_norm(x, [w], weight, bias, 1e-5))
            bwd = graph_seconds(torch, lambda: aten.native_layer_norm_backward(
                dy, x, [w], mean, rstd, weight, bias, [True, True, True]))
            out.append(dict(rows=rows, width=w, fwd_s=fwd, bwd_s=bwd))
            print(f"layer_norm rows {rows:7d} width {w:5d}: fwd {fwd * 1e6:8.1f} us "
                  f"({rows * w * 8 / fwd / 1e9:6.0f} GB/s of 8 B/el), bwd {bwd * 1e6:8.1f} us", flush=True)
            del x, weight, bias, dy, y, mean, rstd
    return out


def column_sum_points(torch, dev, rows_list, cols_list):
    out = []
    for c in cols_list:
        for rows in rows_list:
            g = torch.randn(rows, c, device=dev, dtype=torch.bfloat16)
            t = graph_seconds(torch, lambda: g.sum(0))
            out.append(dict(rows=rows, cols=c, s=t))
            print(f"column_sum rows {rows:7d} cols {c:5d}: {t * 1e6:8.1f} us "
                  f"({rows * c * 2 / t / 1e9:6.0f} GB/s)", flush=True)
            del g
    return out


def sdpa_points(torch, dev, seqs, head_dims):
    F = torch.nn.functional
    out = []
    for causal in (False, True):
        for d in head_dims:
            heads = SDPA_HIDDEN // d
            for s in seqs:
                b = max(1, SDPA_TOKENS // s)
                # Leaves that are views of one (b, s, 3, heads, d) tensor: the layout training
                # passes, without the unbind's gradient stack (an elementwise copy, not attention).
                qkv = torch.randn(b, s, 3, heads, d, device=dev, dtype=torch.bfloat16)
                q, k, v = (t.detach().requires_grad_() for t in qkv.permute(2, 0, 3, 1, 4).unbind(0))
                do = torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16)
                try:
                    fwd = graph_seconds(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))

                    def fwd_bwd():
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        torch.autograd.grad(o, (q, k, v), do)
                    both = graph_seconds(torch, fwd_bwd)
                except Exception as e:  # noqa: BLE001 - a shape no backend takes is skipped
                    print(f"sdpa seq {s} head_dim {d} causal {causal}: {type(e).__name__}: {e}", flush=True)
                    continue
                flops = 4.0 * b * heads * s * s * d * (0.5 if causal else 1.0)
                out.append(dict(batch=b, heads=heads, seq=s, head_dim=d, causal=causal, fwd_s=fwd,
                                bwd_s=max(0.0, both - fwd)))
                print(f"sdpa seq {s:5d} head_dim {d:3d} causal {int(causal)} batch {b:4d}: fwd {fwd * 1e6:8.1f} us "
                      f"{flops / fwd / 1e12:6.0f} TFLOP/s, bwd {(both - fwd) * 1e6:8.1f} us "
                      f"{2.5 * flops / max(both - fwd, 1e-9) / 1e12:6.0f} TFLOP/s (2.5x fwd FLOPs)", flush=True)
                del qkv, q, k, v, do
    return out


def stream_points(torch, dev):
    n = 1 << 28
    x32 = torch.randn(n, device=dev)
    x16 = torch.randn(n, device=dev, dtype=torch.bfloat16)
    g16 = torch.randn(n, device=dev, dtype=torch.bfloat16)
    o32 = torch.empty(n, device=dev)
    F = torch.nn.functional
    ops = [("copy_fp32", 8, lambda: o32.copy_(x32)),
           ("add_fp32_bf16", 10, lambda: torch.add(x32, x16, out=o32)),
           ("cast_fp32_bf16", 6, lambda: x32.to(torch.bfloat16)),
           ("gelu_fwd_bf16", 4, lambda: F.gelu(x16)),
           ("gelu_bwd_bf16", 6, lambda: torch.ops.aten.gelu_backward(g16, x16))]
    out = []
    for name, per, fn in ops:
        t = graph_seconds(torch, fn, reps=5)
        out.append(dict(op=name, elements=n, bytes=per * n, s=t))
        print(f"stream {name:<15}: {t * 1e3:7.3f} ms, {per * n / t / 1e9:6.0f} GB/s", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for elementwise_grid.json")
    ap.add_argument("--quick", action="store_true", help="a third of the grid (smoke run)")
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        sys.exit("elementwise_grid_check: needs a CUDA GPU")
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    rows = LN_ROWS[::2] if args.quick else LN_ROWS
    report = dict(schema="xdeep.elementwise_grid/1",
                  created=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  host=socket.gethostname(), torch=torch.__version__, cuda=torch.version.cuda,
                  gpu=torch.cuda.get_device_name(dev),
                  sm_count=torch.cuda.get_device_properties(dev).multi_processor_count)
    sections = [("stream", lambda: stream_points(torch, dev)),
                ("layer_norm", lambda: layer_norm_points(torch, dev, rows, LN_WIDTHS)),
                ("column_sum", lambda: column_sum_points(torch, dev, rows, SUM_COLS)),
                ("sdpa", lambda: sdpa_points(torch, dev, SDPA_SEQ, SDPA_HEAD_DIM))]
    for name, fn in sections:
        try:
            report[name] = fn()
        except Exception as e:  # noqa: BLE001 - keep the other sections
            print(f"{name}: {type(e).__name__}: {e}", flush=True)
            report[name] = []
        torch.cuda.empty_cache()
    report["elapsed_s"] = time.perf_counter() - t0
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "elementwise_grid.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(f"elementwise_grid_check: {report['gpu']}, torch {report['torch']}, {report['elapsed_s']:.1f} s")


if __name__ == "__main__":
    main()
