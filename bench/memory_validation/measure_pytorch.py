#!/usr/bin/env python3
"""Measure peak GPU memory and step time of real PyTorch training runs.

Ground truth for the tuner's memory model (tests/tuner/memory_validation_test.cc)
and, later, for its step-time model. GPT-style decoder models built from plain
torch.nn (no downloads, synthetic tokens) and torchvision's ResNet-50 train for
a few steps with AdamW under bf16 autocast:

  single  one GPU                         python3 measure_pytorch.py --mode single --out X.json
  ddp     DistributedDataParallel, 2 GPUs torchrun --nproc_per_node=2 measure_pytorch.py --mode ddp ...
  fsdp    FSDP2 fully_shard per block + root, MixedPrecisionPolicy(bf16 params,
          fp32 reduce), 2 GPUs            torchrun --nproc_per_node=2 measure_pytorch.py --mode fsdp ...

For every (model, micro-batch) it records torch.cuda.max_memory_allocated (what
the tuner predicts; the CUDA context and NCCL buffers are outside it and are
recorded separately), max_memory_reserved, and the median step time. Results
are written after every configuration, so a run cut short keeps what it had.

Several configurations in one process can leak into each other: DDP's Reducer
buckets may outlive their model, at times for the rest of the process, and the
baseline subtracted then moves. Each configuration therefore starts once the
memory of the one before is gone, or records what was still held
(`held_before_bytes`: xdeep_validate leaves such a peak out); and with --kernels
the profiled steps run after every configuration was timed (CUPTI, once
started, slows the launches of what is timed after it). DDP and FSDP
record every rank's figures and the peak of each phase (setup,
forward+backward, optimizer step).
"""
import argparse
import contextlib
import datetime
import gc
import json
import math
import os
import socket
import statistics
import sys
import time

PROCESS_START = time.time()  # before torch's import: what a process spends besides timing


def bind_to_gpu_cpus():
    """XDEEP_GPU_CPUS ("0,1,2,3;16,17,18,19": CPUs per local rank, bench/validate/gpu_cpus.py)
    binds this process before torch starts its threads, which inherit the binding."""
    lists = os.environ.get("XDEEP_GPU_CPUS", "").split(";")
    mine = lists[int(os.environ.get("LOCAL_RANK", "0")) % len(lists)]
    if mine:
        os.sched_setaffinity(0, {int(c) for c in mine.split(",")})


bind_to_gpu_cpus()
import torch  # noqa: E402 (after the binding)
import torch.nn.functional as F  # noqa: E402

# name -> (layers, hidden, heads, ffn); seq 1024, vocab 50257, tied embeddings
# (GPT-3 paper table 2.1 sizes; the tuner's presets use the same names).
GPT_SIZES = {
    "gpt-125m": (12, 768, 12, 3072),
    "gpt-350m": (24, 1024, 16, 4096),
    "gpt-760m": (24, 1536, 16, 6144),
    "gpt-1.3b": (24, 2048, 16, 8192),
}
SEQ = 1024
VOCAB = 50257


# The model the framework probe runs too (profiler/framework_probe.py): one definition.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "profiler"))
from framework_probe import (device_kernels, device_seconds, fully_shard_as_trained,  # noqa: E402
                             gpt_classes, kernel_category)

_, _Gpt = gpt_classes(torch)


def GPT(layers, hidden, heads, ffn):  # noqa: N802 (a class, as before)
    return _Gpt(layers, hidden, heads, ffn, SEQ, VOCAB)


def rough_estimate_bytes(name, mode, mb, world):
    """Conservative guess used only to skip configurations that would surely run
    out of memory (an OOM on one rank can hang the other in a collective)."""
    if name == "resnet50":
        return 25.6e6 * 22 + mb * 0.25e9
    layers, h, heads, ffn = GPT_SIZES[name]
    p = VOCAB * h + SEQ * h + layers * 12 * h * h
    static = p * (16 / world + 6) if mode == "fsdp" else p * (22 if mode == "ddp" else 18)
    # 34 bytes per token and hidden unit per layer with fused attention (Korthikanti et
    # al. 2022), 14 per logit: -11..+36 % of the GPTs' measured peaks (reserved; the
    # 2026-11-26 H200 and H100 runs), below the 15 % margin where it matters. 38 h +
    # 4 ffn skipped GPT-1.3B at micro-batch 16 on 80 GB cards that fit it.
    act = mb * SEQ * (layers * 34 * h + 14 * VOCAB)
    return static + act


def build(name, device):
    with torch.device(device):
        if name == "resnet50":
            import torchvision
            model = torchvision.models.resnet50()
        else:
            model = GPT(*GPT_SIZES[name])
    return model


