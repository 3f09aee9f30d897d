#!/usr/bin/env python3
"""Where a host-bound step's host time goes -- forward, backward, optimizer -- against what each
phase launches and dispatches: the framework probe's tiny GPT and Llama-style passes beside
transformers' decoders at micro-batch 1, in the same rounds on one GPU (h25h, session 25; issue 19
item 6).

  OUT=DIR [MODELS=hf-cerebras-gpt-111m,hf-pythia-160m,hf-llama2c-42m,hf-amd-llama-135m]
    [PROBE_HF=gpt2,llama,gpt_neox] [ROUNDS=4] [TRAIN_SECONDS=1.2] [DEADLINE_S=150]
    python3 bench/validate/host_phase_check.py

PROBE_HF (h26h, session 26): the framework probe's transformers decoders of its GPT's shape
(framework_probe.library_decoder, its hf_* fields) in the same rounds, "probe-hf-KIND"; empty: none.

Held-out run 17 and its recheck (bench/validate/data/checks/2026-11-28_h200x2_run17_hostbound_recheck)
ran transformers' GPT-2-class, GPTNeoX and Llama decoders at micro-batch 1 15-25 % above the
step-time model's ratio to the probe's GPT pass, every class alike, while their ratios to one
another follow the model's counts. The model prices a pass's host time as the kernels it counts
times the probe's time a kernel, forward's and twice as many in backward. This check asks in
which phase the decoders' extra host time lies, and whether kernels, dispatched framework ops,
autograd nodes or Python module calls follow it: backward runs in the autograd engine's C++
without Python, forward runs each module's Python.

Per network, each iteration: sync, forward to the loss (bf16 autocast; the probe's networks with
its own cross-entropy, the decoders with `labels=`, as library_suite.py trains them), backward,
sync, the optimizer step (the probe's networks: foreach AdamW as the probe has it; the decoders:
library_suite.py's fused AdamW), sync. Kept per iteration: the forward's and backward's host time
(perf_counter around each call; the GPU is idle at the forward's start and far behind the host in
these steps) and the whole pass, and the step's host time. The networks take turns within a round
(TRAIN_SECONDS of iterations each after 3 warm-up ones), ROUNDS rounds.

Then one profiled iteration per network (torch.profiler, CPU and CUDA): per phase (by time range
of record_function labels), the kernel launches (the CUDA runtime's launch calls), memcpy / memset
calls, every aten op dispatched, the aten ops called from Python (forward: no aten op above them)
or from an autograd node (backward), the autograd nodes run; and, untimed, the nn.Module calls of
one forward (a global forward pre-hook).

Writes $OUT/host_phase.json and prints one line a window and a summary table.
"""
import json
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "profiler"))

LAUNCH_NAMES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                "cudaLaunchCooperativeKernel", "cudaGraphLaunch")
COPY_NAMES = ("cudaMemcpyAsync", "cudaMemsetAsync", "cudaMemcpy", "cudaMemset", "cuMemsetD8Async",
              "cuMemsetD32Async", "cuMemcpyAsync")


def networks(torch, fp, suite, names, device):
    """{name: (forward() -> loss, step(), model)} for the probe's two networks and each decoder."""
    nets = {}
    model, llama_model, inputs, target = fp.probe_decoders(torch, device)
    for key, m in (("probe-gpt", model.to(device)), ("probe-llama", llama_model.to(device))):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)

        def forward(m=m):
            with torch.autocast(device.type, dtype=torch.bfloat16):
                out = m(inputs)
                return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))

        def step(opt=opt):
            opt.step()
            opt.zero_grad(set_to_none=True)

        nets[key] = (forward, step, m)
    # The framework probe's transformers decoders of its GPT's shape (framework_probe.library_turns,
    # its hf_* fields), trained as there: does a tiny one read its class's host cost at full size?
    for kind in (k for k in os.environ.get("PROBE_HF", ",".join(fp.LIBRARY_DECODERS)).split(",") if k):
        try:
            m = fp.library_decoder(kind, fp.GPT_SHAPE).to(device)
            m.train()
            opt = torch.optim.AdamW(m.parameters(), lr=5e-5, weight_decay=0.0, fused=True)
        except Exception as e:  # noqa: BLE001 -- one model that does not build leaves the others
            print(f"probe-hf-{kind}: not built ({type(e).__name__}: {e})", flush=True)
            continue

        def forward(m=m):
            with torch.autocast(device.type, dtype=torch.bfloat16):
                return m(input_ids=inputs, labels=inputs).loss

        def step(opt=opt):
            opt.step()
            opt.zero_grad(set_to_none=True)

        nets[f"probe-hf-{kind}"] = (forward, step, m)
    for name in names:
        try:
            m = suite.build(name, device)
            opt = suite.optimizer_for(name, m.parameters())
            x, y = suite.batch_for(name, 1, device)
        except Exception as e:  # noqa: BLE001 -- one model that does not build leaves the others
            print(f"{name}: not built ({type(e).__name__}: {e})", flush=True)
            continue

        def forward(m=m, x=x, y=y, name=name):
            return suite.loss_of(name, m, x, y)

        def step(opt=opt):
            opt.step()
            opt.zero_grad(set_to_none=True)

        nets[name] = (forward, step, m)
    return nets


