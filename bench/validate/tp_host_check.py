#!/usr/bin/env python3
"""Where a DTensor TP=2 step of transformers' Llama-style decoders spends its time, per block and
outside the blocks, model by model on one host (h24t, session 24; issue 19 item 6).

  torchrun --standalone --nproc_per_node=2 bench/validate/tp_host_check.py --out DIR \
      [--models hf-danube-1.8b,hf-llama-1b,...] [--plain MODELS] [--depths 2,8]
      [--full hf-danube-1.8b:1+8,...] [--rounds 3] [--steps 4] [--budget-s 110]

The calibration TP rows are host-bound (a TP=2 step at micro-batch 1 is 3-5x the single-GPU
step and about as long at micro-batch 8), and the model under-predicts the deep ones
(Danube-1.8B, SmolLM2-1.7B, OpenCoder-1.5B, Qwen2-0.5B: 24 blocks, -16..-31 %) while the
shallow ones hold or are over (Llama-1B, TinyMistral: 12-16 blocks). This check trains each
model's own blocks (library_suite.py's configs, its TP plan, bf16 autocast, fused AdamW, one
optimizer per kind of parameter) at --depths blocks, split over the ranks (tp; --plain's models
also whole on each rank side by side), at micro-batch 1, all configurations resident and taking turns
(the host's speed switches within seconds), beside the framework probe's GPT (the block whose
TP cost the tuner carries to every model: profiler/framework_probe.py), so that per model

  per block = (step at the larger depth - step at the smaller) / (depth difference)
  outside the blocks = step at the smaller depth - smaller depth x per block

for TP and plain, and the same for each phase of the step (forward, backward, the optimizer's
step + zero_grad, each synchronised; the ranks' slowest), the Python garbage collector's time
within the step (gc.callbacks) and the step with the collector off. --full adds whole models at their own
depth ("NAME:MB"), as the calibration runs trained them. Last, one profiled step (torch.profiler,
CPU side, rank 0) of each configuration at the larger depth and of each --full one: the host's
op and collective counts (DTensor's dispatch shows as the outer aten op of each local one).

Writes DIR/tp_host_check.json (rank 0; after every round) and prints a summary. Needs
2 GPUs, transformers; ~2 min on 2x H200 with the defaults (--budget-s bounds the rounds and
the profiles, not the imports and builds, ~30 s).
"""
import argparse
import datetime
import gc
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import library_suite as suite  # noqa: E402 - the models, plan, optimizers and step as the suite trains them

# The framework probe's own GPT block (profiler/framework_probe.py: 4 bias-free Linears, qkv / fc1
# column-wise, proj / fc2 row-wise), the figure the tuner carries to every TP block, timed in the
# same turns: each library block's TP cost in the probe's units on this host.
PROBE = "probe-gpt"

LAYER_KEY = {"llama": "num_hidden_layers", "mistral": "num_hidden_layers", "qwen2": "num_hidden_layers",
             "olmo": "num_hidden_layers"}
T0 = time.time()


class GcClock:
    """Seconds and count of the Python garbage collector's runs, by generation (gc.callbacks):
    a host-bound step's DTensors, specs and autograd nodes are Python objects by the thousand."""

    def __init__(self):
        self.seconds, self.count, self._t = [0.0, 0.0, 0.0], [0, 0, 0], 0.0
        gc.callbacks.append(self)

    def __call__(self, phase, info):
        if phase == "start":
            self._t = time.perf_counter()
        else:
            g = min(2, info.get("generation", 2))
            self.seconds[g] += time.perf_counter() - self._t
            self.count[g] += 1

    def total(self):
        return sum(self.seconds), list(self.count)


GC = GcClock()


def at_depth(name, depth):
    """A suite model name at `depth` blocks (0: its own), registered with library_suite."""
    if name == PROBE:
        return name
    kind, kw = suite.TRANSFORMERS[name]
    if kind not in LAYER_KEY:
        raise ValueError(f"{name}: not a Llama-style decoder ({kind})")
    if depth <= 0:
        return name
    alias = f"{name}@{depth}"
    suite.TRANSFORMERS[alias] = (kind, {**kw, LAYER_KEY[kind]: depth})
    return alias