def batch(name, mb, device, gen):
    if name == "resnet50":
        x = torch.randn(mb, 3, 224, 224, device=device, generator=gen)
        y = torch.randint(0, 1000, (mb,), device=device, generator=gen)
    else:
        x = torch.randint(0, VOCAB, (mb, SEQ), device=device, generator=gen)
        y = torch.randint(0, VOCAB, (mb, SEQ), device=device, generator=gen)
    return x, y


def profile_step(step_fn, device, top=12):
    """One more step under torch.profiler: kernel count and GPU time per
    category, to tell launch-bound steps from compute-bound ones, and the `top`
    kernels by GPU time (name, seconds, launches)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step_fn()
        torch.cuda.synchronize(device)
    wall = time.perf_counter() - t0
    busy, count, kernels = {}, {}, []
    for evt in device_kernels(torch, prof.key_averages()):
        s = device_seconds(evt)
        cat = kernel_category(evt.key)
        busy[cat] = busy.get(cat, 0.0) + s
        count[cat] = count.get(cat, 0) + evt.count
        kernels.append((evt.key[:120], s, evt.count))
    kernels.sort(key=lambda k: -k[1])
    return {"wall_s": wall, "gpu_s": busy, "kernels": count, "top": kernels[:top]}


def extra_steps(times, min_seconds, world, device, cap=500):
    """Timed steps still to run so that they span min_seconds in all, as many on every rank
    (the ranks' collectives must pair up): the host's speed switches between levels a few
    seconds apart, so a window of seconds samples it as training does
    (bench/validate/data/checks/2026-11-26_h100x1_host_check_pinned)."""
    if min_seconds <= 0:  # every rank was given the same --min-seconds
        return 0
    left = min_seconds - sum(times)
    n = 0 if left <= 0 else min(cap, math.ceil(left / statistics.median(times)))
    if world > 1:
        t = torch.tensor([n], device=device)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
        n = int(t.item())
    return n


def settle(device, idle_bytes, timeout_s=2.0):
    """Waits until the memory allocated returns to `idle_bytes` (the process's before any
    configuration), at most timeout_s; returns the bytes still held above it. cuBLAS's
    workspaces go too: a fresh process allocates them in its first step, inside the peak.
    DDP's buckets may not go (bench/validate/data/checks/2026-11-26_h100x2_grouped_check)."""
    clear_cublas = getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)
    deadline = time.perf_counter() + timeout_s
    while True:
        gc.collect()
        torch.cuda.synchronize(device)
        clear_cublas()
        torch.cuda.empty_cache()
        held = torch.cuda.memory_allocated(device) - idle_bytes
        if held <= 0 or time.perf_counter() > deadline:
            return max(0, held)
        time.sleep(0.05)


def wrapped(name, mode, device, recompute, built=lambda: None):
    """The model of `name` on `device`, wrapped for `mode` (built() called before), and its
    optimizer."""
    model = build(name, device)
    built()
    if recompute and name != "resnet50":
        model.recompute = True
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, device_ids=[device.index])
    elif mode == "fsdp":
        fully_shard_as_trained(torch, model, name == "resnet50")
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4)


def training_step(name, mode, mb, device, model, opt, world, grad_accum, after_backward=None):
    """One optimizer step's function: grad_accum micro-batches, then AdamW;
    after_backward() (if given) runs once the host has issued the last backward."""
    gen = torch.Generator(device=device)
    gen.manual_seed(1234 + (torch.distributed.get_rank() if world > 1 else 0))

    def step():
        for a in range(grad_accum):
            x, y = batch(name, mb, device, gen)
            # DDP: reduce only on the last micro-batch; FSDP reduce-scatters each.
            sync = (contextlib.nullcontext() if mode != "ddp" or a == grad_accum - 1
                    else model.no_sync())
            with sync:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = model(x)
                    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
                (loss / grad_accum).backward()
            del out, loss, x, y
        if after_backward:
            after_backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def profile_one(name, mode, mb, device, world, grad_accum=1, recompute=False):
    """torch.profiler's view of one step of a configuration timed before (profile_step),
    after two warm-up steps."""
    model, opt = wrapped(name, mode, device, recompute)
    step = training_step(name, mode, mb, device, model, opt, world, grad_accum)
    for _ in range(2):
        step()
    breakdown = profile_step(step, device)
    del model, opt, step
    return breakdown


