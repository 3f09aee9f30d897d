#!/usr/bin/env python3
"""Where an FSDP2 step's time goes, per op, beside the same model's plain step (h24f, session 24).

  torchrun --standalone --nproc_per_node=2 bench/validate/fsdp_profile_check.py --out DIR \
      [--configs hf-gpt2:1,timm-vit-ti16-384:1,...] [--steps 12] [--deadline-s 170]

Why: over runs 1-16 the FSDP2 rows of transformers' GPT2LMHeadModel family (GPT-2, GPT-2 medium,
Cerebras-GPT-256M / -590M) at micro-batch 1-4 were predicted 18-34 % too fast, while timm ViTs with
the same 12 parameter tensors a block (LayerNorm, biased qkv / proj / fc1 / fc2) were over-predicted;
the model charges FSDP2's host work as the probe's cost per unit and per parameter tensor.
This check tells which FSDP2 work the GPT2 rows pay that the ViTs do not.

Per configuration (model:micro-batch), on both ranks at once (the plain step as two single-GPU
lanes side by side, then FSDP2 as library_suite.py applies it: fully_shard per block and the root,
bf16 parameters, fp32 reduce), each after 3 warm-up steps:
* the median wall step over --steps CUDA-synchronised steps, and the host's own time to return from
  forward, backward and the optimizer step (no synchronisation inside the step; the wait at its end
  is what the GPU still had queued);
* torch.profiler over 2 more steps: per step, every `FSDP::` annotation's count and host time, the
  optimizer step's, the host's self time and count of each aten op (top 40), and the CUDA kernels'
  count and summed time by kind (NCCL, FSDP's copy-in / copy-out / chunk_cat, the rest).
`DIR/rank<r>.json` holds it all; rank 0 prints a table. A GPT-2 built with vocabulary 50304
(`hf-gpt2-v50304`: an even vocabulary, so FSDP2 shards the tied embedding without padding) tells
uneven sharding of the 50257-row embedding from the rest of the family's cost.
Needs 2 GPUs; ~2-3 minutes on 2x H200 with the default configurations.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_profile  # noqa: E402
import library_suite as ls  # noqa: E402  (build, blocks, wrap, batch_for, loss_of, Optimizers)

DEFAULT = ("hf-gpt2:1,hf-gpt2-v50304:1,hf-opt-125m:1,hf-cerebras-gpt-256m:1,timm-vit-ti16-384:1,"
           "timm-vit-s16-384:1,hf-gpt2-medium:1,hf-gpt2:8")
T0 = time.time()


def build(name, device):
    if name == "hf-gpt2-v50304":
        import transformers
        cfg = transformers.GPT2Config(n_positions=ls.SEQ, vocab_size=50304, n_embd=768, n_layer=12, n_head=12)
        return transformers.GPT2LMHeadModel(cfg).to(device)
    return ls.build(name, device)


def base(name):
    return "hf-gpt2" if name == "hf-gpt2-v50304" else name


# Kernels by kind, first match of the lower-cased name wins (kernel_profile.kind_of): FSDP2's
# copies apart from the optimizer's foreach kernels.
KINDS = [("nccl", "nccl"), ("chunk_cat", "chunk_?cat"), ("split_copy", "split_?with_?sizes"),
         ("foreach_copy", r"(multi_tensor_apply|foreach).*copy|copy.*(multi_tensor_apply|foreach)"),
         ("optimizer", "adam"), ("foreach_other", "multi_tensor_apply|foreach"),
         ("gemm", "gemm|cutlass|sm90|nvjet|xmma"), ("attention", "flash|fmha|attention")]


def profile_summary(prof, steps):
    from torch.autograd import DeviceType
    fsdp, ops, kernels = {}, {}, {}
    host_total = 0.0
    for e in prof.events():
        is_gpu = getattr(e, "device_type", None) == DeviceType.CUDA
        dur = e.time_range.elapsed_us() if hasattr(e, "time_range") else 0.0
        if is_gpu:
            k = kernels.setdefault(kernel_profile.kind_of(KINDS, e.name), [0, 0.0])
            k[0] += 1
            k[1] += dur
            continue
        if e.name.startswith("FSDP::") or "Optimizer.step" in e.name or e.name.startswith("ProfilerStep"):
            a = fsdp.setdefault(e.name, [0, 0.0])
            a[0] += 1
            a[1] += dur
        if e.name.startswith("aten::") or e.name.startswith("fsdp::") or e.name.startswith("c10d"):
            a = ops.setdefault(e.name, [0, 0.0])
            a[0] += 1
            self_us = getattr(e, "self_cpu_time_total", dur)
            a[1] += self_us
            host_total += self_us
    per = lambda d: {k: {"count": v[0] / steps, "ms": v[1] / steps / 1e3} for k, v in d.items()}
    top = dict(sorted(per(ops).items(), key=lambda kv: -kv[1]["ms"])[:40])
    return {"annotations": per(fsdp), "ops_top40_by_self_host": top, "ops_all_count": sum(v[0] for v in ops.values()) / steps,
            "ops_self_host_ms": host_total / steps / 1e3, "kernels": per(kernels),
            "kernel_count": sum(v[0] for v in kernels.values()) / steps,
            "kernel_ms": sum(v[1] for v in kernels.values()) / steps / 1e3}


def run(name, mb, mode, rank, world, device, args, trace_dir):
    torch.manual_seed(0)
    model = build(name, device)
    n_tensors = sum(1 for _ in model.parameters())
    n_params = sum(p.numel() for p in model.parameters())
    units = len(ls.blocks(model)) + 1
    if mode == "fsdp":
        model = ls.wrap(base(name), model, "fsdp", rank, world)
    model.train()
    opt = ls.Optimizers(base(name), model.parameters())
    host = {"fwd": [], "bwd": [], "opt": [], "wait": [], "step": []}

    def step(timed):
        x, y = ls.batch_for(base(name), mb, device)
        t0 = time.perf_counter()
        loss = ls.loss_of(base(name), model, x, y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        torch.cuda.synchronize(device)
        t4 = time.perf_counter()
        if timed:
            for k, v in (("fwd", t1 - t0), ("bwd", t2 - t1), ("opt", t3 - t2), ("wait", t4 - t3), ("step", t4 - t0)):
                host[k].append(v * 1e3)

    for _ in range(3):
        step(False)
    if world > 1:
        dist.barrier()
    for _ in range(args.steps):
        step(True)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            step(False)
    summ = profile_summary(prof, 2)
    if rank == 0 and trace_dir and (name, mb) in (("hf-gpt2", 1), ("timm-vit-ti16-384", 1), ("hf-cerebras-gpt-256m", 1)):
        path = os.path.join(trace_dir, f"trace_{mode}_{name}_mb{mb}.json")
        prof.export_chrome_trace(path)
        os.system(f"gzip -f {path}")
    rec = {"model": name, "micro_batch": mb, "mode": mode, "world": world if mode == "fsdp" else 1,
           "param_tensors": n_tensors, "params": n_params, "units": units,
           "median_ms": {k: statistics.median(v) for k, v in host.items()},
           "min_step_ms": min(host["step"]), "max_step_ms": max(host["step"]), "profile": summ}
    del model, opt, prof
    gc.collect()
    torch.cuda.empty_cache()
    return rec


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default=DEFAULT)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--deadline-s", type=float, default=170)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device())
    if world > 1:
        dist.init_process_group("nccl", device_id=device)
    os.makedirs(args.out, exist_ok=True)
    recs = []
    out = os.path.join(args.out, f"rank{rank}.json")
    for cfg in args.configs.split(","):
        name, mb = cfg.split(":")
        for mode in ("single", "fsdp"):
            go = torch.tensor([1.0 if time.time() - T0 < args.deadline_s else 0.0], device=device)
            if world > 1:
                dist.all_reduce(go, op=dist.ReduceOp.MIN)
            if go.item() == 0:
                recs.append({"model": name, "micro_batch": int(mb), "mode": mode, "skipped": "deadline"})
                continue
            try:
                recs.append(run(name, int(mb), mode, rank, world, device, args, args.out))
            except Exception as e:  # noqa: BLE001 - one configuration's failure leaves the others
                recs.append({"model": name, "micro_batch": int(mb), "mode": mode,
                             "error": f"{type(e).__name__}: {str(e)[:300]}"})
            with open(out, "w") as f:
                json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(device),
                           "world": world, "elapsed_s": time.time() - T0, "records": recs}, f, indent=1)
            r = recs[-1]
            if rank == 0:
                if "median_ms" in r:
                    m, pr = r["median_ms"], r["profile"]
                    ann = pr["annotations"]
                    print(f"{name:22s} mb{mb:<3s} {mode:6s} step {m['step']:6.1f} ms (min {r['min_step_ms']:.1f})"
                          f" host fwd {m['fwd']:5.1f} bwd {m['bwd']:5.1f} opt {m['opt']:5.1f} wait {m['wait']:5.1f} |"
                          f" kernels {pr['kernel_count']:.0f} = {pr['kernel_ms']:.1f} ms, aten ops {pr['ops_all_count']:.0f}"
                          f" self {pr['ops_self_host_ms']:.1f} ms [{time.time() - T0:.0f} s]", flush=True)
                    print("    " + ", ".join(f"{k} {v['count']:.0f}x {v['ms']:.1f} ms" for k, v in sorted(ann.items())),
                          flush=True)
                    print("    kernels: " + ", ".join(f"{k} {v['count']:.0f}x {v['ms']:.2f} ms"
                                                       for k, v in sorted(pr["kernels"].items())), flush=True)
                else:
                    print(f"{name} mb{mb} {mode}: {r.get('error') or r.get('skipped')}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
