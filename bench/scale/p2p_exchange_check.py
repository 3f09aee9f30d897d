#!/usr/bin/env python3
"""Is the pipeline exchange's cost NCCL's point-to-point bandwidth? (issue 25 item 2, session 21 h25f)

Three readings side by side, no GPU needed:
 1. NCCL send/recv between the two GPUs of a 2-GPU host, as xdeep's collectives probe measured it
    (profiler/nccl/collective_probes.cc: ncclSend to rank + 1 and ncclRecv from rank - 1 in one
    group, nccl-tests' sendrecv pattern) in every calibration run under
    bench/validate/data/calibration/ (coll_2gpu.json, or profile.json's rows): the time of a
    25.2 MB and a 16.8 MB exchange (the activations of interleave_vs_tp.py at hidden 6144 / 4096)
    on the alpha-beta line through the 16 MB and 64 MB points, against all-reduce at 2 ranks and
    against what the built-in h100-sxm / h200-sxm profiles charge (tuner/hardware_profile.cc:
    send_recv at the all-reduce bus bandwidth / 2, 360 / 2 GB/s, latency 15 us x 0.6 x 1.15).
 2. The per-exchange excess h25e read from interleave_vs_tp.py's 2x H200 runs (check data), per
    step of v, to see whether it is one cost per exchange.
 3. The schedule: torch.distributed.pipelining's Interleaved1F1B order (as read in PyTorch's
    torch/distributed/pipelining/schedules.py: rounds of min(m, p) micro-batches, warm-up
    (v - 1) x round + 2 (p - 1 - rank), then one forward and one backward), and its runtime,
    which after each action batches its sends with the receives of what the neighbours compute in
    the same time step and waits on them (lock step), simulated with free exchanges against the
    dependency-driven ideal, as ratios to 1F1B (v 1).

Usage: python3 bench/scale/p2p_exchange_check.py [--check] [--tuner BUILD/bench/scale/tp_overhead_model]
(from the repository root; the built-in profiles' charge comes from the tuner itself,
`tp_overhead_model --send-recv`, by default the one in build/)
--check (ctest bench.scale.p2p_exchange_check) fails if the reading no longer holds: the probe's
pair time at 25.2 MB explains more than a quarter of the measured per-exchange excess (then the
excess is bandwidth and the pipeline term should carry it), the built-in profiles charge an exchange
less than NCCL took on the hardware they name, or the dependency-driven simulation leaves
(m + (p - 1) / v) / (m + p - 1).
"""
import functools
import glob
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAL = os.path.join(ROOT, "bench/validate/data/calibration")
SCALE = os.path.join(ROOT, "bench/scale/data")
SIZES = {"25.2 MB (hidden 6144)": 2048 * 6144 * 2, "16.8 MB (hidden 4096)": 2048 * 4096 * 2}
PROFILE_OF = {"H100": "h100-sxm", "H200": "h200-sxm"}
TUNER = os.path.join(ROOT, "build/bench/scale/tp_overhead_model")  # --tuner: another build's


@functools.cache
def builtin_charge(gpu, n):
    """What the tuner's built-in profile of `gpu` charges one send / receive of n bytes."""
    out = subprocess.run([TUNER, "--profile", PROFILE_OF[gpu], "--send-recv", str(n)],
                         check=True, capture_output=True, text=True).stdout
    return float(out)


def rows(run_dir):
    for name in ("coll_2gpu.json", "profile.json"):
        path = os.path.join(run_dir, name)
        if os.path.exists(path):
            data = json.load(open(path))
            out = [c for c in data.get("collectives", []) if c.get("ranks") == 2
                   and c.get("scope") == "intra_node"]
            if out:
                return out
    return []


def line(rs, op):
    pts = {c["bytes"]: c["median_s"] for c in rs if c["op"] == op}
    a, b = pts.get(16 << 20), pts.get(64 << 20)
    if a is None or b is None:
        return None
    beta = (b - a) / ((64 << 20) - (16 << 20))
    return a - beta * (16 << 20), beta, (16 << 20) / a, (64 << 20) / b