def run_one(name, mode, mb, device, steps, warmup, world, grad_accum=1, recompute=False,
            min_seconds=0.0):
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    # Peaks per phase (reset_peak_memory_stats between phases; their maximum is
    # the run's max_memory_allocated) to attribute DDP's extra memory.
    phase_peaks = {}
    reserved_peak = [0]

    def mark(phase):
        phase_peaks[phase] = max(phase_peaks.get(phase, 0),
                                 torch.cuda.max_memory_allocated(device) - base)
        reserved_peak[0] = max(reserved_peak[0], torch.cuda.max_memory_reserved(device))
        torch.cuda.reset_peak_memory_stats(device)

    after_build = [0]

    def built():
        after_build[0] = torch.cuda.memory_allocated(device) - base

    model, opt = wrapped(name, mode, device, recompute, built)
    params = sum(p.numel() for p in model.parameters())
    after_wrap = torch.cuda.memory_allocated(device) - base  # DDP: + Reducer buckets
    mark("setup")
    after_step = []  # allocated after each step (DDP rebuilds its buckets in step 2)
    # Per timed step: seconds, the seconds until the host had issued the last
    # backward (its own speed, whatever the other ranks do), the main thread's CPU.
    times, issued, cpus = [], [], []
    issued_at = [0.0]
    pin_main_thread()

    def after_backward():
        issued_at[0] = time.perf_counter()
        torch.cuda.synchronize(device)
        mark("forward_backward")

    step = training_step(name, mode, mb, device, model, opt, world, grad_accum, after_backward)

    def timed_step(keep):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize(device)
        mark("optimizer_step")
        after_step.append(int(torch.cuda.memory_allocated(device) - base))
        if keep:
            times.append(time.perf_counter() - t0)
            issued.append(issued_at[0] - t0)
            cpus.append(current_cpu())

    for i in range(warmup + steps):
        timed_step(i >= warmup)
    for _ in range(extra_steps(times, min_seconds, world, device)):
        timed_step(True)
    loss_ok = True
    steady = torch.cuda.memory_allocated(device) - base  # weights, optimizer state, DDP buckets
    mark("end")
    peak = max(phase_peaks.values())
    peak_reserved = reserved_peak[0]
    free, total = torch.cuda.mem_get_info(device)
    outside = total - free - torch.cuda.memory_reserved(device)
    del model, opt, step
    return {
        "params": params,
        "peak_allocated_bytes": int(peak),
        "peak_reserved_bytes": int(peak_reserved),
        "steady_allocated_bytes": int(steady),
        "outside_allocator_bytes": int(outside),
        "after_build_bytes": int(after_build[0]),
        "after_wrap_bytes": int(after_wrap),
        "after_step_bytes": after_step,
        "phase_peak_bytes": {k: int(v) for k, v in phase_peaks.items()},
        "step_time_median_s": statistics.median(times),
        "step_times_s": times,
        "host_issue_s": issued,
        "step_cpus": cpus,
        "ok": loss_ok,
    }


def pin_main_thread():
    """XDEEP_MAIN_CPU=N: this (the main) thread alone onto CPU N, after CUDA and torch
    started their threads, which keep the process's CPUs: to see whether a launch-bound
    run's speed follows the core its main thread runs on (bench/validate/host_check.sh)."""
    cpu = os.environ.get("XDEEP_MAIN_CPU", "")
    if cpu:
        os.sched_setaffinity(0, {int(cpu)})  # Linux: 0 is the calling thread


