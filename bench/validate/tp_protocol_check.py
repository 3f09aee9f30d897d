#!/usr/bin/env python3
"""Is run 18's TP=2 ordering an artifact of how the TP lane timed it? (h26t, session 26; issue 19 item 6)

  torchrun --standalone --nproc_per_node=2 bench/validate/tp_protocol_check.py --out DIR \
      [--models hf-llama2c-15m,hf-salamandra-2b] [--budget-s 72]

Run 18 (2x H200, calibration since session 26) timed its TP lane as library_suite.py did for runs
1-18: per model, micro-batch 1 then 8, each 3 warm-up steps and then at least 3 timed steps filling
1 s. Salamandra-2B read 439.3 ms at micro-batch 1 (3 steps: 439, 451, 358; the first configuration
after its build) and 321.5 at 8 (4 steps), which a step that is the host's at both cannot do;
llama2.c-15M read 106.8 / 106.6 where the model says 82.9. Per model, on one build, as the suite
builds, wraps and steps it (library_suite.build, wrap, Optimizers, loss_of):

  A   the runs 1-18 protocol right after the build (library_suite.measure, micro-batch 1 then 8);
  B   the rounds protocol of session 26 (library_suite.measure_rounds, 3 rounds);
  A2  the runs 1-18 protocol again on the same model, seconds later;

each rank's step times and warm-up steps kept, and between the phases a turn of the framework
probe's GPT (4 blocks, TP=2 and plain; tp_host_check.Config), the host's level at that moment in
the units the tuner prices a split Linear. Then llama2.c-15M's blocks at 2 and 6 (TP and plain, each
rank its own; tp_host_check's rounds, phases and collector times) beside the probe's GPT at 2 and 6:
its per-block TP cost against the probe's per split Linear on the same host; one profiled step of
each at 6 (aten ops, launches, collectives). Last, library_suite.run_model's PP path with the rounds
protocol on llama2.c-15M (that it runs; its figures). The host's load average and mean CPU clock are
read at every phase. Writes DIR/tp_protocol_check.json (rank 0, after every phase) and prints a
summary. Needs 2 GPUs, transformers; ~70 s on 2x H200.
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
import types

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import library_suite as suite  # noqa: E402 - the models, plan, optimizers, step and both protocols
import tp_host_check as tp_check  # noqa: E402 - the probe's GPT, per-block configs, rounds, GC clock

T0 = time.time()


def host_state():
    """Load average and the mean clock of the host's CPUs now (the 'cold host' question)."""
    out = {"t_s": round(time.time() - T0, 2)}
    try:
        out["loadavg"] = [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        pass
    try:
        mhz = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
        if mhz:
            out["cpu_mhz_mean"] = round(statistics.mean(mhz), 1)
            out["cpus"] = len(mhz)
    except (OSError, ValueError):
        pass
    out["affinity"] = len(os.sched_getaffinity(0))
    return out


def per_rank(obj, world):
    got = [None] * world
    dist.all_gather_object(got, obj)
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="hf-llama2c-15m,hf-salamandra-2b")
    ap.add_argument("--micro-batches", default="1,8")
    ap.add_argument("--budget-s", type=float, default=72)
    args = ap.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world < 2:
        sys.exit("tp_protocol_check.py: run it with torchrun --nproc_per_node=2")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", device_id=device)
    os.makedirs(args.out, exist_ok=True)
    import transformers  # as library_suite.main() imports them: the same process heap
    import torchvision  # noqa: F401
    mbs = [int(x) for x in args.micro_batches.split(",")]
    meta = {"schema": "xdeep.tp_protocol_check/1", "host": socket.gethostname(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "gpu": torch.cuda.get_device_name(device), "torch": torch.__version__,
            "transformers": transformers.__version__, "world": world, "command": " ".join(sys.argv),
            "python": sys.version.split()[0], "protocol": "run 18's: warmup 3, steps 3, min-seconds 1"}
    doc = {"meta": meta, "phases": []}

    def save():
        if rank == 0:
            tmp = os.path.join(args.out, "tp_protocol_check.json.part")
            with open(tmp, "w") as f:
                json.dump(doc, f, indent=1)
            os.replace(tmp, os.path.join(args.out, "tp_protocol_check.json"))

    def late(frac=1.0):
        flag = [time.time() - T0 > args.budget_s * frac]
        dist.broadcast_object_list(flag, src=0)
        return flag[0]

    def say(text):
        if rank == 0:
            print(f"[{time.time() - T0:5.1f} s] {text}", flush=True)

    # The framework probe's GPT at its 4 blocks, TP=2 and plain: the host's level between phases.
    probes = []
    for mode in ("tp", "plain"):
        c = tp_check.Config(tp_check.PROBE, 4, mode, 1, rank, world, device)
        c.turn(3, timed=False)
        probes.append(c)

    def probe_turn(label):
        got = {}
        for c in probes:
            c.times = {k: [] for k in c.times}
            dist.barrier()
            c.turn(4)
            med, mins = tp_check.slowest(c.times, world)
            got[c.mode] = {"step_ms": med["step"] * 1e3, "min_ms": mins["step"] * 1e3,
                           "issue_ms": med["issue"] * 1e3}
        per_linear = (got["tp"]["step_ms"] - got["plain"]["step_ms"]) / 16  # 4 blocks x 4 split Linears
        doc["phases"].append({"phase": "probe", "label": label, "host": per_rank(host_state(), world),
                              "probe_gpt": got, "tp_add_per_split_linear_ms": per_linear})
        say(f"probe GPT L4 ({label}): tp {got['tp']['step_ms']:.1f} ms, plain {got['plain']['step_ms']:.1f} ms, "
            f"{per_linear:.2f} ms a split Linear")
        save()

    probe_turn("start")
    old = dict(warmup=3, steps=3, min_seconds=1.0)
    for name in args.models.split(","):
        if late(0.55):
            say(f"{name}: skipped (budget)")
            break
        t_build = time.time()
        torch.manual_seed(0)
        gc0 = tp_check.GC.total()[0]
        model = suite.wrap(name, suite.build(name, device), "tp", rank, world)
        model.train()
        opt = suite.Optimizers(name, model.parameters())

        def step(mb):
            x, y = suite.batch_for(name, mb, device)
            suite.loss_of(name, model, x, y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        torch.cuda.synchronize(device)
        dist.barrier()
        say(f"{name}: built and split in {time.time() - t_build:.1f} s")
        for phase in ("A", "B", "A2"):
            if phase != "A" and late(0.7 if phase == "B" else 0.8):
                say(f"{name} {phase}: skipped (budget)")
                continue
            t0 = time.time()
            gc_before = tp_check.GC.total()[0]
            recs = {}
            try:
                if phase == "B":
                    got = suite.measure_rounds(name, mbs, step, device, old["warmup"], old["steps"],
                                               old["min_seconds"], world, suite.DEFAULT_ROUNDS, lambda: False)
                    for mb, r in got.items():
                        recs[mb] = r
                else:
                    for mb in mbs:
                        s0 = time.time() - T0
                        r = suite.measure(name, model, opt, step, mb, device, old["warmup"], old["steps"],
                                          old["min_seconds"], world)
                        r["started_s"] = round(s0, 2)
                        recs[mb] = r
            except torch.OutOfMemoryError as e:
                recs["error"] = str(e).splitlines()[0][:200]
            ranks = per_rank({str(k): v for k, v in recs.items()}, world)
            entry = {"phase": phase, "model": name, "started_s": round(t0 - T0, 2),
                     "seconds": round(time.time() - t0, 2), "gc_s": tp_check.GC.total()[0] - gc_before,
                     "host": per_rank(host_state(), world), "ranks": ranks}
            doc["phases"].append(entry)
            save()
            for mb in mbs:
                rs = [g.get(str(mb), {}) for g in ranks]
                if all("step_times_s" in r for r in rs):
                    meds = [statistics.median(r["step_times_s"]) * 1e3 for r in rs]
                    say(f"{name} {phase:2} mb{mb}: median {meds[0]:.1f} / {meds[1]:.1f} ms (ranks), "
                        f"{len(rs[0]['step_times_s'])} steps, min {min(rs[0]['step_times_s']) * 1e3:.1f}; "
                        f"warm-up {[round(x * 1e3) for x in rs[0].get('warmup_times_s', [])]}")
            probe_turn(f"after {name} {phase}")
        doc["phases"].append({"phase": "model_gc", "model": name, "gc_s": tp_check.GC.total()[0] - gc0})
        del model, opt, step
        gc.collect()
        torch.cuda.empty_cache()

    # llama2.c-15M's blocks at 2 and 6 against the probe's GPT at 2 and 6, on the same host in turns.
    if not late(0.8):
        small = "hf-llama2c-15m"
        configs = []
        for name, mode in ((small, "tp"), (small, "plain"), (tp_check.PROBE, "tp"), (tp_check.PROBE, "plain")):
            for depth in (2, 6):
                c = tp_check.Config(name, depth, mode, 1, rank, world, device)
                c.turn(3, timed=False)
                configs.append(c)
        results = []

        def round_done(rnd, done):
            results[:] = []
            for c in configs:
                med, mins = tp_check.slowest(c.times, world)
                results.append({"model": c.name, "layers": c.layers, "depth": c.depth, "mode": c.mode, "mb": c.mb,
                                "median_s": med, "min_s": mins, "steps": len(c.times["step"])})

        tp_check.timed_rounds(configs, 3, 4, T0, args.budget_s * 0.88, round_done)
        for c, r in zip(configs, results):
            if c.depth == 6 and not late(0.92):
                dist.barrier()
                try:
                    prof = c.profile()
                except Exception as e:  # noqa: BLE001 - the counts are extra
                    prof = {"error": f"{type(e).__name__}: {e}"[:200]}
                r["profile_rank0"] = prof if rank == 0 else None
        doc["phases"].append({"phase": "blocks", "host": per_rank(host_state(), world), "results": results})
        save()
        if rank == 0:
            print(tp_check.summary(results, (2, 6)), flush=True)
            for r in results:
                p = r.get("profile_rank0")
                if p and "launches" in p:
                    print(f"profile {r['model']} L{r['layers']} {r['mode']}: {p['launches']} launches, "
                          f"{p['aten_ops']} aten ops, collectives {p['collectives']}", flush=True)
        del configs
        torch.cuda.empty_cache()

    # The rounds protocol through library_suite.run_model's PP path (that it runs).
    if not late(0.85):
        pp_args = types.SimpleNamespace(mode="pp", micro_batches=mbs, model_seconds=12, deadline_s=0, reserve_s=0,
                                        warmup=3, steps=3, min_seconds=1.0, rounds=suite.DEFAULT_ROUNDS)
        recs = []
        t0 = time.time()
        try:
            suite.run_model("hf-llama2c-15m", pp_args, rank, world, device, recs, lambda: None)
        except Exception as e:  # noqa: BLE001 - report it
            recs.append({"error": f"{type(e).__name__}: {e}"[:200]})
        doc["phases"].append({"phase": "pp_rounds", "model": "hf-llama2c-15m", "seconds": round(time.time() - t0, 2),
                              "records": recs})
        save()
    probe_turn("end")
    say("done")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
