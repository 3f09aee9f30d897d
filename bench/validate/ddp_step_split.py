#!/usr/bin/env python3
"""What DDP adds to a small model's training step, part by part, on two GPUs (issue 19 item 6).

  torchrun --standalone --nproc_per_node=2 bench/validate/ddp_step_split.py --out DIR \
      [--configs hf-llama2c-42m:1,hf-llama2c-42m:8,timm-vit-l16-320:1,tv-convnext-small-192:32] \
      [--turns 25] [--deadline-s 80]

Written after held-out run 17 (2x H200), whose DDP rows of small models were under-predicted
(llama2.c-42M mb1 / mb8 -26.9 / -22.8 %, ViT-L/16-320 mb1 -20.1 %, ConvNeXt-S-192 mb32 -13.3 %).
Each configuration is library_suite.py's step (its build, optimizer, batch and loss), in four
versions of the same model on each rank, taking turns step by step so that each sees the host
at the same level (the host's speed switches between levels within seconds):

  plain      the model unwrapped: two single-GPU processes side by side, as the suite's lanes;
  ddp_nosync DDP under no_sync(): DDP's forward (its Python, the buffer broadcast) and nothing
             of the reducer in backward;
  ddp_local  DDP with a communication hook that returns its bucket as it is: the reducer's
             per-parameter hooks and bucket copies in and out, no all-reduce, ranks never meet;
  ddp        DDP as library_suite.py wraps it (one NCCL all-reduce per bucket).

So ddp_nosync - plain is DDP's forward, ddp_local - ddp_nosync the reducer's work on the host
and GPU, ddp - ddp_local the all-reduces (their launches, the ranks' meetings, what the GPU
waits for). Each step is timed from an idle GPU, in phases on the host's clock (perf_counter):
forward with the loss, backward, optimizer step with zero_grad, then the synchronize (the GPU's
tail after the host is done). Then one step of each version under torch.profiler on every
rank: kernels by kind (count, GPU time), the NCCL kernels' spans relative to the step, and the
CPU ops of the reducer and the process group. Writes DIR/ddp_step_split.json (rank 0) and
prints the medians per configuration.
"""
import argparse
import copy
import gc
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_profile  # noqa: E402
import library_suite as suite  # noqa: E402  (imports torch)

torch = suite.torch
dist = suite.dist

KINDS = [
    ("nccl", r"nccl"),
    ("optimizer", r"multi_tensor_apply|fused_adam|adam|sgd"),
    ("gemm_conv", r"gemm|nvjet|xmma|cutlass|cublas|sm90_|sm80_|splitk|conv|implicit|winograd"),
    ("attention", r"flash|fmha|attention|sdpa|dot_product"),
    ("mul_div", r"mul|div"),
    ("copy", r"copy|cast|memcpy|memset|fill|cat"),
]
VERSIONS = ["plain", "ddp_nosync", "ddp_local", "ddp"]
PHASES = ["forward", "backward", "optimizer", "sync"]
CPU_OPS = r"nccl|reducer|DistributedDataParallel|broadcast|record_param_comms|allreduce|c10d|" \
          r"aten::mul|aten::copy_|aten::div|aten::cat|autograd"


