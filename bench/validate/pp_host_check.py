#!/usr/bin/env python3
"""Where a torch.distributed.pipelining PP=2 step (1F1B over 4 micro-batches) of a small
transformers decoder spends its host's time, beside the same stages run without the library
(h25p, session 25; issue 19 item 6).

  torchrun --standalone --nproc_per_node=2 bench/validate/pp_host_check.py --out DIR \
      [--models hf-llama2c-42m,hf-cerebras-gpt-111m,hf-danube3-500m] [--micro-batches 1,8] [--rounds 3]
      [--steps 5] [--budget-s 55]

Run 17's llama2.c-42M PP step at micro-batch 1 read 72.8 ms (minimum 58.6) against 67.5 at
micro-batch 8; the model says 58.1 and 69.8 (the stage's launches at the host's speed, four
micro-batches a step, the fill and drain hidden in the host's lead). Per model, per
micro-batch, with every configuration resident and taking turns (the host's speed switches
within seconds):

  pp     library_suite.py's own PP step (PipelinePart, PipelineStage, Schedule1F1B over 4
         micro-batches, fused AdamW per stage), timed as the suite times it; inside it, on each
         rank, the host's seconds in the stage's module forward, in torch.autograd.backward,
         in the loss, in dist.batch_isend_irecv, in scale_grads, and the schedule's remainder
         (the library's own Python per action), and the step's host issue time (before the
         synchronisation) and the optimizer's;
  plain  each rank its own stage, no library: 4 micro-batches of forward and backward (rank 0:
         the embeddings and first half with a gradient given at its output, as a stage's
         backward gets it; rank 1: the second half, the norm, the head and the loss from an
         input that needs its gradient), then the same optimizer -- what the model prices per
         stage and micro-batch;
  single the whole model on each rank side by side at the same micro-batch, 4 micro-batches
         accumulated (the model's single-GPU launch level on this host).

The slowest rank's median and minimum per quantity; one profiled step per configuration
(torch.profiler, rank 0 and rank 1: kernel launches, GPU kernels' busy time). Writes
DIR/pp_host_check.json (rank 0, after every round) and prints a summary. Needs 2 GPUs and
transformers; ~60 s on 2x H200 with the defaults.
"""
import argparse
import contextlib
import datetime
import gc
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import library_suite as suite  # noqa: E402 - the models, stages, optimizers and step as the suite trains them
import tp_host_check as tp_check  # noqa: E402 - the ranks' rounds and their per-rank figures

T0 = time.time()
CHUNKS = 4  # library_suite.py's pp_chunks


class HostClock:
    """Host seconds inside wrapped callables, by name; nested calls count in each."""

    def __init__(self):
        self.s = {}
        self.n = {}

    def wrap(self, name, fn):
        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.s[name] = self.s.get(name, 0.0) + time.perf_counter() - t
                self.n[name] = self.n.get(name, 0) + 1
        return timed

    def reset(self):
        self.s, self.n = {}, {}


CLOCK = HostClock()
ACTIVE = [False]  # the library's entry points are wrapped process-wide: count only inside a pp step


def install_wraps():
    """dist.batch_isend_irecv and torch.autograd.backward as the library calls them (module
    attributes looked up at call time)."""
    import torch.distributed.pipelining.schedules as schedules
    import torch.distributed.pipelining.stage as stage_mod

    def gated(name, fn):
        w = CLOCK.wrap(name, fn)
        return lambda *a, **kw: (w if ACTIVE[0] else fn)(*a, **kw)

    dist.batch_isend_irecv = gated("p2p", dist.batch_isend_irecv)
    torch.autograd.backward = gated("autograd_backward", torch.autograd.backward)
    for mod in (schedules, stage_mod):
        if hasattr(mod, "dist"):
            mod.dist.batch_isend_irecv = dist.batch_isend_irecv


BUILT = {}


def built(name, rank, device):
    """One model per name, initialised on the GPU (random weights either way): the whole model
    for the single-GPU configurations, this rank's PipelinePart of the same modules (and its
    optimizer) for pp and plain, which thus train the same stage."""
    if name not in BUILT:
        torch.manual_seed(0)
        with torch.device(device):
            full = suite.build(name, device)
        part = suite.PipelinePart(full, rank == 0).to(device)
        BUILT[name] = (full, part, suite.optimizer_for(name, part.parameters()))
    return BUILT[name]