def probe_part():
    """Prints the probe's figures; returns the median measured seconds of a 25.2 MB exchange per GPU."""
    out = {}
    print("1. NCCL send/recv between a pair, the collectives probe (2 ranks, one host), calibration runs")
    per_gpu = defaultdict(list)
    for d in sorted(glob.glob(os.path.join(CAL, "*"))):
        base = os.path.basename(d)
        gpu = "H100" if "h100x2" in base else "H200" if "h200x2" in base else None
        rs = rows(d)
        if gpu is None or not rs:
            continue
        sr, ar = line(rs, "send_recv"), line(rs, "all_reduce")
        if sr and ar:
            per_gpu[gpu].append((base, sr, ar))
    for gpu, runs in sorted(per_gpu.items()):
        print(f"  {gpu}: {len(runs)} runs")
        med = lambda f: statistics.median(f(r) for r in runs)
        print("    send_recv algbw at 16 / 64 MB: %.0f / %.0f GB/s (median; range %.0f-%.0f at 16 MB)" % (
            med(lambda r: r[1][2]) / 1e9, med(lambda r: r[1][3]) / 1e9,
            min(r[1][2] for r in runs) / 1e9, max(r[1][2] for r in runs) / 1e9))
        print("    all_reduce busbw at 16 / 64 MB: %.0f / %.0f GB/s" % (
            med(lambda r: r[2][2]) / 1e9, med(lambda r: r[2][3]) / 1e9))
        for label, n in SIZES.items():
            t = med(lambda r: r[1][0] + r[1][1] * n)
            out.setdefault(gpu, {})[n] = t
            print("    one exchange of %s: %.3f ms measured line, %.3f ms built-in profile" % (
                label, 1e3 * t, 1e3 * builtin_charge(gpu, n)))
    return out


def excess_part():
    excess = {}
    print("2. interleave_vs_tp.py on 2x H200 (check data): micro-batch in (m + (p - 1) / v) form")
    for suffix in ("", "_16blocks", "_h4096"):
        path = os.path.join(SCALE, f"2026-11-28_h200x2_interleave_vs_tp{suffix}.json")
        d = json.load(open(path))
        s, modes = d["shape"], d["modes"]
        m = s["micro_batches"]
        vs = sorted(int(k[4:]) for k in modes if k.startswith("pp-v") and "median_s" in modes[k])
        mb = {v: modes[f"pp-v{v}"]["median_s"] / (m + 1 / v) for v in vs}
        act = s["seq"] * s["hidden"] * 2 * s["micro_batch"]
        steps = []
        for a, b in zip(vs, vs[1:]):
            per = (mb[b] - mb[a]) / (2 * (b - a))
            steps.append("v %d->%d %.2f ms (%.0f GB/s)" % (a, b, 1e3 * per, act / per / 1e9))
        total = (mb[vs[-1]] - mb[vs[0]]) / (2 * (vs[-1] - vs[0]))
        print(f"  {s['blocks']} blocks of {s['hidden']}: per further exchange "
              f"{1e3 * total:.2f} ms over v {vs[0]}-{vs[-1]}; by step: " + "; ".join(steps))
        excess[act] = total
    return excess


