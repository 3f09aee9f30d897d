#!/usr/bin/env python3
"""The framework probe's host reading against the host-bound training steps that follow it, over
minutes, on one GPU (h23h, session 23; issue 19, item 6).

  OUT=DIR [MODELS=hf-gpt2,hf-amd-llama-135m] [ROUNDS=12] [BESIDE_ROUNDS=5] [AFTER_ROUNDS=2]
    [BUILD=hf-qwen1.5-1.8b] [TRAIN_SECONDS=2.5] [DEADLINE_S=190] python3 bench/validate/host_drift_check.py

Held-out run 15 (2x H200) ran its host-bound single-GPU transformer steps 1.27-1.44x the host
time the model counts, a minute after its framework probe had read the host at 25.8 us a kernel,
the lowest of any H200 run (bench/validate/README.md, "h22x, session 22"); over runs 10-15 the
probe's one 100-pass window and the training rows' host cost do not follow each other. This
check asks, in one process on one GPU, round after round:

* the probe's reading as profiler/framework_probe.py takes it: its tiny GPT's forward + backward
  (framework_probe's own classes, pass and timing loop, the optimizer step untimed), 100 passes
  after 10, taking turns with the probe's Llama-style decoder of the same shape (a longer pass,
  more Python a kernel); every pass's time is kept, not only the median, and the host time of
  the GPT's AdamW step after each pass;
* then each of MODELS' single-GPU steps at micro-batch 1 as library_suite.py builds and times
  them (its build, optimizer, batch and loss; each step synchronised, TRAIN_SECONDS of steps
  after 3 warm-up steps), every step's time kept.

The rounds show how far one probe window and the next training window move together (the
adjacent pairs), how far the host's speed drifts over minutes in each, and which reading of
the probe's passes (median, a percentile, several windows) keeps a stable ratio to training.
Each window also records the CPUs' mean MHz (/proc/cpuinfo) and the garbage collector's
collections and time (gc.callbacks): whether the GC or the clock moves with the host's speed.
After ROUNDS rounds alone, BESIDE_ROUNDS rounds run while another process builds BUILD over
and over (library_suite.build: its parameters initialised on the CPU, then moved to the GPU, as
run_library.sh's other lane did beside run 15's AMD-Llama-135m rows), then AFTER_ROUNDS alone
again: whether a CPU-heavy neighbour slows the timed steps (the question of
lanes_build_check.sh, on one GPU).

Writes $OUT/host_drift.json ({"windows": [...]}: round, phase alone / beside / after, kind
probe / train, model, UTC start, every pass's or step's seconds, cpu_mhz, gc_collections, gc_s)
and $OUT/builder.log; prints one line a window. Analysis: bench/validate/host_drift_summary.py.
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "profiler"))


class GcClock:
    """Collections and seconds spent in the garbage collector since the last read."""

    def __init__(self):
        self.n, self.s, self._t = 0, 0.0, None
        gc.callbacks.append(self._cb)

    def _cb(self, phase, info):
        if phase == "start":
            self._t = time.perf_counter()
        elif self._t is not None:
            self.n += 1
            self.s += time.perf_counter() - self._t
            self._t = None

    def read(self):
        out = (self.n, self.s)
        self.n, self.s = 0, 0.0
        return out


def cpu_mhz():
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
        return statistics.mean(mhz) if mhz else None
    except OSError:
        return None


def main():
    import torch
    import framework_probe as fp
    import library_suite as suite

    out = os.environ["OUT"]
    models = os.environ.get("MODELS", "hf-gpt2,hf-amd-llama-135m").split(",")
    rounds = int(os.environ.get("ROUNDS", "12"))
    beside_rounds = int(os.environ.get("BESIDE_ROUNDS", "5"))
    after_rounds = int(os.environ.get("AFTER_ROUNDS", "2"))
    build_name = os.environ.get("BUILD", "hf-qwen1.5-1.8b")
    train_s = float(os.environ.get("TRAIN_SECONDS", "2.5"))
    deadline = time.time() + float(os.environ.get("DEADLINE_S", "190"))
    os.makedirs(out, exist_ok=True)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "cpus": len(os.sched_getaffinity(0)), "gpt_shape": fp.GPT_SHAPE, "windows": []}
    try:
        import transformers
        report["transformers"] = transformers.__version__
    except ImportError:
        pass

    # The probe's passes, as framework_probe.measure builds them.
    model, llama_model, inputs, target = fp.probe_decoders(torch, device)
    passes = {"gpt": fp.training_pass(torch, device, model, inputs, target),
              "llama": fp.training_pass(torch, device, llama_model, inputs, target)}
    probe_args = argparse.Namespace(warmup=10, steps=100)

    # The training steps, as library_suite.measure times them.
    trains = {}
    for name in models:
        m = suite.build(name, device)
        opt = suite.optimizer_for(name, m.parameters())
        x, y = suite.batch_for(name, 1, device)

        def step(m=m, opt=opt, x=x, y=y, name=name):
            loss = suite.loss_of(name, m, x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        trains[name] = step
    clock = GcClock()

    def window(rnd, phase, kind, name, fn):
        mhz0 = cpu_mhz()
        clock.read()
        start = time.strftime("%H:%M:%S", time.gmtime())
        times = fn()
        n, gs = clock.read()
        mhz1 = cpu_mhz()
        mhz = statistics.mean([v for v in (mhz0, mhz1) if v]) if (mhz0 or mhz1) else None
        w = {"round": rnd, "phase": phase, "kind": kind, "model": name, "start": start,
             "times_s": times, "cpu_mhz": mhz, "gc_collections": n, "gc_s": gs}
        report["windows"].append(w)
        print(f"{start} round {rnd:2} {phase:6} {kind:5} {name:20} median {statistics.median(times) * 1e3:7.2f} ms"
              f" min {min(times) * 1e3:7.2f} p95 {sorted(times)[int(0.95 * (len(times) - 1))] * 1e3:7.2f}"
              f" n {len(times):3} gc {n} / {gs * 1e3:.1f} ms cpu {mhz or 0:.0f} MHz", flush=True)

    def probe():
        return fp.alternating_times(torch, probe_args, device, passes)

    def train(step):
        for _ in range(3):
            step()
        torch.cuda.synchronize(device)
        times = []
        while sum(times) < train_s and len(times) < 400:
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize(device)
            times.append(time.perf_counter() - t0)
        return times

    def one_round(rnd, phase):
        got, step_host = probe()
        # Windows of one timing loop (the passes took turns), and the host time of the GPT's
        # optimizer step after each pass (the probe's step_host_s).
        for kind in ("gpt", "llama"):
            window(rnd, phase, "probe", kind, lambda kind=kind: got[kind])
        window(rnd, phase, "step", "gpt", lambda: step_host["gpt"])
        for name, step in trains.items():
            window(rnd, phase, "train", name, lambda step=step: train(step))

    def save():
        with open(os.path.join(out, "host_drift.json.tmp"), "w") as f:
            json.dump(report, f, indent=1)
        os.replace(os.path.join(out, "host_drift.json.tmp"), os.path.join(out, "host_drift.json"))

    rnd = 0

    def run_rounds(count, phase):
        nonlocal rnd
        for _ in range(count):
            if time.time() > deadline:
                break
            rnd += 1
            one_round(rnd, phase)
            save()

    run_rounds(rounds, "alone")
    builder = None
    if beside_rounds > 0 and time.time() < deadline - 30:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0])
        log = open(os.path.join(out, "builder.log"), "w")
        builder = subprocess.Popen([sys.executable, os.path.join(HERE, "build_loop.py"), build_name],
                                   stdout=log, stderr=subprocess.STDOUT, env=env)
        report["builder_start"] = time.strftime("%H:%M:%S", time.gmtime())
        time.sleep(8)  # its imports: the first build is under way before the next window
        try:
            run_rounds(beside_rounds, "beside")
        finally:
            builder.kill()
            builder.wait()
            report["builder_end"] = time.strftime("%H:%M:%S", time.gmtime())
    run_rounds(after_rounds, "after")
    save()
    return 0 if report["windows"] else 1


if __name__ == "__main__":
    sys.exit(main())
