#!/usr/bin/env python3
"""What host_drift_check.py measured, read from its host_drift.json (h23h, session 23).

  python3 bench/validate/host_drift_summary.py DIR

Per round: the probe's GPT and Llama-style pass (median of each window's 100 passes), the GPT's
optimizer-step host time, each training model's median step and the ratio of training to the
probe's GPT pass of the same round. Then, over the rounds alone:

* how far each series drifts (max / min of the window medians);
* how well a probe reading predicts the training windows that follow it: the spread (sd of the
  log) of training / reading over the rounds, for the reading taken as the same round's window
  median, min, 25th percentile, mean, 75th percentile, 90th percentile, and as the median of all
  probe windows alone (the reading a probe of several windows spread over minutes would give);
  the smaller the spread, the more a profile taken from that reading predicts each training
  window; and the correlation of the round's probe median with its training medians (whether
  the two move together within a round);
* beside the builder against alone: each training model's median step, beside and after over
  alone, with the alone rounds' own spread;
* the garbage collector's collections and seconds per training window, and the CPUs' MHz.
"""
import json
import math
import os
import statistics as st
import sys


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def corr(a, b):
    ma, mb = st.mean(a), st.mean(b)
    den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / den if den > 0 else float("nan")


def main():
    d = json.load(open(os.path.join(sys.argv[1], "host_drift.json")))
    ws = d["windows"]
    rounds = sorted({w["round"] for w in ws})
    models = sorted({w["model"] for w in ws if w["kind"] == "train"})
    get = {(w["round"], w["kind"], w["model"]): w for w in ws}
    print(f"{d.get('device')} torch {d.get('torch')} transformers {d.get('transformers')} cpus {d.get('cpus')}")
    print("round phase  start     probe gpt ms  llama ms  step ms | " +
          " | ".join(f"{m} ms (x probe)" for m in models))
    for r in rounds:
        g = get.get((r, "probe", "gpt"))
        if not g:
            continue
        gm = st.median(g["times_s"])
        line = (f"{r:5} {g['phase']:6} {g['start']}  {gm * 1e3:8.2f}  "
                f"{st.median(get[(r, 'probe', 'llama')]['times_s']) * 1e3:8.2f}  "
                f"{st.median(get[(r, 'step', 'gpt')]['times_s']) * 1e3:6.2f} | ")
        parts = []
        for m in models:
            t = get.get((r, "train", m))
            if t:
                tm = st.median(t["times_s"])
                parts.append(f"{tm * 1e3:7.2f} ({tm / gm:5.2f}) gc {t['gc_collections']}/{t['gc_s'] * 1e3:.1f} ms")
        print(line + " | ".join(parts) + f" | {g.get('cpu_mhz') or 0:.0f} MHz")

    alone = [r for r in rounds if get.get((r, "probe", "gpt"), {}).get("phase") == "alone"]
    if len(alone) < 3:
        print("fewer than 3 rounds alone: no statistics")
        return
    probe = {r: get[(r, "probe", "gpt")]["times_s"] for r in alone}
    llama = {r: get[(r, "probe", "llama")]["times_s"] for r in alone}
    print("\ndrift over the rounds alone (max / min of the window medians):")
    print(f"  probe GPT {max(st.median(v) for v in probe.values()) / min(st.median(v) for v in probe.values()):.2f}x,"
          f" probe Llama {max(st.median(v) for v in llama.values()) / min(st.median(v) for v in llama.values()):.2f}x")
    all_probe = [x for v in probe.values() for x in v]
    readings = {
        "same round: median": lambda r: st.median(probe[r]),
        "same round: min": lambda r: min(probe[r]),
        "same round: p25": lambda r: pct(probe[r], 0.25),
        "same round: mean": lambda r: st.mean(probe[r]),
        "same round: p75": lambda r: pct(probe[r], 0.75),
        "same round: p90": lambda r: pct(probe[r], 0.90),
        "same round: Llama median": lambda r: st.median(llama[r]),
        "all rounds alone: median": lambda r: st.median(all_probe),
    }
    for m in models:
        tr = {r: st.median(get[(r, "train", m)]["times_s"]) for r in alone if (r, "train", m) in get}
        print(f"\n{m}: {len(tr)} rounds alone, training median {min(tr.values()) * 1e3:.2f}-{max(tr.values()) * 1e3:.2f} ms"
              f" ({max(tr.values()) / min(tr.values()):.2f}x)")
        for name, f in readings.items():
            ratio = [tr[r] / f(r) for r in tr]
            lr = [math.log(x) for x in ratio]
            print(f"  training / probe {name:26} mean {st.mean(ratio):6.2f}  sd(log) {st.pstdev(lr):.3f}")
        print(f"  correlation of log probe median and log training median over the rounds: "
              f"{corr([math.log(st.median(probe[r])) for r in tr], [math.log(v) for v in tr.values()]):+.2f}")
        for phase in ("beside", "after"):
            other = [st.median(w["times_s"]) for w in ws if w["kind"] == "train" and w["model"] == m
                     and w["phase"] == phase]
            if other:
                a = list(tr.values())
                print(f"  {phase}: {len(other)} rounds, median {st.median(other) * 1e3:.2f} ms against alone "
                      f"{st.median(a) * 1e3:.2f} ({st.median(other) / st.median(a):.2f}x; alone's rounds "
                      f"{min(a) * 1e3:.2f}-{max(a) * 1e3:.2f}, beside's {min(other) * 1e3:.2f}-{max(other) * 1e3:.2f})")
        gc_n = [get[(r, "train", m)]["gc_collections"] for r in tr]
        gc_s = [get[(r, "train", m)]["gc_s"] for r in tr]
        steps = [len(get[(r, "train", m)]["times_s"]) for r in tr]
        print(f"  GC in its training windows: {sum(gc_n)} collections over {sum(steps)} steps, "
              f"{sum(gc_s) * 1e3:.1f} ms in all")
    mhz = [w["cpu_mhz"] for w in ws if w.get("cpu_mhz")]
    if mhz:
        print(f"\nCPU MHz over the windows: {min(mhz):.0f}-{max(mhz):.0f}")


if __name__ == "__main__":
    main()
