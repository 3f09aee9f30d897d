#!/usr/bin/env python3
"""Baselines for xdeep-probe measured with PyTorch, and the comparison (issue 5, item 6).

  compare_torch.py gemm --report compute.json --out torch_gemm.json
      torch.matmul at every (m, n, k, dtype) of the probe report.
  torchrun --nproc_per_node=2 compare_torch.py allreduce --out torch_allreduce.json
      torch.distributed.all_reduce (NCCL) over the same size sweep as the probe.
  compare_torch.py summarize --compute compute.json --torch-gemm torch_gemm.json \
      --collectives coll_2gpu.json --torch-allreduce torch_allreduce.json --out summary.json
      Ratios probe / torch; exits 1 when a criterion fails:
      GEMM TFLOP/s >= 95 % of torch.matmul's; all-reduce busbw >= 95 % of
      torch's at 64 MiB - 1 GiB.

Both sides time the same way as the probe harness: warm-up, batches of back-to-back
operations between CUDA events, the median over samples; inputs are random, never zeros.
"""
import argparse
import json
import os
import statistics
import sys
import time


def timed_samples(fn, batch, samples, warmup, torch):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(samples):
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop) / 1e3 / batch)
    return out


def kernel_names(fn, torch):
    """Names of the CUDA kernels one call of fn launches (torch's profiler, CUPTI)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        return ";".join(sorted({e.name for e in prof.events()
                                if str(getattr(e, "device_type", "")).endswith("CUDA")}))
    except Exception as ex:  # diagnostics only: never fail the baseline over them
        return f"? ({ex})"


def cmd_gemm(args):
    import torch
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}
    report = json.load(open(args.report))
    results = []
    seen = {}
    for e in report["gemm"]:
        key = (e["m"], e["n"], e["k"], e["dtype"])
        if key in seen:
            continue
        m, n, k, dt = key
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
        # The probe's input distribution (profiler/cuda/kernels.cu): magnitude uniform in
        # [0.1, 1), random sign. GEMM power, hence clocks, depends on the data on H100/H200.
        def probe_like(rows, cols):
            mag = torch.rand(rows, cols, device="cuda") * 0.9 + 0.1
            sign = torch.where(torch.rand(rows, cols, device="cuda") < 0.5, -1.0, 1.0)
            return (mag * sign).to(dtypes[dt])
        a = probe_like(m, k)
        b = probe_like(k, n)
        c = torch.empty(m, n, device="cuda", dtype=dtypes[dt])
        fn = lambda: torch.matmul(a, b, out=c)

        def measure():
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            t1 = max(time.perf_counter() - t0, 1e-7)
            batch = max(1, min(200, int(2e-3 / t1 + 0.999)))
            return statistics.median(timed_samples(fn, batch, args.samples, 0, torch))

        med = measure()
        tflops = 2.0 * m * n * k / med / 1e12
        # Which kernel cuBLAS ran (its name carries tile and cluster shape), and what
        # cuBLASLt's first heuristic choice gives through torch: tells a kernel choice
        # apart from clocks when the probe falls short.
        entry = {"m": m, "n": n, "k": k, "dtype": dt, "median_s": med, "tflops": tflops,
                 "kernel": kernel_names(fn, torch)}
        try:
            torch.backends.cuda.preferred_blas_library("cublaslt")
            entry["cublaslt_tflops"] = 2.0 * m * n * k / measure() / 1e12
            entry["cublaslt_kernel"] = kernel_names(fn, torch)
        except Exception as ex:  # older torch, or no Lt path for this dtype
            entry["cublaslt_error"] = str(ex)
        finally:
            torch.backends.cuda.preferred_blas_library("cublas")
        seen[key] = tflops
        results.append(entry)
        print(f"torch.matmul {m}x{n}x{k} {dt}: {tflops:.1f} TFLOP/s [{entry['kernel']}]; "
              f"via cublaslt {entry.get('cublaslt_tflops', 0):.1f} [{entry.get('cublaslt_kernel', '')}]",
              flush=True)
        del a, b, c
    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
           "gemm": results}
    json.dump(out, open(args.out, "w"), indent=2)


def cmd_paired(args):
    """Probe and torch per shape, alternating, each after the same idle settle time.

    Run 2 showed the GPU's power state, set by what ran just before, moving one kernel's
    rate by up to 16 %; timing whole sets one after the other compares two power
    states. Here every measurement, of either side, starts after `--settle` seconds of
    idle and warms 60 ms like the probe's harness, so the pair differs only in method.
    """
    import subprocess
    import tempfile
    import torch
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}
    shapes = []
    for e in json.load(open(args.report))["gemm"]:
        key = (e["m"], e["n"], e["k"], e["dtype"])
        if key not in shapes:
            shapes.append(key)
    rows = []
    tmp = tempfile.mkdtemp()
    for m, n, k, dt in shapes:
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
        a = ((torch.rand(m, k, device="cuda") * 0.9 + 0.1) *
             torch.where(torch.rand(m, k, device="cuda") < 0.5, -1.0, 1.0)).to(dtypes[dt])
        b = ((torch.rand(k, n, device="cuda") * 0.9 + 0.1) *
             torch.where(torch.rand(k, n, device="cuda") < 0.5, -1.0, 1.0)).to(dtypes[dt])
        c = torch.empty(m, n, device="cuda", dtype=dtypes[dt])
        fn = lambda: torch.matmul(a, b, out=c)
        row = {"m": m, "n": n, "k": k, "dtype": dt, "probe_tflops": [], "torch_tflops": []}
        for _ in range(args.rounds):
            time.sleep(args.settle)
            out = os.path.join(tmp, "p.json")
            subprocess.run([args.probe, "compute", "--suite", "gpu", "--gemm", f"{m}x{n}x{k}",
                            "--dtypes", dt, "--device-bytes", "16M", "--out", out],
                           check=True, capture_output=True, timeout=120)
            row["probe_tflops"].append(json.load(open(out))["gemm"][0]["tflops"])
            time.sleep(args.settle)
            warm_until = time.perf_counter() + 0.06
            while time.perf_counter() < warm_until:
                fn()
                fn()
                torch.cuda.synchronize()
            s = timed_samples(fn, 1, 1, 3, torch)
            batch = max(1, min(200, int(2e-3 / max(s[0], 1e-7) + 0.999)))
            med = statistics.median(timed_samples(fn, batch, args.samples, 0, torch))
            row["torch_tflops"].append(2.0 * m * n * k / med / 1e12)
        rows.append(row)
        print(f"paired {m}x{n}x{k} {dt}: probe {max(row['probe_tflops']):.1f} "
              f"torch {max(row['torch_tflops']):.1f} TFLOP/s", flush=True)
        del a, b, c
    json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
               "settle_s": args.settle, "paired": rows}, open(args.out, "w"), indent=2)


def batch_for(nbytes):
    # Same fixed batching as profiler/nccl/collective_probes.cc.
    if nbytes <= 1 << 20:
        return 20
    if nbytes <= 64 << 20:
        return 5
    return 2


def cmd_allreduce(args):
    import torch
    import torch.distributed as dist
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, n = dist.get_rank(), dist.get_world_size()
    results = []
    size = args.min_bytes
    while size <= args.max_bytes:
        count = size // 4 // n * n
        x = torch.rand(count, device="cuda") + 0.5
        fn = lambda: dist.all_reduce(x)
        s = timed_samples(fn, batch_for(size), args.samples, 5, torch)
        # Ranks differ slightly; take rank 0's as the probe does.
        med = statistics.median(s)
        algbw = count * 4 / med / 1e9
        results.append({"bytes": count * 4, "median_s": med, "algbw_gbps": algbw,
                        "busbw_gbps": algbw * 2 * (n - 1) / n})
        if rank == 0:
            print(f"torch all_reduce {count * 4} B: busbw {algbw * 2 * (n - 1) / n:.2f} GB/s", flush=True)
        size *= args.factor
    if rank == 0:
        json.dump({"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                   "ranks": n, "dtype": "fp32", "all_reduce": results}, open(args.out, "w"), indent=2)
    dist.destroy_process_group()


def cmd_summarize(args):
    ok = True
    summary = {"gemm": [], "all_reduce": []}
    if args.compute and args.torch_gemm:
        # Several rounds may be listed (run_device.sh runs probe, torch, probe, torch):
        # each side keeps its best round per shape, so a GPU that clocked down during
        # one side's round does not decide the ratio.
        probe_best, order, labels = {}, [], {}
        for e in json.load(open(args.compute))["gemm"]:
            key = (e["m"], e["n"], e["k"], e["dtype"], e["pass"], e.get("layer", ""))
            if key not in probe_best:
                order.append(key)
            probe_best[key] = max(probe_best.get(key, 0.0), e["tflops"])
        base, lt, kernels = {}, {}, {}
        for g in json.load(open(args.torch_gemm))["gemm"]:
            key = (g["m"], g["n"], g["k"], g["dtype"])
            base[key] = max(base.get(key, 0.0), g["tflops"])
            lt[key] = max(lt.get(key, 0.0), g.get("cublaslt_tflops", 0.0))
            kernels[key] = (g.get("kernel", ""), g.get("cublaslt_kernel", ""))
        for key in order:
            m, n, k, dt, pas, layer = key
            t = base.get((m, n, k, dt))
            if t is None:
                continue
            p = probe_best[key]
            r = p / t
            passed = r >= 0.95
            ok &= passed
            tl = lt.get((m, n, k, dt), 0.0)
            summary["gemm"].append({"layer": layer, "pass": pas, "m": m, "n": n, "k": k, "dtype": dt,
                                    "probe_tflops": p, "torch_tflops": t, "ratio": r, "ok": passed,
                                    "torch_cublaslt_tflops": tl,
                                    "torch_kernel": kernels[(m, n, k, dt)][0],
                                    "torch_cublaslt_kernel": kernels[(m, n, k, dt)][1]})
            print(f"gemm {layer:10s} {pas:5s} {m}x{n}x{k} {dt}: probe {p:.1f} torch {t:.1f} TFLOP/s "
                  f"ratio {r:.3f} {'ok' if passed else 'FAIL'} (torch via cublaslt {tl:.1f})")
    if args.collectives and args.torch_allreduce:
        probe = json.load(open(args.collectives))
        base = {a["bytes"]: a["busbw_gbps"] for a in json.load(open(args.torch_allreduce))["all_reduce"]}
        for e in probe["collectives"]:
            if e["op"] != "all_reduce" or e["bytes"] not in base:
                continue
            r = e["busbw_gbps"] / base[e["bytes"]]
            gated = (64 << 20) <= e["bytes"] <= (1 << 30)
            passed = r >= 0.95 or not gated
            ok &= passed
            summary["all_reduce"].append({"bytes": e["bytes"], "probe_busbw_gbps": e["busbw_gbps"],
                                          "torch_busbw_gbps": base[e["bytes"]], "ratio": r, "gated": gated,
                                          "ok": passed})
            print(f"all_reduce {e['bytes']:>12d} B: probe {e['busbw_gbps']:.2f} torch {base[e['bytes']]:.2f} "
                  f"GB/s ratio {r:.3f}{'' if gated else ' (not gated)'} {'ok' if passed else 'FAIL'}")
    summary["all_ok"] = ok
    if args.out:
        json.dump(summary, open(args.out, "w"), indent=2)
    print("ALL OK" if ok else "SOME CRITERIA FAILED")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gemm")
    g.add_argument("--report", required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--samples", type=int, default=20)
    a = sub.add_parser("allreduce")
    a.add_argument("--out", required=True)
    a.add_argument("--min-bytes", type=int, default=1024)
    a.add_argument("--max-bytes", type=int, default=1 << 30)
    a.add_argument("--factor", type=int, default=4)
    a.add_argument("--samples", type=int, default=10)
    pr = sub.add_parser("paired", help="probe and torch alternating per shape (not yet run on a GPU)")
    pr.add_argument("--report", required=True, help="a compute report naming the shapes")
    pr.add_argument("--probe", required=True, help="xdeep-probe")
    pr.add_argument("--out", required=True)
    pr.add_argument("--rounds", type=int, default=2)
    pr.add_argument("--settle", type=float, default=0.5)
    pr.add_argument("--samples", type=int, default=20)
    s = sub.add_parser("summarize")
    s.add_argument("--compute")
    s.add_argument("--torch-gemm")
    s.add_argument("--collectives")
    s.add_argument("--torch-allreduce")
    s.add_argument("--out")
    args = p.parse_args()
    if args.cmd == "gemm":
        return cmd_gemm(args)
    if args.cmd == "allreduce":
        return cmd_allreduce(args)
    if args.cmd == "paired":
        return cmd_paired(args)
    return cmd_summarize(args)


if __name__ == "__main__":
    sys.exit(main() or 0)