def local_hook(state, bucket):
    """A comm hook that reduces nothing: the bucket as it is, already done."""
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def versions_of(name, rank, device):
    """{version: (model, optimizer, context factory)} of one model, the same weights."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    base = suite.build(name, device)
    base.train()
    out = {}
    for v in VERSIONS:
        m = base if v == "plain" else DDP(copy.deepcopy(base), device_ids=[rank])
        if v == "ddp_local":
            m.register_comm_hook(None, local_hook)
        ctx = m.no_sync if v == "ddp_nosync" else _null
        out[v] = (m, suite.Optimizers(name, m.parameters()), ctx)
    return out


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False


def one_step(name, model, opt, ctx, mb, device):
    """Host seconds of each phase of one step, from an idle GPU."""
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    with ctx():
        x, y = suite.batch_for(name, mb, device)
        loss = suite.loss_of(name, model, x, y)
        t1 = time.perf_counter()
        loss.backward()
    t2 = time.perf_counter()
    opt.step()
    opt.zero_grad(set_to_none=True)
    t3 = time.perf_counter()
    torch.cuda.synchronize(device)
    t4 = time.perf_counter()
    return [t1 - t0, t2 - t1, t3 - t2, t4 - t3]


def profiled(name, model, opt, ctx, mb, device):
    """One step under torch.profiler: kernels by kind, NCCL spans, reducer / c10d CPU ops."""
    import re
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    torch.cuda.synchronize(device)
    with torch.profiler.profile(activities=acts) as prof:
        one_step(name, model, opt, ctx, mb, device)
    by_kind, kernels = kernel_profile.kernels_by_kind(torch, prof, KINDS, 90)
    events = [e for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
    spans = sorted((e.time_range.start, e.time_range.end, kernel_profile.kind_of(KINDS, e.name)) for e in events)
    out = {"by_kind": {k: {"s": v[0], "count": v[1]} for k, v in by_kind.items()},
           "kernels": kernels[:25], "kernel_count": len(spans)}
    if spans:
        t0 = spans[0][0]
        nccl = [(a - t0, b - t0) for a, b, k in spans if k == "nccl"]
        opt_start = min((a for a, _, k in spans if k == "optimizer"), default=None)
        last_before_opt = max((b for a, b, k in spans if k != "nccl" and (opt_start is None or a < opt_start)),
                              default=t0)
        out.update({"gpu_span_us": spans[-1][1] - t0, "nccl_spans_us": nccl[:400],
                    "optimizer_start_us": None if opt_start is None else opt_start - t0,
                    "last_compute_before_optimizer_us": last_before_opt - t0})
        busy, end = 0.0, t0
        for a, b, _ in spans:
            if b > end:
                busy += b - max(a, end)
                end = b
        out["gpu_busy_us"] = busy
    ops = {}
    for evt in prof.key_averages():
        if getattr(evt, "device_type", None) == torch.autograd.DeviceType.CUDA:
            continue
        if re.search(CPU_OPS, evt.key):
            ops[evt.key[:80]] = {"count": evt.count, "cpu_total_us": evt.cpu_time_total,
                                 "self_cpu_us": evt.self_cpu_time_total}
    out["cpu_ops"] = ops
    return out


def agree(flag, device):
    """True on every rank only if true on all."""
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return t.item() > 0


def run_config(name, mb, args, rank, world, device, t_start):
    vs = versions_of(name, rank, device)
    for v in VERSIONS:  # warm-up; the second step rebuilds DDP's buckets
        for _ in range(args.warmup):
            one_step(name, *vs[v][:2], vs[v][2], mb, device)
    phases = {v: [] for v in VERSIONS}
    for i in range(args.turns):
        for v in VERSIONS:
            phases[v].append(one_step(name, *vs[v][:2], vs[v][2], mb, device))
        if i % 5 == 4 and not agree(time.time() - t_start < args.deadline_s - args.reserve_s, device):
            break
    prof = {v: profiled(name, *vs[v][:2], vs[v][2], mb, device) for v in VERSIONS}
    logging = {}
    try:
        data = vs["ddp"][0]._get_ddp_logging_data()
        logging = {k: v for k, v in data.items() if "bucket" in k or k in ("world_size", "num_parameter_tensors")}
    except Exception as e:  # noqa: BLE001 - private API: a torch without it still gives the times
        logging = {"error": f"{type(e).__name__}: {e}"}
    every = [None] * world
    dist.all_gather_object(every, {"phases": phases, "profile": prof})
    del vs
    gc.collect()
    torch.cuda.empty_cache()
    if rank != 0:
        return None
    rec = {"model": name, "micro_batch": mb, "turns": len(phases["plain"]), "ddp_logging": logging,
           "ranks": every}
    summary = {}
    for v in VERSIONS:
        per_rank = [r["phases"][v] for r in every]
        steps = [[sum(s) for s in p] for p in per_rank]
        # The step of the slowest rank per turn (the suite reports rank 0's; in DDP they agree).
        slowest = [max(t) for t in zip(*steps)]
        summary[v] = {"step_ms": [statistics.median(s) * 1e3 for s in steps],
                      "slowest_rank_step_ms": statistics.median(slowest) * 1e3,
                      "phases_ms": {ph: [statistics.median(s[j] for s in p) * 1e3 for p in per_rank]
                                    for j, ph in enumerate(PHASES)}}
    rec["summary"] = summary
    print(f"== {name} mb{mb}: {rec['turns']} turns; step ms per rank, and phase medians (rank 0 / 1)")
    for v in VERSIONS:
        s = summary[v]
        ph = "  ".join(f"{p} {'/'.join(f'{x:5.1f}' for x in s['phases_ms'][p])}" for p in PHASES)
        k = every[0]["profile"][v]
        print(f"   {v:10} step {'/'.join(f'{x:5.1f}' for x in s['step_ms'])}  {ph}  kernels {k['kernel_count']}"
              f"  nccl {k['by_kind'].get('nccl', {}).get('count', 0)} ({k['by_kind'].get('nccl', {}).get('s', 0) * 1e3:.2f} ms)")
    med = {v: statistics.mean(summary[v]["step_ms"]) for v in VERSIONS}
    print(f"   DDP's forward {med['ddp_nosync'] - med['plain']:+.1f} ms, the reducer's work"
          f" {med['ddp_local'] - med['ddp_nosync']:+.1f}, the all-reduces {med['ddp'] - med['ddp_local']:+.1f};"
          f" ddp - plain {med['ddp'] - med['plain']:+.1f} ms (mean of the ranks' medians)", flush=True)
    return rec


def run_meta(out, world, device):
    """The record's versions, GPU, world, date and command line (the output
    folder `out` as $OUT/<name>: no path of one machine in the record)."""
    return {"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
            "gpu": torch.cuda.get_device_name(device), "world": world,
            "command": " ".join("$OUT/" + os.path.basename(a.rstrip("/")) if a == out and os.path.isabs(a)
                                else a for a in sys.argv),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs",
                    default="hf-llama2c-42m:1,hf-llama2c-42m:8,timm-vit-l16-320:1,tv-convnext-small-192:32")
    ap.add_argument("--turns", type=int, default=25)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--deadline-s", type=float, default=80)
    ap.add_argument("--reserve-s", type=float, default=12)
    args = ap.parse_args()
    t_start = suite.T_START
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world < 2:
        sys.exit("ddp_step_split.py: run it under torchrun --nproc_per_node=2")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=device)
    os.makedirs(args.out, exist_ok=True)
    meta = run_meta(args.out, world, device)
    recs = []
    for c in args.configs.split(","):
        name, mb = c.split(":")
        if not agree(time.time() - t_start < args.deadline_s - args.reserve_s, device):
            recs.append({"model": name, "micro_batch": int(mb), "skipped": "deadline"})
            continue
        try:
            rec = run_config(name, int(mb), args, rank, world, device, t_start)
        except Exception as e:  # noqa: BLE001 - one configuration's failure leaves the others
            rec = {"model": name, "micro_batch": int(mb), "error": f"{type(e).__name__}: {e}"[:300]}
            print(f"ddp_step_split: {name} mb{mb}: {rec['error']}", flush=True)
        if rank == 0 and rec:
            recs.append(rec)
            with open(os.path.join(args.out, "ddp_step_split.json.part"), "w") as f:
                json.dump({"meta": meta, "configs": recs}, f, indent=1)
            os.replace(os.path.join(args.out, "ddp_step_split.json.part"),
                       os.path.join(args.out, "ddp_step_split.json"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