class Config:
    def __init__(self, name, kind, mb, rank, world, device, same=None):
        self.name, self.kind, self.mb, self.rank, self.world, self.device = name, kind, mb, rank, world, device
        self.times = {k: [] for k in ("step", "issue", "sched", "opt", "fwd_module", "autograd_backward",
                                      "loss", "p2p", "scale_grads", "library")}
        if same is not None:
            self.__dict__.update({k: v for k, v in same.__dict__.items()
                                  if k in ("part", "model", "opt", "scheds", "loss_fn", "hidden")})
            return
        full, part, part_opt = built(name, rank, device)
        self.hidden = full.config.hidden_size
        if kind == "single":
            self.model = full
            self.model.train()
            self.opt = suite.Optimizers(name, self.model.parameters())
            return
        self.part, self.opt = part, part_opt
        self.loss_fn = lambda logits, y: torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), y.flatten())
        self.scheds = {}

    def label(self):
        return f"{self.name} {self.kind} mb{self.mb}"

    def _pp_step(self):
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B
        mb = self.mb
        if mb not in self.scheds:
            stage = PipelineStage(self.part, self.rank, self.world, self.device)
            stage.forward_one_chunk = CLOCK.wrap("forward_one_chunk", stage.forward_one_chunk)
            stage.scale_grads = CLOCK.wrap("scale_grads", stage.scale_grads)
            self.scheds[mb] = Schedule1F1B(stage, n_microbatches=CHUNKS, loss_fn=CLOCK.wrap("loss", self.loss_fn))
        sched = self.scheds[mb]
        x, y = suite.batch_for(self.name, mb * CHUNKS, self.device)
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            if self.rank == 0:
                sched.step(x)
            else:
                sched.step(target=y)
        t1 = time.perf_counter()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return t1 - t0, time.perf_counter() - t1

    def _plain_step(self):
        t0 = time.perf_counter()
        for _ in range(CHUNKS):
            x, y = suite.batch_for(self.name, self.mb, self.device)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                if self.rank == 0:
                    out = self.part(x)
                    g = torch.ones_like(out)
                    torch.autograd.backward(out, g)
                else:
                    h = torch.randn(self.mb, x.shape[1], self.hidden, device=self.device, requires_grad=True)
                    out = self.part(h)
                    loss = self.loss_fn(out, y)
                    torch.autograd.backward(loss)
        t1 = time.perf_counter()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return t1 - t0, time.perf_counter() - t1

    def _single_step(self):
        t0 = time.perf_counter()
        for _ in range(CHUNKS):
            x, y = suite.batch_for(self.name, self.mb, self.device)
            suite.loss_of(self.name, self.model, x, y).backward()
        t1 = time.perf_counter()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return t1 - t0, time.perf_counter() - t1

    def step(self):
        torch.cuda.synchronize(self.device)
        CLOCK.reset()
        fwd_mod = [0.0]
        hook = None
        if self.kind == "pp":
            def pre(_m, _a):
                fwd_mod.append(time.perf_counter())

            def post(_m, _a, _o):
                fwd_mod[0] += time.perf_counter() - fwd_mod.pop()
            hook = (self.part.register_forward_pre_hook(pre), self.part.register_forward_hook(post))
        ACTIVE[0] = self.kind == "pp"
        t0 = time.perf_counter()
        try:
            run = {"pp": self._pp_step, "plain": self._plain_step, "single": self._single_step}[self.kind]
            sched, opt = run()
        finally:
            ACTIVE[0] = False
            if hook:
                for h in hook:
                    h.remove()
        t1 = time.perf_counter()
        torch.cuda.synchronize(self.device)
        wall = time.perf_counter() - t0
        s = dict(CLOCK.s)
        parts = {"step": wall, "issue": t1 - t0, "sched": sched, "opt": opt, "fwd_module": fwd_mod[0],
                 "autograd_backward": s.get("autograd_backward", 0.0), "loss": s.get("loss", 0.0),
                 "p2p": s.get("p2p", 0.0), "scale_grads": s.get("scale_grads", 0.0)}
        if self.kind == "pp":
            parts["library"] = sched - parts["fwd_module"] - parts["autograd_backward"] - parts["loss"]
        else:
            parts["library"] = 0.0
        return parts

    def turn(self, steps, timed=True):
        for _ in range(steps):
            p = self.step()
            if timed:
                for k, v in p.items():
                    self.times[k].append(v)

    def profile(self):
        """One step's host launches and GPU kernel time (torch.profiler), after a warm one."""
        from torch.profiler import ProfilerActivity, profile
        self.step()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            self.step()
        launches, kernels, busy_us, nccl_us = 0, 0, 0.0, 0.0
        for e in prof.events():
            if e.name in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"):
                launches += 1
            if str(e.device_type).endswith("CUDA"):
                kernels += 1
                d = e.time_range.elapsed_us()
                if "nccl" in e.name.lower():
                    nccl_us += d
                else:
                    busy_us += d
        return {"launches": launches, "gpu_kernels": kernels, "gpu_busy_ms": busy_us / 1e3,
                "nccl_kernel_ms": nccl_us / 1e3}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="hf-llama2c-42m,hf-cerebras-gpt-111m,hf-danube3-500m")
    ap.add_argument("--micro-batches", default="1,8")
    ap.add_argument("--kinds", default="pp,plain,single")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=55)
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world != 2:
        sys.exit("pp_host_check.py: run it with torchrun --nproc_per_node=2")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=device)
    install_wraps()
    os.makedirs(args.out, exist_ok=True)
    import transformers
    meta = {"schema": "xdeep.pp_host_check/1", "host": socket.gethostname(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "gpu": torch.cuda.get_device_name(device), "torch": torch.__version__,
            "transformers": transformers.__version__, "world": world, "command": " ".join(sys.argv),
            "rounds": args.rounds, "steps": args.steps, "chunks": CHUNKS, "python": sys.version.split()[0]}
    mbs = [int(m) for m in args.micro_batches.split(",")]
    configs, results = [], []

    def save():
        if rank == 0:
            tmp = os.path.join(args.out, "pp_host_check.json.part")
            with open(tmp, "w") as f:
                json.dump({"meta": meta, "results": results}, f, indent=1)
            os.replace(tmp, os.path.join(args.out, "pp_host_check.json"))

    for name in args.models.split(","):
        for kind in args.kinds.split(","):
            first = None
            for mb in mbs:
                err = None
                try:
                    c = Config(name, kind, mb, rank, world, device, first)
                    first = first or c
                    c.turn(3, timed=False)  # warm-up (the schedule learns its shapes)
                except Exception as e:  # noqa: BLE001 - one failure leaves the others measured
                    err = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
                flag = torch.tensor([0.0 if err else 1.0], device=device)
                dist.all_reduce(flag, op=dist.ReduceOp.MIN)
                if flag.item() > 0:
                    configs.append(c)
                else:
                    results.append({"model": name, "kind": kind, "mb": mb, "error": err or "other rank"})
                    if rank == 0:
                        print(f"{name} {kind} mb{mb}: {err or 'failed on another rank'}", flush=True)
    if rank == 0:
        print(f"{len(configs)} configurations built in {time.time() - T0:.0f} s", flush=True)
    def round_done(rnd, done):
        results[:] = [r for r in results if "error" in r]
        for c in configs:
            got = tp_check.gathered(c.times, world)
            results.append({"model": c.name, "kind": c.kind, "mb": c.mb, "steps": len(c.times["step"]),
                            "rank_median_s": [g[0] for g in got], "rank_min_s": [g[1] for g in got]})
        meta["rounds_done"] = done
        save()
        if rank == 0:
            print(f"round {rnd + 1} at {time.time() - T0:.0f} s", flush=True)

    tp_check.timed_rounds(configs, args.rounds, args.steps, T0, args.budget_s * 0.75, round_done)
    if not args.no_profile:
        ok = [r for r in results if "rank_median_s" in r]
        for c, r in zip(configs, ok):
            late = [time.time() - T0 > args.budget_s]
            dist.broadcast_object_list(late, src=0)
            if late[0]:
                break
            dist.barrier()
            try:
                prof = c.profile()
            except Exception as e:  # noqa: BLE001 - the counts are extra
                prof = {"error": f"{type(e).__name__}: {e}"[:200]}
            got = [None] * world
            dist.all_gather_object(got, prof)
            r["profile_by_rank"] = got
            save()
    if rank == 0:
        keys = ("step", "issue", "sched", "opt", "fwd_module", "autograd_backward", "loss", "p2p",
                "scale_grads", "library")
        print("medians (ms) rank0 / rank1; step also its minimum")
        for r in results:
            if "rank_median_s" not in r:
                continue
            m0, m1 = r["rank_median_s"]
            line = f"{r['model']:22} {r['kind']:6} mb{r['mb']:<2} step {m0['step'] * 1e3:6.1f}/{m1['step'] * 1e3:6.1f}" \
                   f" (min {r['rank_min_s'][0]['step'] * 1e3:6.1f})"
            line += "".join(f" {k} {m0[k] * 1e3:5.1f}/{m1[k] * 1e3:5.1f}" for k in keys[1:]
                            if m0[k] or m1[k])
            print(line, flush=True)
            for i, p in enumerate(r.get("profile_by_rank") or []):
                print(f"    profile rank {i}: {p}", flush=True)
        print(f"done in {time.time() - T0:.0f} s", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
