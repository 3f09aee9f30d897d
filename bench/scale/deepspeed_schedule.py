#!/usr/bin/env python3
"""DeepSpeed's TrainSchedule against Megatron's 1F1B, step by step.

DeepSpeed (deepspeed/runtime/pipe/schedule.py, TrainSchedule): stage s runs
the forward of micro-batch i at step 2i + s and its backward at
2i + 2p - 1 - s; at the start of each step it exchanges with one neighbour
(a forward step sends the last gradient to s - 1 and receives the next
activation from it; a backward step receives the gradient from s + 1 and sends
the last activation to it), with blocking send and receive. A step starts when
the stage's previous step and its partner's previous step have ended (both
sides of a blocking exchange must be there), plus the exchange's time.

Megatron's 1F1B: p - s - 1 warm-up forwards, then one forward and one backward
each; a pass starts when its input is there (the previous stage's forward, the
next stage's backward) and the stage is free.

Prints both makespans in units of a forward pass (F) for backward B, p stages
and m micro-batches, so the claim in tuner/pipeline_engine.h can be checked:
with free exchanges the two are equal, (m + p - 1)(F + B).

    python3 bench/scale/deepspeed_schedule.py [--f 1] [--b 3] [--c 0]
"""
import argparse


def deepspeed(p, m, f, b, c):
    def op(s, t):
        if t % 2 == s % 2:
            i = (t - s) // 2
            return ("F", i) if 0 <= i < m else None
        k = t - (2 * p - 1 - s)
        return ("B", k // 2) if k % 2 == 0 and 0 <= k // 2 < m else None

    end = {}
    for t in range(2 * (m + p - 1)):
        for s in range(p):
            start = end.get((s, t - 1), 0.0)
            here, before = op(s, t), op(s, t - 1) if t else None
            partner = s - 1 if t % 2 == s % 2 else s + 1
            if 0 <= partner < p and (here or before):
                start = max(start, end.get((partner, t - 1), 0.0)) + c
            end[(s, t)] = start + (0 if here is None else (f if here[0] == "F" else b))
    return max(end.values())


def megatron(p, m, f, b, c):
    order = {}
    for s in range(p):
        warm = min(p - s - 1, m)
        seq = [("F", i) for i in range(warm)]
        nf = warm
        for i in range(m):
            if nf < m:
                seq.append(("F", nf))
                nf += 1
            seq.append(("B", i))
        order[s] = seq
    done, clock, idx = {}, [0.0] * p, [0] * p
    left = sum(len(v) for v in order.values())
    while left:
        moved = False
        for s in range(p):
            while idx[s] < len(order[s]):
                kind, i = order[s][idx[s]]
                if kind == "F":
                    dep = (s - 1, "F", i) if s > 0 else None
                else:
                    dep = (s + 1, "B", i) if s < p - 1 else (s, "F", i)
                if dep and dep not in done:
                    break
                ready = done[dep] + (c if dep and dep[0] != s else 0) if dep else 0.0
                clock[s] = max(clock[s], ready) + (f if kind == "F" else b)
                done[(s, kind, i)] = clock[s]
                idx[s] += 1
                left -= 1
                moved = True
        assert moved, "schedule deadlocked"
    return max(clock)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--f", type=float, default=1.0, help="forward pass time")
    ap.add_argument("--b", type=float, default=3.0, help="backward (with recomputation: 3)")
    ap.add_argument("--c", type=float, default=0.0, help="time of one exchange")
    a = ap.parse_args()
    print(f"{'p':>3} {'m':>4} {'deepspeed':>10} {'megatron':>10} {'(m+p-1)(F+B)':>13}")
    for p, m in [(2, 8), (4, 16), (12, 128), (35, 160), (35, 240)]:
        ds, mg = deepspeed(p, m, a.f, a.b, a.c), megatron(p, m, a.f, a.b, a.c)
        print(f"{p:>3} {m:>4} {ds:>10.1f} {mg:>10.1f} {(m + p - 1) * (a.f + a.b):>13.1f}")


if __name__ == "__main__":
    main()