def timed(torch, device, forward, step, seconds):
    sync = lambda: torch.cuda.synchronize(device)  # noqa: E731
    for _ in range(3):
        forward().backward()
        step()
    sync()
    rows = []
    while sum(r[2] for r in rows) < seconds and len(rows) < 400:
        sync()
        t0 = time.perf_counter()
        loss = forward()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        sync()
        t3 = time.perf_counter()
        step()
        t4 = time.perf_counter()
        sync()
        rows.append((t1 - t0, t2 - t1, t3 - t0, t4 - t3))
    return rows


def profiled_counts(torch, device, forward, step):
    """Counts per phase from one torch.profiler iteration (after one untimed)."""
    from torch.profiler import ProfilerActivity, profile, record_function
    forward().backward()
    step()
    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("xdeep::forward"):
            loss = forward()
        with record_function("xdeep::backward"):
            loss.backward()
        torch.cuda.synchronize(device)
        with record_function("xdeep::step"):
            step()
        torch.cuda.synchronize(device)
    return count_events(list(prof.events()), torch.autograd.DeviceType.CUDA)


def count_events(events, cuda_type):
    """Per phase (the CPU-side ranges of the xdeep:: labels): launches, copies, aten ops (all,
    and those with no aten op above them), autograd nodes, kernels, CUDA runtime calls by name.
    Pure, so that it can be checked on a machine without torch."""
    cpu = lambda e: getattr(e, "device_type", None) != cuda_type  # noqa: E731
    ranges = {}
    for e in events:
        # The CPU-side range (record_function also marks the GPU's time line).
        if e.name.startswith("xdeep::") and cpu(e):
            ranges[e.name[7:]] = (e.time_range.start, e.time_range.end)
    phase_of = lambda t: next((p for p, (a, b) in ranges.items() if a <= t <= b), None)  # noqa: E731
    counts = {p: {"launches": 0, "copies": 0, "aten_all": 0, "aten_top": 0, "nodes": 0, "kernels": 0,
                  "runtime": {}} for p in ranges}

    def has_aten_above(e):
        p = e.cpu_parent
        while p is not None:
            if p.name.startswith("aten::"):
                return True
            p = p.cpu_parent
        return False

    for e in events:
        if not cpu(e) or e.name.startswith("xdeep::"):
            continue
        p = phase_of(e.time_range.start)
        if p is None:
            continue
        c = counts[p]
        if e.name.startswith("cu"):  # every CUDA runtime / driver call by name, launches or not
            c["runtime"][e.name] = c["runtime"].get(e.name, 0) + 1
        if e.name in LAUNCH_NAMES:
            c["launches"] += 1
        elif e.name in COPY_NAMES:
            c["copies"] += 1
        elif e.name.startswith("autograd::engine::evaluate_function"):
            c["nodes"] += 1
        elif e.name.startswith("aten::"):
            c["aten_all"] += 1
            if not has_aten_above(e):
                c["aten_top"] += 1
        c["kernels"] += len(getattr(e, "kernels", []) or [])
    return counts