def current_cpu():
    """The CPU the calling thread is on (/proc's `processor` field), -1 where unknown: a
    process's launch speed may follow the core its main thread runs on."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def eager_op_host_seconds(device, ops=3000):
    """Host time PyTorch spends to issue one small eager op (Python, dispatcher,
    kernel launch), the floor of a launch-bound step, median of 5 rounds."""
    a = torch.ones(256, device=device)
    b = torch.ones(256, device=device)
    rounds = []
    for _ in range(5):
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(ops):
            torch.add(a, b, out=a)
        rounds.append((time.perf_counter() - t0) / ops)
        torch.cuda.synchronize(device)
    return statistics.median(rounds)


def nccl_version():
    try:
        v = torch.cuda.nccl.version()
        return ".".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)
    except Exception:  # noqa: BLE001 - a missing NCCL is recorded, not fatal
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["single", "ddp", "fsdp"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="gpt-125m,gpt-350m,resnet50,gpt-760m,gpt-1.3b")
    ap.add_argument("--micro-batches", default="1,2,4,8,16")
    ap.add_argument("--resnet-micro-batches", default="1,4,16,32,64")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=150.0, help="stop starting new configs after this")
    ap.add_argument("--grad-accum", type=int, default=1, help="micro-batches per optimizer step")
    ap.add_argument("--recompute", action="store_true", help="checkpoint every transformer block")
    ap.add_argument("--kernels", action="store_true",
                    help="profile one more step of each configuration once all are timed: "
                         "kernel count and GPU time per kind")
    ap.add_argument("--min-seconds", type=float, default=0.0,
                    help="time more than --steps steps until they span this many seconds")
    ap.add_argument("--window-mb", type=int, default=None,
                    help="--min-seconds only for micro-batches up to this (default: all)")
    args = ap.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.mode != "single" and world < 2:
        sys.exit("ddp/fsdp need torchrun --nproc_per_node=2")
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    if world > 1:
        torch.distributed.init_process_group("nccl", device_id=device,
                                             timeout=datetime.timedelta(seconds=90))
    props = torch.cuda.get_device_properties(device)
    meta = {
        "schema": "xdeep.memory_validation/1",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "gpu": props.name,
        "gpu_memory_bytes": props.total_memory,
        "gpu_count_used": world,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl_version(),
        "mode": args.mode,
        "precision": "bf16-autocast" if args.mode != "fsdp" else "bf16 params (MixedPrecisionPolicy) + autocast",
        "optimizer": "adamw (foreach)",
        "seq_len": SEQ,
        "vocab": VOCAB,
        "steps": args.steps,
        "min_seconds": args.min_seconds,
        "warmup": args.warmup,
        "command": " ".join(sys.argv),
        "eager_op_host_s": eager_op_host_seconds(device),
        "cpus": sorted(os.sched_getaffinity(0)),
    }
    runs = []
    start = time.time()

    def save():
        if rank == 0:
            with open(args.out, "w") as f:
                json.dump({"meta": meta, "runs": runs}, f, indent=1)

    save()
    idle_bytes = torch.cuda.memory_allocated(device)
    for name in args.models.split(","):
        mbs = args.resnet_micro_batches if name == "resnet50" else args.micro_batches
        for mb in [int(m) for m in mbs.split(",")]:
            rec = {"model": name, "mode": args.mode, "world_size": world, "micro_batch": mb,
                   "grad_accum": args.grad_accum,
                   "recompute": bool(args.recompute and name != "resnet50")}
            if time.time() - start > args.budget_s:
                rec["skipped"] = "time budget"
            elif rough_estimate_bytes(name, args.mode, mb, world) > 0.85 * props.total_memory:
                rec["skipped"] = "estimated out of memory"
            if "skipped" in rec:
                runs.append(rec)
                save()  # the file says what was not measured, and why
                if rank == 0:
                    print(f"{args.mode} {name} mb={mb} skipped: {rec['skipped']}", flush=True)
                continue
            try:
                # The configuration before must be gone from memory, or the baseline moves.
                rec["held_before_bytes"] = settle(device, idle_bytes)
                windowed = args.window_mb is None or mb <= args.window_mb
                res = run_one(name, args.mode, mb, device, args.steps, args.warmup, world,
                              args.grad_accum, args.recompute,
                              args.min_seconds if windowed else 0.0)
                if world > 1:
                    # Every rank's figures; the tuner predicts the worst rank. Host issue
                    # times too: where launch-bound, a synchronous step waits for the
                    # slower host, and each rank's own show by how much.
                    mine = {k: res[k] for k in ("peak_allocated_bytes", "steady_allocated_bytes",
                                                "peak_reserved_bytes", "after_wrap_bytes",
                                                "after_step_bytes", "phase_peak_bytes",
                                                "step_times_s", "host_issue_s", "step_cpus")}
                    mine["rank"] = rank
                    everyone = [None] * world
                    torch.distributed.all_gather_object(everyone, mine)
                    res["ranks"] = everyone
                    res["peak_allocated_bytes"] = max(r["peak_allocated_bytes"] for r in everyone)
                    res["steady_allocated_bytes"] = min(r["steady_allocated_bytes"] for r in everyone)
                rec.update(res)
            except torch.cuda.OutOfMemoryError as e:  # only reached single-GPU in practice
                rec["oom"] = True
                rec["error"] = str(e).splitlines()[0][:200]
                gc.collect()
                torch.cuda.empty_cache()
            except Exception as e:  # deterministic failures hit every rank alike
                rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                gc.collect()
                torch.cuda.empty_cache()
            runs.append(rec)
            if rank == 0:
                print(f"{args.mode} {name} mb={mb} peak={rec.get('peak_allocated_bytes', 0)/2**30:.2f} GiB "
                      f"step={rec.get('step_time_median_s', float('nan'))*1e3:.1f} ms "
                      f"{'OOM' if rec.get('oom') else ''}(done {time.time() - PROCESS_START:.1f} s in)",
                      flush=True)
            save()
    # Profiled last: CUPTI, once started, slows the launches of anything timed after it.
    for rec in runs if args.kernels else []:
        if "step_time_median_s" not in rec:
            continue
        settle(device, idle_bytes)
        try:
            rec["kernel_profile"] = profile_one(rec["model"], args.mode, rec["micro_batch"], device,
                                                world, args.grad_accum, rec["recompute"])
        except Exception as e:  # noqa: BLE001 - the timing stands without its profile
            rec["kernel_profile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        save()
    if rank == 0:
        print(f"{args.mode} {args.models}: done {time.time() - PROCESS_START:.1f} s in", flush=True)
    if world > 1:
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