def built(alias, device):
    """The suite's model, initialised on the GPU (the suite builds it on the CPU and moves it:
    the same model, minutes faster for 1-2 B parameters); on the CPU where that fails."""
    torch.manual_seed(0)
    try:
        with torch.device(device):
            return suite.build(alias, device)
    except Exception as e:  # noqa: BLE001 - the suite's own way then
        print(f"{alias}: built on the CPU ({type(e).__name__}: {e})"[:300], file=sys.stderr, flush=True)
        torch.manual_seed(0)
        return suite.build(alias, device)


class Config:
    def __init__(self, name, depth, mode, mb, rank, world, device, same_model=None):
        self.name, self.depth, self.mode, self.mb = name, depth, mode, mb
        alias = at_depth(name, depth)
        if same_model is not None:  # another micro-batch of a configuration built already
            self.model, self.opt, self.layers = same_model.model, same_model.opt, same_model.layers
        elif name == PROBE:
            sys.path.insert(0, os.path.join(HERE, "..", "..", "profiler"))
            import framework_probe as fp
            shape = fp.GPT_SHAPE
            torch.manual_seed(0)
            gpt = fp.gpt_classes(torch)[1]
            self.model = gpt(depth, *(shape[k] for k in ("hidden", "heads", "ffn", "seq", "vocab"))).to(device)
            if mode == "tp":
                fp.split_blocks(torch, self.model.blocks, fp.TP_PLANS["gpt"], device)
            self.layers, self.vocab, self.seq = depth, shape["vocab"], shape["seq"]
            self.opt = suite.Optimizers(name, self.model.parameters())
        else:
            model = built(alias, device)
            self.layers = len(suite.blocks(model))
            self.model = suite.wrap(alias, model, "tp" if mode == "tp" else "single", rank, world)
            self.model.train()
            self.opt = suite.Optimizers(alias, self.model.parameters())
        self.alias, self.device = alias, device
        self.times = {"step": [], "issue": [], "fwd": [], "bwd": [], "opt": [], "gc": [], "step_nogc": []}
        self.gc_counts = [0, 0, 0]

    def label(self):
        return f"{self.name} L{self.layers} {self.mode} mb{self.mb}"

    def batch(self):
        if self.name == PROBE:
            ids = torch.randint(0, self.vocab, (self.mb, self.seq), device=self.device)
            return ids, ids
        return suite.batch_for(self.alias, self.mb, self.device)

    def loss(self, x, y):
        if self.name == PROBE:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = self.model(x)
                return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        return suite.loss_of(self.alias, self.model, x, y)

    def step(self):
        """One training step as library_suite.py times it; (wall, issue) seconds."""
        sync = torch.cuda.synchronize
        sync(self.device)
        t0 = time.perf_counter()
        x, y = self.batch()
        self.loss(x, y).backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        sync(self.device)
        return time.perf_counter() - t0, t1 - t0

    def phased(self):
        """The same step synchronised after each phase; (forward, backward, optimizer) seconds."""
        sync = torch.cuda.synchronize
        sync(self.device)
        t0 = time.perf_counter()
        x, y = self.batch()
        loss = self.loss(x, y)
        sync(self.device)
        t1 = time.perf_counter()
        loss.backward()
        sync(self.device)
        t2 = time.perf_counter()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        sync(self.device)
        return t1 - t0, t2 - t1, time.perf_counter() - t2

    def turn(self, steps, timed=True):
        for _ in range(steps):
            gc0, n0 = GC.total()
            wall, issue = self.step()
            gc1, n1 = GC.total()
            if timed:
                self.times["step"].append(wall)
                self.times["issue"].append(issue)
                self.times["gc"].append(gc1 - gc0)
                self.gc_counts = [a + b - c for a, b, c in zip(self.gc_counts, n1, n0)]
        # The same step with the collector off (both ranks), then the phased steps pay its backlog.
        gc.disable()
        try:
            for _ in range(2):
                wall, _ = self.step()
                if timed:
                    self.times["step_nogc"].append(wall)
        finally:
            gc.enable()
        for _ in range(max(2, steps // 2)):
            f, b, o = self.phased()
            if timed:
                self.times["fwd"].append(f)
                self.times["bwd"].append(b)
                self.times["opt"].append(o)

    def profile(self):
        """Host-side counts of one step (after a warm one): ops by name, collectives, launches."""
        from torch.profiler import ProfilerActivity, profile
        self.step()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            self.step()
        counts, cpu_us = {}, {}
        for e in prof.key_averages():
            counts[e.key] = e.count
            cpu_us[e.key] = getattr(e, "self_cpu_time_total", 0.0)
        top = sorted(counts, key=lambda k: -cpu_us[k])[:60]
        launches = sum(v for k, v in counts.items() if k in ("cudaLaunchKernel", "cuLaunchKernel",
                                                              "cudaLaunchKernelExC", "cuLaunchKernelEx"))
        aten = sum(v for k, v in counts.items() if k.startswith("aten::"))
        collectives = {k: v for k, v in counts.items() if "c10d" in k or "nccl" in k.lower()}
        return {"launches": launches, "aten_ops": aten, "collectives": collectives,
                "top_self_cpu": [{"name": k, "count": counts[k], "self_cpu_us": cpu_us[k]} for k in top]}


def gathered(values, world):
    """Per list, each rank's median and minimum: the ranks' list of (medians, minima)."""
    med = {k: statistics.median(v) if v else 0.0 for k, v in values.items()}
    mins = {k: min(v) if v else 0.0 for k, v in values.items()}
    if world == 1:
        return [(med, mins)]
    got = [None] * world
    dist.all_gather_object(got, (med, mins))
    return got


def slowest(values, world):
    """Each rank's median and minimum of each list, the largest over the ranks."""
    got = gathered(values, world)
    return ({k: max(g[0][k] for g in got) for k in got[0][0]},
            {k: max(g[1][k] for g in got) for k in got[0][1]})


def timed_rounds(configs, rounds, steps, started, late_after_s, round_done):
    """Every configuration takes `steps` steps in turn, all ranks together, for up to `rounds`
    rounds; no round starts `late_after_s` after `started` (rank 0's clock decides) once one is done.
    round_done(round_index, rounds_done) after each round. Returns the rounds done."""
    done = 0
    for rnd in range(rounds):
        late = [time.time() - started > late_after_s]
        dist.broadcast_object_list(late, src=0)
        if late[0] and done > 0:
            break
        for c in configs:
            dist.barrier()
            c.turn(steps)
        done += 1
        round_done(rnd, done)
    return done


def summary(results, depths):
    lo, hi = depths
    lines = []
    by = {(r["model"], r["layers"], r["mode"], r["mb"]): r for r in results if "median_s" in r}
    for (model, layers, mode, mb), r in sorted(by.items()):
        m = r["median_s"]
        lines.append(f"{model:22} L{layers:<3} {mode:5} mb{mb:<2} step {m['step'] * 1e3:7.1f} ms (issue "
                     f"{m['issue'] * 1e3:6.1f}; min {r['min_s']['step'] * 1e3:7.1f}) fwd {m['fwd'] * 1e3:6.1f} "
                     f"bwd {m['bwd'] * 1e3:6.1f} opt {m['opt'] * 1e3:5.1f} gc {m['gc'] * 1e3:5.1f} "
                     f"no-gc step {m['step_nogc'] * 1e3:7.1f}")
    lines.append("per block / outside the blocks (ms), from the medians:")
    for model in sorted({k[0] for k in by}):
        for mode in ("tp", "plain"):
            a, b = by.get((model, lo, mode, 1)), by.get((model, hi, mode, 1))
            if not (a and b):
                continue
            parts = []
            for k in ("step", "fwd", "bwd", "opt", "gc", "step_nogc"):
                per = (b["median_s"][k] - a["median_s"][k]) / (hi - lo)
                parts.append(f"{k} {per * 1e3:6.2f} / {(a['median_s'][k] - lo * per) * 1e3:6.1f}")
            lines.append(f"  {model:22} {mode:5} " + "  ".join(parts))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--models", default="hf-danube-1.8b,hf-llama-1b,hf-smollm2-1.7b,hf-qwen2-0.5b")
    ap.add_argument("--plain", default="hf-danube-1.8b,hf-llama-1b",
                    help="models also trained whole on each rank, side by side, at --depths")
    ap.add_argument("--depths", default="2,8")
    ap.add_argument("--full", default="hf-danube-1.8b:1+8,hf-llama-1b:1",
                    help="whole models under TP at their own depth, NAME:MB[+MB...] (one model per name)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4, help="unsynchronised steps per turn (half as many phased)")
    ap.add_argument("--budget-s", type=float, default=110)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--no-probe-gpt", action="store_true", help="leave out the framework probe's GPT block")
    args = ap.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world < 2:
        sys.exit("tp_host_check.py: run it with torchrun --nproc_per_node=2")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=device)
    os.makedirs(args.out, exist_ok=True)
    import transformers
    depths = [int(d) for d in args.depths.split(",")]
    plan = [(m, d, "tp", 1) for m in args.models.split(",") if m for d in depths]
    plan += [(m, d, "plain", 1) for m in args.plain.split(",") if m for d in depths]
    if not args.no_probe_gpt:
        plan += [(PROBE, d, mode, 1) for d in depths for mode in ("tp", "plain")]
    plan += [(f.split(":")[0], 0, "tp", int(mb)) for f in args.full.split(",") if f
             for mb in f.split(":")[1].split("+")]
    meta = {"schema": "xdeep.tp_host_check/1", "host": socket.gethostname(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "gpu": torch.cuda.get_device_name(device), "torch": torch.__version__,
            "transformers": transformers.__version__, "world": world, "command": " ".join(sys.argv),
            "rounds": args.rounds, "steps": args.steps, "python": sys.version.split()[0],
            "gc_threshold": list(gc.get_threshold())}
    configs, results = [], []

    def agreed(ok):
        flag = torch.tensor([1.0 if ok else 0.0], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return flag.item() > 0

    def save():
        if rank == 0:
            tmp = os.path.join(args.out, "tp_host_check.json.part")
            with open(tmp, "w") as f:
                json.dump({"meta": meta, "results": results}, f, indent=1)
            os.replace(tmp, os.path.join(args.out, "tp_host_check.json"))

    for name, depth, mode, mb in plan:
        err = None
        same = next((k for k in configs if (k.name, k.depth, k.mode) == (name, depth, mode)), None)
        try:
            c = Config(name, depth, mode, mb, rank, world, device, same)
            c.turn(3, timed=False)  # warm-up
        except Exception as e:  # noqa: BLE001 - one model's failure leaves the others measured
            err = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            c = None
        if agreed(err is None):
            configs.append(c)
        else:
            results.append({"model": name, "depth": depth, "mode": mode, "mb": mb, "error": err or "other rank"})
            if rank == 0:
                print(f"{name} depth {depth} {mode} mb{mb}: {err or 'failed on another rank'}", flush=True)
            c = None
            gc.collect()
            torch.cuda.empty_cache()
    if rank == 0:
        print(f"{len(configs)} configurations built in {time.time() - T0:.0f} s", flush=True)
    def round_done(rnd, done):
        results[:] = [r for r in results if "error" in r]
        for c in configs:
            med, mins = slowest(c.times, world)
            results.append({"model": c.name, "layers": c.layers, "depth": c.depth, "mode": c.mode, "mb": c.mb,
                            "median_s": med, "min_s": mins, "steps": len(c.times["step"]),
                            "gc_collections_rank": c.gc_counts})
        meta["rounds_done"] = done
        save()
        if rank == 0:
            print(f"round {rnd + 1} at {time.time() - T0:.0f} s", flush=True)

    timed_rounds(configs, args.rounds, args.steps, T0, args.budget_s * (0.8 if not args.no_profile else 0.95),
                 round_done)
    if not args.no_profile:
        for c, r in zip(configs, [r for r in results if "median_s" in r]):
            if c.depth not in (0, max(depths)):
                continue
            late = [time.time() - T0 > args.budget_s]
            dist.broadcast_object_list(late, src=0)
            if late[0]:
                break
            dist.barrier()
            try:
                prof = c.profile()
            except Exception as e:  # noqa: BLE001 - the counts are extra
                prof = {"error": f"{type(e).__name__}: {e}"[:200]}
            if rank == 0:
                r["profile_rank0"] = prof
            save()
    if rank == 0:
        print(summary(results, (min(depths), max(depths))), flush=True)
        for r in results:
            p = r.get("profile_rank0")
            if p and "launches" in p:
                print(f"profile {r['model']} L{r['layers']} {r['mode']} mb{r['mb']}: {p['launches']} launches, "
                      f"{p['aten_ops']} aten ops, collectives {p['collectives']}", flush=True)
        print(f"done in {time.time() - T0:.0f} s", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