def main():
    import torch
    import framework_probe as fp
    import library_suite as suite

    out = os.environ["OUT"]
    names = os.environ.get("MODELS", "hf-cerebras-gpt-111m,hf-pythia-160m,hf-llama2c-42m,"
                                     "hf-amd-llama-135m").split(",")
    rounds = int(os.environ.get("ROUNDS", "4"))
    train_s = float(os.environ.get("TRAIN_SECONDS", "1.2"))
    deadline = time.time() + float(os.environ.get("DEADLINE_S", "150"))
    os.makedirs(out, exist_ok=True)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "cpus": len(os.sched_getaffinity(0)), "gpt_shape": fp.GPT_SHAPE, "windows": [], "counts": {}}
    try:
        import transformers
        report["transformers"] = transformers.__version__
    except ImportError:
        pass
    try:  # which CPU: the probe's lean pass and transformers' Python may not scale alike across hosts
        with open("/proc/cpuinfo") as f:
            report["cpu_model"] = next((line.split(":", 1)[1].strip() for line in f
                                        if line.startswith("model name")), None)
    except OSError:
        pass

    def save():
        with open(os.path.join(out, "host_phase.json.tmp"), "w") as f:
            json.dump(report, f, indent=1)
        os.replace(os.path.join(out, "host_phase.json.tmp"), os.path.join(out, "host_phase.json"))

    nets = networks(torch, fp, suite, names, device)
    for rnd in range(1, rounds + 1):
        if time.time() > deadline - 25:
            break
        for name, (forward, step, _) in nets.items():
            start = time.strftime("%H:%M:%S", time.gmtime())
            rows = timed(torch, device, forward, step, train_s)
            med = [statistics.median(r[i] for r in rows) for i in range(4)]
            report["windows"].append({"round": rnd, "model": name, "start": start,
                                      "fwd_host_s": [r[0] for r in rows], "bwd_host_s": [r[1] for r in rows],
                                      "pass_s": [r[2] for r in rows], "step_host_s": [r[3] for r in rows]})
            print(f"{start} round {rnd} {name:22} fwd {med[0] * 1e3:6.2f} bwd {med[1] * 1e3:6.2f} "
                  f"pass {med[2] * 1e3:6.2f} step {med[3] * 1e3:5.2f} ms (n {len(rows)})", flush=True)
        save()
    for name, (forward, step, _) in nets.items():
        if time.time() > deadline:
            break
        try:
            c = profiled_counts(torch, device, forward, step)
            with torch.no_grad():
                c["module_calls_fwd"] = fp.forward_module_calls(torch, forward)
            report["counts"][name] = c
            print(f"{name:22} " + "  ".join(f"{p}: " + " ".join(f"{k} {v}" for k, v in cc.items()
                                                                if k != "runtime")
                                           for p, cc in c.items() if isinstance(cc, dict))
                  + f"  modules {c['module_calls_fwd']}", flush=True)
        except Exception:  # noqa: BLE001 -- the timings are kept whatever the profiler does
            traceback.print_exc()
        save()

    # Summary: medians over rounds of each network's phase times, and per count.
    print("\nnetwork                fwd ms  bwd ms  pass ms | fwd us/launch us/top-op | bwd us/launch us/node")
    for name in nets:
        ws = [w for w in report["windows"] if w["model"] == name]
        if not ws:
            continue
        f = statistics.median(statistics.median(w["fwd_host_s"]) for w in ws)
        b = statistics.median(statistics.median(w["bwd_host_s"]) for w in ws)
        p = statistics.median(statistics.median(w["pass_s"]) for w in ws)
        c = report["counts"].get(name, {})
        cf, cb = c.get("forward", {}), c.get("backward", {})
        per = lambda s, n: s * 1e6 / n if n else float("nan")  # noqa: E731
        print(f"{name:22} {f * 1e3:6.2f}  {b * 1e3:6.2f}  {p * 1e3:7.2f} | "
              f"{per(f, cf.get('launches', 0)):6.1f} {per(f, cf.get('aten_top', 0)):6.1f} | "
              f"{per(b, cb.get('launches', 0)):6.1f} {per(b, cb.get('nodes', 0)):6.1f}")
    save()


if __name__ == "__main__":
    main()