def order(rank, p, v, m):
    rounds = max(1, m // p)
    per_round = m // rounds
    warm = min((v - 1) * per_round + 2 * (p - 1 - rank), m * v)
    steady = v * m - warm
    pad = (v * p + 2 * (p - 1 - rank)) - (warm + rank)
    nf, nb = defaultdict(int), defaultdict(int)
    ops = [None] * rank

    def fwd(i):
        st = ((i // per_round) % v) * p + rank
        nf[st] += 1
        return ("F", st, nf[st] - 1)

    def bwd(i):
        st = (v - 1 - ((i - warm) // per_round) % v) * p + rank
        nb[st] += 1
        return ("B", st, nb[st] - 1)

    for i in range(warm + steady + warm):
        if i < warm:
            ops.append(fwd(i))
            if i == warm - 1:
                ops += [None] * pad
        elif i < warm + steady:
            ops += [fwd(i), bwd(i)]
        else:
            ops += [None, bwd(i)]
    return ops


def cost(a, v, f=1.0, b=3.0):  # full recomputation: backward = forward again + 2 forwards
    return 0.0 if a is None else (f if a[0] == "F" else b) / v


def lock_step(p, v, m):
    orders = [order(r, p, v, m) for r in range(p)]
    n = max(map(len, orders))
    return sum(max(cost(o[k] if k < len(o) else None, v) for o in orders) for k in range(n))


def dependency(p, v, m):
    orders = [[a for a in order(r, p, v, m) if a] for r in range(p)]
    stages, done, free, nxt = p * v, {}, [0.0] * p, [0] * p
    while any(nxt[r] < len(orders[r]) for r in range(p)):
        for r in range(p):
            if nxt[r] >= len(orders[r]):
                continue
            k, st, i = orders[r][nxt[r]]
            if k == "F":
                dep = ("F", st - 1, i) if st > 0 else None
            else:
                dep = ("B", st + 1, i) if st < stages - 1 else ("F", st, i)
            if dep is not None and dep not in done:
                continue
            start = max(free[r], done[dep] if dep else 0.0)
            done[(k, st, i)] = free[r] = start + cost((k, st, i), v)
            nxt[r] += 1
    return max(free)


def schedule_part():
    print("3. torch's Interleaved1F1B order, p 2, m 4, exchanges free: step / 1F1B's step")
    p, m = 2, 4
    base = dependency(p, 1, m)
    meas = {}
    for suffix in ("", "_16blocks", "_h4096"):
        d = json.load(open(os.path.join(SCALE, f"2026-11-28_h200x2_interleave_vs_tp{suffix}.json")))
        md = d["modes"]
        meas[suffix or "_8blocks"] = {int(k[4:]): md[k]["median_s"] / md["pp-v1"]["median_s"]
                                      for k in md if k.startswith("pp-v") and "median_s" in md[k]}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import megatron_schedule  # Megatron's program: grouped exchanges that rendezvous
    mbase = megatron_schedule.simulate(p, 1, m, 1.0, 3.0, 0.0)
    for v in (2, 4, 8):
        shown = ", ".join(f"{k[1:]} {r[v]:.3f}" for k, r in meas.items() if v in r)
        mega = megatron_schedule.simulate(p, v, m, 1.0, 3.0, 0.0) / mbase
        print(f"  v {v}: dependency-driven {dependency(p, v, m) / base:.3f}, lock step "
              f"{lock_step(p, v, m) / base:.3f}, Megatron's order {mega:.3f}, measured {shown}")
    f22 = megatron_schedule.simulate(4, 12, 4, 1.0, 3.0, 0.0)
    print(f"  Korthikanti 22B pick's pipeline (p 4, v 12, m 4) in Megatron's order: {f22:.3f} F, "
          f"(m + (p - 1) / v)(F + B) = {(4 + 3 / 12) * 4:.3f} F")


def check(probe, excess):
    bad = []
    for gpu, by_size in probe.items():
        for n, t in by_size.items():
            if t > builtin_charge(gpu, n):
                bad.append(f"{gpu}: NCCL took {1e3 * t:.3f} ms for {n / 1e6:.1f} MB, the built-in "
                           f"profile charges less")
            if n in excess and t > 0.25 * excess[n]:
                bad.append(f"{gpu}: NCCL's {1e3 * t:.3f} ms explains over a quarter of the "
                           f"{1e3 * excess[n]:.2f} ms excess at {n / 1e6:.1f} MB")
    p, m = 2, 4
    for v in (1, 2, 4, 8):
        want = (m + (p - 1) / v) / (m + p - 1)
        got = dependency(p, v, m) / dependency(p, 1, m)
        if abs(got - want) > 1e-9:
            bad.append(f"dependency-driven simulation at v {v}: {got:.4f}, not {want:.4f}")
    if "H200" not in probe:
        bad.append("no 2x H200 calibration run with send_recv rows")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    if "--tuner" in sys.argv[1:-1]:
        TUNER = sys.argv[sys.argv.index("--tuner") + 1]
    probe = probe_part()
    excess = excess_part()
    schedule_part()
    sys.exit(check(probe, excess) if "--check" in sys.argv[1:] else 0)
