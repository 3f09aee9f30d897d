#!/usr/bin/env python3
"""Baselines for xdeep-probe measured with PyTorch, and the comparison (issue 5, item 6).

  compare_torch.py paired --shapes shapes.json --probe xdeep-probe --out paired.json
      The gated GEMM comparison: per round and dtype the probe runs the workload's GEMMs
      (idle --settle-ms before each), then torch.matmul runs the same list, same order,
      measured the same way (alternating which side goes first by round).
  torchrun --nproc_per_node=2 compare_torch.py allreduce --out torch_allreduce.json
      torch.distributed.all_reduce (NCCL) over the same size sweep as the probe.
  compare_torch.py gemm --report compute.json --out torch_gemm.json
      torch.matmul at every shape of a report, plus the kernel it ran (diagnostics).
  compare_torch.py summarize --paired paired.json \
      --collectives coll_2gpu.json --torch-allreduce torch_allreduce.json --out summary.json
      Ratios probe / torch; exits 1 when a criterion fails:
      GEMM TFLOP/s >= 95 % of torch.matmul's; all-reduce busbw >= 95 % of
      torch's at 64 MiB - 1 GiB.

Both sides time the way the probe harness does: warm-up, batches of back-to-back
operations between CUDA events, each batch queued behind a hold so the events time device
work only (the probe's StreamGate, Hold here), the median over samples; inputs follow the
probe's distribution, never zeros.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time


class Hold:
    """The probe's StreamGate, for torch: a spin kernel (torch.cuda._sleep) queued before
    each timed batch and sized to outlast the host's enqueue of that batch, so the start
    event fires with the whole batch queued and the events time device work only, as the
    probe's do. torch has no host-released kernel; the spin lasts twice the enqueue time
    seen per operation so far (at least 50 us), so the GPU idles about as briefly as
    behind the probe's gate. `short` counts batches whose enqueue outlasted the spin
    (their time then includes host cost). With `duty` < 1 the spin also lasts at least
    (1 / duty - 1) of the last batch's time, as the probe's gate waits (--gemm-duty)."""

    def __init__(self, torch, duty=1.0):
        self.torch = torch
        self.duty = duty
        self.last_batch_s = 0.0
        torch.cuda._sleep(1000)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        rates = []
        for _ in range(3):
            start.record()
            torch.cuda._sleep(2_000_000)
            stop.record()
            stop.synchronize()
            rates.append(2_000_000 / (start.elapsed_time(stop) / 1e3))
        self.cycles_per_s = max(rates)  # highest clock: the spin never comes out short
        self.per_op_s = 30e-6
        self.seconds = 0.0
        self.short = 0
        self.frozen = False  # collectives: every rank must hold equally long

    def close(self, batch):
        self.seconds = min(max(2 * self.per_op_s * batch, 50e-6,
                               self.last_batch_s * (1 / self.duty - 1)), 0.05)
        self.torch.cuda._sleep(int(self.seconds * self.cycles_per_s))

    def opened(self, enqueue_s, batch):
        if enqueue_s > self.seconds:
            self.short += 1
        if not self.frozen:
            self.per_op_s = max(0.9 * self.per_op_s, enqueue_s / batch)


def timed_samples(fn, batch, samples, warmup, torch, hold=None):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(samples):
        if hold:
            hold.close(batch)
        t0 = time.perf_counter()
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        if hold:
            hold.opened(time.perf_counter() - t0, batch)
        stop.synchronize()
        out.append(start.elapsed_time(stop) / 1e3 / batch)
        if hold:
            hold.last_batch_s = out[-1] * batch
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
        key = (e["m"], e["n"], e["k"], e["dtype"], e.get("pass", "plain"))
        if key in seen:
            continue
        m, n, k, dt, pas = key
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
        a, b = operands(m, n, k, pas, dtypes[dt], torch)
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
        entry = {"m": m, "n": n, "k": k, "dtype": dt, "pass": pas, "median_s": med, "tflops": tflops,
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


def probe_like(rows, cols, dtype, torch):
    """The probe's input distribution (profiler/cuda/kernels.cu): magnitude uniform in
    [0.1, 1), random sign. GEMM power, hence clocks, depends on the data on H100/H200."""
    mag = torch.rand(rows, cols, device="cuda") * 0.9 + 0.1
    sign = torch.where(torch.rand(rows, cols, device="cuda") < 0.5, -1.0, 1.0)
    return (mag * sign).to(dtype)


def operands(m, n, k, pas, dtype, torch):
    """A (m x k) and B (k x n) stored as the probe stores them for a pass, which is
    how nn.Linear holds them (profiler/cuda/gemm_probe.cc): forward reads the weight
    transposed, wgrad reads dY transposed; dgrad and plain GEMMs are row-major."""
    a = probe_like(k, m, dtype, torch).t() if pas == "wgrad" else probe_like(m, k, dtype, torch)
    b = probe_like(n, k, dtype, torch).t() if pas == "fwd" else probe_like(k, n, dtype, torch)
    return a, b


def torch_like_probe(m, n, k, dt, settle_s, warm_up_s, samples, hold, torch, pas="plain"):
    """torch.matmul timed exactly as profiler/cuda/gemm_probe.cc + harness.cc time a GEMM:
    inputs, idle settle, warm-up (--warm-up-ms) in synchronised pairs, 3 warm-up operations, batch
    calibrated from one operation to ~2 ms (1..200), `samples` event-timed batches each
    behind a hold, median."""
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
              "fp32": torch.float32}
    torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
    a, b = operands(m, n, k, pas, dtypes[dt], torch)
    c = torch.empty(m, n, device="cuda", dtype=dtypes[dt])
    fn = lambda: torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    time.sleep(settle_s)
    warm_until = time.perf_counter() + warm_up_s
    while time.perf_counter() < warm_until:
        timed_samples(fn, 2, 1, 0, torch, hold)
    timed_samples(fn, 3, 1, 0, torch, hold)
    t1 = max(timed_samples(fn, 1, 1, 0, torch, hold)[0], 1e-7)
    batch = max(1, min(200, math.ceil(2e-3 / t1)))
    med = statistics.median(timed_samples(fn, batch, samples, 0, torch, hold))
    del a, b, c
    return 2.0 * m * n * k / med / 1e12


def cmd_paired(args):
    """Probe and torch.matmul measured the same way, interleaved.

    Run 2 showed the GPU's power state, set by what ran just before, moving one kernel's
    rate by up to 16 %, and the old baseline idled between shapes (profiler, a second
    path) while the probe ran them back to back. Here, per round and dtype, the probe runs
    the workload's GEMMs (`--settle-ms`: idle before each shape's warm-up) and torch then
    runs the same list in the same order with the same settle, warm-up, calibration,
    samples, hold and input distribution; the order of the two sides alternates by round.
    Per shape, each side's median over rounds is compared. Each side runs in its own
    process, one at a time, so neither holds a CUDA context while the other measures
    (in run 3's first try the probe, started beside a live torch context, ended with
    exit 2).
    """
    import subprocess
    import tempfile
    shapes = json.load(open(args.shapes))
    shapes.pop("attention", None)
    dts = args.dtypes.split(",")
    tmp = tempfile.mkdtemp()
    rows, order = {}, []
    meta = {"torch_batches_enqueue_outlasted_hold": 0}

    def run_torch(dt, rnd, keys):
        lf, out = os.path.join(tmp, f"l_{dt}_{rnd}.json"), os.path.join(tmp, f"t_{dt}_{rnd}.json")
        json.dump([[k[2], k[3], k[4], k[5], k[1]] for k in keys], open(lf, "w"))
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "torch-gemms", "--list", lf,
                              "--settle-ms", str(args.settle_ms), "--warm-up-ms", str(args.warm_up_ms),
                              "--duty", str(args.duty), "--samples", str(args.samples), "--out", out],
                             capture_output=True, text=True, timeout=300)
        if res.returncode != 0 or not os.path.exists(out):
            print(f"torch side exit {res.returncode}: {res.stderr[-3000:]}", flush=True)
            raise RuntimeError("torch side failed")
        t = json.load(open(out))
        meta.update({k: t[k] for k in ("torch", "cuda", "gpu")})
        meta["torch_batches_enqueue_outlasted_hold"] += t["hold_short"]
        return t["tflops"]

    def run_probe(dt, rnd):
        spec = dict(shapes, dtypes=[dt])
        sf, out = os.path.join(tmp, f"s_{dt}.json"), os.path.join(tmp, f"p_{dt}_{rnd}.json")
        json.dump(spec, open(sf, "w"))
        res = subprocess.run([args.probe, "compute", "--suite", "gpu", "--shapes", sf, "--dtypes", dt,
                              "--settle-ms", str(args.settle_ms), "--warm-up-ms", str(args.warm_up_ms),
                              "--gemm-duty", str(args.duty), "--samples", str(args.samples),
                              "--device-bytes", "16M", "--out", out,
                              *args.probe_args.split()],
                             capture_output=True, text=True, timeout=300)
        # Exit 2: the report lists errors (any probe, the bandwidth ones too); show them,
        # and go on with the GEMMs it did measure. Anything else, or no report, is fatal.
        if res.returncode != 0:
            print(f"probe exit {res.returncode}: {res.stderr[-2000:]}", flush=True)
        if res.returncode not in (0, 2) or not os.path.exists(out):
            raise RuntimeError(f"xdeep-probe failed (exit {res.returncode})")
        rep = json.load(open(out))
        for e in rep.get("errors", []):
            print(f"probe error: {e}", flush=True)
        if not rep.get("gemm"):
            raise RuntimeError("xdeep-probe measured no GEMM")
        return rep["gemm"]

    def save(rounds_done):
        out_rows = []
        for key in order:
            layer, pas, m, n, k, dt = key
            out_rows.append({"layer": layer, "pass": pas, "m": m, "n": n, "k": k, "dtype": dt,
                             **rows[key]})
        json.dump(dict(meta, settle_ms=args.settle_ms, warm_up_ms=args.warm_up_ms, duty=args.duty,
                       probe_args=args.probe_args, rounds=args.rounds,
                       rounds_started=rounds_done, samples=args.samples, paired=out_rows),
                  open(args.out + ".tmp", "w"), indent=2)
        os.replace(args.out + ".tmp", args.out)

    for rnd in range(args.rounds):
        for dt in dts:
            sides = ["probe", "torch"] if rnd % 2 == 0 else ["torch", "probe"]
            listing = None
            for side in sides:
                if side == "probe":
                    t0 = time.perf_counter()
                    entries = run_probe(dt, rnd)
                    listing = entries
                    for e in entries:
                        key = (e.get("layer", ""), e["pass"], e["m"], e["n"], e["k"], e["dtype"])
                        if key not in rows:
                            order.append(key)
                            rows[key] = {"probe_tflops": [], "torch_tflops": []}
                        rows[key]["probe_tflops"].append(e["tflops"])
                    print(f"round {rnd} {dt}: probe {len(entries)} GEMMs in "
                          f"{time.perf_counter() - t0:.1f} s", flush=True)
                else:
                    # The same list in the probe's order (from this round's probe report,
                    # or the previous round's when torch goes first).
                    keys = [k for k in order if k[5] == dt]
                    if listing is not None:
                        keys = [(e.get("layer", ""), e["pass"], e["m"], e["n"], e["k"], e["dtype"])
                                for e in listing]
                    if not keys:  # torch first in round 0 cannot happen (probe goes first)
                        raise RuntimeError("no shape list for torch")
                    t0 = time.perf_counter()
                    for key, tf in zip(keys, run_torch(dt, rnd, keys)):
                        rows.setdefault(key, {"probe_tflops": [], "torch_tflops": []})
                        rows[key]["torch_tflops"].append(tf)
                    print(f"round {rnd} {dt}: torch {len(keys)} GEMMs in "
                          f"{time.perf_counter() - t0:.1f} s", flush=True)
            save(rnd + 1)  # after every round and dtype: a run cut short keeps what it has


def cmd_torch_gemms(args):
    """The torch side of `paired`: torch.matmul at [m, n, k, dtype] rows, in order."""
    import torch
    hold = Hold(torch, args.duty)
    out = [torch_like_probe(m, n, k, dt, args.settle_ms / 1e3, args.warm_up_ms / 1e3, args.samples,
                            hold, torch, *pas)
           for m, n, k, dt, *pas in json.load(open(args.list))]
    json.dump({"torch": torch.__version__, "cuda": torch.version.cuda,
               "gpu": torch.cuda.get_device_name(0), "hold_short": hold.short, "tflops": out},
              open(args.out, "w"))


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
    hold = Hold(torch)  # the probe holds its stream too (StreamGate)
    results = []
    size = args.min_bytes
    while size <= args.max_bytes:
        count = size // 4 // n * n
        # The probe's send pattern (kernels.h): (rank + 1) + (i % 7).
        x = (torch.arange(count, device="cuda") % 7).float() + (rank + 1)
        fn = lambda: dist.all_reduce(x)
        # One hold length for all ranks: a rank whose hold ends later makes the others'
        # collectives wait inside their timed region (run 3's first try adapted the hold
        # per rank, and the baseline came out up to 2x slow at some sizes). Twice the
        # slowest rank's enqueue time per operation, agreed by an all-reduce (MAX).
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(batch_for(size)):
            fn()
        per_op = torch.tensor([(time.perf_counter() - t0) / batch_for(size)], device="cuda")
        dist.all_reduce(per_op, op=dist.ReduceOp.MAX)
        hold.per_op_s, hold.frozen = per_op.item(), True
        s = timed_samples(fn, batch_for(size), args.samples, 5, torch, hold)
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
                   "ranks": n, "dtype": "fp32", "batches_enqueue_outlasted_hold": hold.short,
                   "all_reduce": results}, open(args.out, "w"), indent=2)
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
            key = (g["m"], g["n"], g["k"], g["dtype"], g.get("pass", "plain"))
            base[key] = max(base.get(key, 0.0), g["tflops"])
            lt[key] = max(lt.get(key, 0.0), g.get("cublaslt_tflops", 0.0))
            kernels[key] = (g.get("kernel", ""), g.get("cublaslt_kernel", ""))
        for key in order:
            m, n, k, dt, pas, layer = key
            t = base.get((m, n, k, dt, pas))
            if t is None:
                continue
            p = probe_best[key]
            r = p / t
            passed = r >= 0.95
            ok &= passed
            tl = lt.get((m, n, k, dt, pas), 0.0)
            summary["gemm"].append({"layer": layer, "pass": pas, "m": m, "n": n, "k": k, "dtype": dt,
                                    "probe_tflops": p, "torch_tflops": t, "ratio": r, "ok": passed,
                                    "torch_cublaslt_tflops": tl,
                                    "torch_kernel": kernels[(m, n, k, dt, pas)][0],
                                    "torch_cublaslt_kernel": kernels[(m, n, k, dt, pas)][1]})
            print(f"gemm {layer:10s} {pas:5s} {m}x{n}x{k} {dt}: probe {p:.1f} torch {t:.1f} TFLOP/s "
                  f"ratio {r:.3f} {'ok' if passed else 'FAIL'} (torch via cublaslt {tl:.1f})")
    if args.paired:
        # compare_torch.py paired: both sides measured the same way, interleaved; per
        # shape, each side's median over rounds (the gated figure), and the spread of
        # the per-round ratios.
        p = json.load(open(args.paired))
        for r in p["paired"]:
            if not r["probe_tflops"] or not r["torch_tflops"]:
                continue
            pm, tm = statistics.median(r["probe_tflops"]), statistics.median(r["torch_tflops"])
            ratio = pm / tm
            per_round = [a / b for a, b in zip(r["probe_tflops"], r["torch_tflops"])]
            passed = ratio >= 0.95
            ok &= passed
            summary["gemm"].append({"layer": r["layer"], "pass": r["pass"], "m": r["m"], "n": r["n"],
                                    "k": r["k"], "dtype": r["dtype"], "probe_tflops": pm,
                                    "torch_tflops": tm, "ratio": ratio, "round_ratios": per_round,
                                    "ok": passed})
            print(f"gemm {r['layer']:10s} {r['pass']:5s} {r['m']}x{r['n']}x{r['k']} {r['dtype']}: "
                  f"probe {pm:.1f} torch {tm:.1f} TFLOP/s ratio {ratio:.3f} "
                  f"(rounds {' '.join(f'{x:.3f}' for x in per_round)}) {'ok' if passed else 'FAIL'}")
        g = summary["gemm"]
        for dt in sorted({e["dtype"] for e in g}):
            rs = [e["ratio"] for e in g if e["dtype"] == dt]
            print(f"gemm {dt}: {sum(x >= 0.95 for x in rs)} of {len(rs)} >= 0.95, "
                  f"ratio {min(rs):.3f}-{max(rs):.3f}")
        print(f"gemm: {sum(e['ok'] for e in g)} of {len(g)} shapes >= 0.95")
    if args.collectives and args.torch_allreduce:
        # Several files per side (rounds run alternately): per size, each side's median.
        def medians(files, key, pick):
            vals = {}
            for f in files:
                for e in pick(json.load(open(f))):
                    vals.setdefault(e["bytes"], []).append(e[key])
            return {b: statistics.median(v) for b, v in vals.items()}
        probe = medians(args.collectives, "busbw_gbps",
                        lambda j: [e for e in j["collectives"] if e["op"] == "all_reduce"])
        base = medians(args.torch_allreduce, "busbw_gbps", lambda j: j["all_reduce"])
        for b in sorted(probe):
            if b not in base:
                continue
            r = probe[b] / base[b]
            gated = (64 << 20) <= b <= (1 << 30)
            passed = r >= 0.95 or not gated
            ok &= passed
            summary["all_reduce"].append({"bytes": b, "probe_busbw_gbps": probe[b],
                                          "torch_busbw_gbps": base[b], "ratio": r, "gated": gated,
                                          "ok": passed})
            print(f"all_reduce {b:>12d} B: probe {probe[b]:.2f} torch {base[b]:.2f} "
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
    pr = sub.add_parser("paired", help="probe and torch.matmul measured the same way, interleaved")
    pr.add_argument("--shapes", required=True, help="shapes file (schema xdeep.gemm_shapes/1)")
    pr.add_argument("--probe", required=True, help="xdeep-probe")
    pr.add_argument("--out", required=True)
    pr.add_argument("--dtypes", default="bf16,fp16,tf32,fp32")
    pr.add_argument("--rounds", type=int, default=3)
    pr.add_argument("--settle-ms", type=float, default=300)
    pr.add_argument("--warm-up-ms", type=float, default=60,
                    help="back-to-back GEMMs before each shape's timing (both sides)")
    pr.add_argument("--duty", type=float, default=0.8,
                    help="share of the time GEMMs run while timed, both sides (probe: --gemm-duty)")
    pr.add_argument("--probe-args", default="", help="more xdeep-probe compute options, e.g. '--algos 4'")
    pr.add_argument("--samples", type=int, default=20)
    tg = sub.add_parser("torch-gemms", help="torch side of paired (one process per list)")
    tg.add_argument("--list", required=True)
    tg.add_argument("--settle-ms", type=float, required=True)
    tg.add_argument("--warm-up-ms", type=float, required=True)
    tg.add_argument("--duty", type=float, required=True)
    tg.add_argument("--samples", type=int, required=True)
    tg.add_argument("--out", required=True)
    s = sub.add_parser("summarize")
    s.add_argument("--paired", help="output of `paired` (gated per shape)")
    s.add_argument("--compute")
    s.add_argument("--torch-gemm")
    s.add_argument("--collectives", nargs="+", help="probe collective reports (rounds)")
    s.add_argument("--torch-allreduce", nargs="+", help="allreduce outputs (rounds)")
    s.add_argument("--out")
    args = p.parse_args()
    if args.cmd == "gemm":
        return cmd_gemm(args)
    if args.cmd == "allreduce":
        return cmd_allreduce(args)
    if args.cmd == "paired":
        return cmd_paired(args)
    if args.cmd == "torch-gemms":
        return cmd_torch_gemms(args)
    return cmd_summarize(args)


if __name__ == "__main__":
    sys.exit(main() or 0)
