#!/usr/bin/env python3
"""DDP's parts, read from ddp_step_split.py's record (no torch needed).

  python3 bench/validate/ddp_step_split_read.py bench/validate/data/checks/<folder>/ddp_step_split.json

The versions took turns step by step on each rank, so each difference below is the median
over the turns of one turn's difference on one rank (the host's level switches between turns,
not within one): the reducer's work (ddp_local - plain, the backward's host time), NCCL's calls
(ddp - ddp_local, the same), DDP's forward (ddp_nosync - plain, the forward's host time), the
GPU's tail after the host (the synchronize of the slower rank). Then per turn: the DDP step of
the rank that started it last (the smaller of the two ranks' step times: the ranks drift apart
over the unsynchronised versions, and the one ahead waits in DDP's step for the other) against
the plain steps' mean and maximum over the ranks (two hosts side by side: the slower of them
paces a synchronous step). Per launch and per bucket: over 2 launches a parameter tensor and
the buckets DDP reduced (its logging data)."""
import json
import statistics
import sys

V = ["plain", "ddp_nosync", "ddp_local", "ddp"]
FWD, BWD, OPT, SYNC = range(4)


def med(xs):
    return statistics.median(xs) * 1e3


def main():
    with open(sys.argv[1]) as f:
        d = json.load(f)
    print(f"{d['meta']['gpu']} x{d['meta']['world']}, torch {d['meta']['torch']}, {d['meta']['date']}")
    for c in d["configs"]:
        if "ranks" not in c:
            print(f"{c['model']} mb{c['micro_batch']}: {c.get('error') or c.get('skipped')}")
            continue
        log = c["ddp_logging"]
        tensors, buckets = int(log["num_parameter_tensors"]), int(log["num_buckets_reduced"])
        print(f"== {c['model']} mb{c['micro_batch']}: {c['turns']} turns, {tensors} parameter tensors,"
              f" {buckets} buckets reduced")
        for r, rank in enumerate(c["ranks"]):
            p = {v: rank["phases"][v] for v in V}
            n = len(p["plain"])
            reducer = med([p["ddp_local"][i][BWD] - p["plain"][i][BWD] for i in range(n)])
            nccl = med([p["ddp"][i][BWD] - p["ddp_local"][i][BWD] for i in range(n)])
            fwd = med([p["ddp_nosync"][i][FWD] - p["plain"][i][FWD] for i in range(n)])
            print(f"   rank {r}: plain step {med([sum(s) for s in p['plain']]):5.1f} ms; reducer {reducer:+5.1f} ms"
                  f" ({reducer / (2 * tensors) * 1e3:4.1f} us a launch), NCCL's calls {nccl:+5.1f} ms"
                  f" ({nccl / buckets * 1e3:4.0f} us a bucket), DDP's forward {fwd:+5.1f} ms;"
                  f" GPU tail after the host: plain {med([s[SYNC] for s in p['plain']]):4.1f},"
                  f" ddp {med([s[SYNC] for s in p['ddp']]):4.1f} ms")
        n = c["turns"]
        step = {v: [[sum(rank["phases"][v][i]) for rank in c["ranks"]] for i in range(n)] for v in V}
        ddp = [min(t) for t in step["ddp"]]
        mean = [statistics.mean(t) for t in step["plain"]]
        most = [max(t) for t in step["plain"]]
        print(f"   per turn: DDP step {med(ddp):5.1f} ms; plain mean {med(mean):5.1f}, slower rank {med(most):5.1f}"
              f" ({statistics.median(m / a for m, a in zip(most, mean)):.3f}x the mean);"
              f" DDP - plain mean {med([a - b for a, b in zip(ddp, mean)]):+5.1f} ms,"
              f" DDP - plain slower rank {med([a - b for a, b in zip(ddp, most)]):+5.1f} ms")


if __name__ == "__main__":
    main()
