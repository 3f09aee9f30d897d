#!/usr/bin/env python3
"""Megatron-LM's pipeline schedules as the code orders them, step by step.

Each rank runs the program of megatron/schedules.py (Megatron-LM a8d172b,
2021; megatron-core's forward_backward_pipelining_with_interleaving keeps
the same order and exchanges without overlap_p2p_comm): its forward and
backward chunk passes, and between them the batched, blocking exchanges
(send_forward_recv_forward, send_forward_backward_recv_forward_backward,
send_backward_recv_backward, ...). An exchange is a group of sends and
receives (batch_isend_irecv, then wait): it ends when every one of them has
met its partner on the neighbouring rank, plus the transfer time. Messages on
one directed link meet in order (NCCL's point-to-point semantics). With
interleaving the ranks form a ring: rank p - 1 sends chunk c's output to
rank 0's chunk c + 1.

Prints the makespan in units of a stage's forward F (backward B; each of a
rank's v chunks takes F / v and B / v) against the bubble the strategy model
charges, (m + (p - 1) / v)(F + B) of the slowest stage, and against the
makespan with the schedule's order kept but every exchange free of
rendezvous (a pass waits only for its input): what the code's grouping of
sends and receives costs. --head makes the last rank's last chunk (output
layer and loss) heavier by that share of a stage's pass.

    python3 bench/scale/megatron_schedule.py [--f 1] [--b 3] [--c 0] [--head 0]
    python3 bench/scale/megatron_schedule.py --check   # ctest: free transfers give the model's bubble
"""
import argparse
import collections


def interleaved_program(p, r, v, m):
    """Rank r's operations under Megatron's interleaved schedule (v chunks;
    v = 1 gives the plain 1F1B program of the same file)."""
    total = m * v
    if v == 1:
        return plain_program(p, r, m)
    if m == p:
        warm, all_warm = total, True
    else:
        warm, all_warm = min((p - r - 1) * 2 + (v - 1) * p, total), False
    rest = total - warm

    def chunk(k, forward):
        c = (k % (p * v)) // p
        return c if forward else v - c - 1

    def index(k, forward):
        # which micro-batch of its chunk the k-th forward (backward) is
        group, within = divmod(k, p * v)
        return group * p + within % p

    first = lambda c: r == 0 and c == 0
    last = lambda c: r == p - 1 and c == v - 1
    ops = []

    def exchange(send_next=None, send_prev=None, recv_prev=None, recv_next=None):
        ops.append(("X", send_next, send_prev, recv_prev, recv_next))

    exchange(recv_prev=None if first(0) else ("A", 0, 0))
    for k in range(warm):
        c = chunk(k, True)
        ops.append(("F", c, index(k, True)))
        out = None if last(c) else ("A", c, index(k, True))
        nxt = chunk(k + 1, True)
        rp = not (r == 0 and nxt == 0) and k != total - 1
        rprev = ("A", nxt, index(k + 1, True)) if rp else None
        if k == warm - 1 and not all_warm:
            rn = ("G", v - 1, 0) if r != p - 1 else None
            exchange(send_next=out, recv_prev=rprev, recv_next=rn)
        else:
            exchange(send_next=out, recv_prev=rprev)
    for k in range(rest):
        fk, bk = k + warm, k
        fc, bc = chunk(fk, True), chunk(bk, False)
        ops.append(("F", fc, index(fk, True)))
        ops.append(("B", bc, index(bk, False)))
        out = None if last(fc) else ("A", fc, index(fk, True))
        grad = None if first(bc) else ("G", bc, index(bk, False))
        rp = True
        if r == 0:
            nf = chunk(fk - (p - 1), True)
            rp = nf != v - 1
        rn = True
        if r == p - 1:
            nb = chunk(bk - (p - 1), False)
            rn = nb != 0
        if k == rest - 1:
            rp = False
        exchange(send_next=out, send_prev=grad, recv_prev="A" if rp else None,
                 recv_next="G" if rn else None)
    if all_warm:
        exchange(recv_next=None if r == p - 1 else "G")
    for k in range(rest, total):
        bc = chunk(k, False)
        ops.append(("B", bc, index(k, False)))
        grad = None if first(bc) else ("G", bc, index(k, False))
        rn = not (r == p - 1 and chunk(k + 1, False) == v - 1) and k != total - 1
        exchange(send_prev=grad, recv_next="G" if rn else None)
    return ops


def plain_program(p, r, m):
    """Megatron's forward_backward_pipelining_without_interleaving."""
    ops = []
    warm = min(p - r - 1, m)
    rest = m - warm
    has_prev, has_next = r > 0, r < p - 1
    x = lambda **k: ops.append(("X", k.get("sn"), k.get("sp"), k.get("rp"), k.get("rn")))
    for i in range(warm):
        x(rp="A" if has_prev else None)
        ops.append(("F", 0, i))
        x(sn="A" if has_next else None)
    if rest > 0:
        x(rp="A" if has_prev else None)
    for i in range(rest):
        ops.append(("F", 0, warm + i))
        x(sn="A" if has_next else None, rn="G" if has_next else None)
        ops.append(("B", 0, i))
        if i == rest - 1:
            x(sp="G" if has_prev else None)
        else:
            x(sp="G" if has_prev else None, rp="A" if has_prev else None)
    for i in range(rest, m):
        x(rn="G" if has_next else None)
        ops.append(("B", 0, i))
        x(sp="G" if has_prev else None)
    return ops


def simulate(p, v, m, f, b, c, rendezvous=True, head=0.0):
    """Makespan. rendezvous=False: a send never waits for its receiver and an
    exchange waits only for what it receives (the data dependencies alone).
    head: the last rank's last chunk (the output layer and loss) adds this
    share of a stage's pass."""
    progs = [interleaved_program(p, r, v, m) for r in range(p)]
    pos, clock = [0] * p, [0.0] * p
    # per directed link (src, dst): posted send times and receive times, in order
    sends, recvs = collections.defaultdict(list), collections.defaultdict(list)
    posted = [None] * p  # the exchange a rank waits in: list of (link, index, kind)
    done_ops = 0
    total_ops = sum(len(x) for x in progs)

    def link_done(link, i):
        if i < len(sends[link]) and i < len(recvs[link]):
            return max(sends[link][i], recvs[link][i]) + c
        return None

    while done_ops < total_ops:
        moved = False
        for r in range(p):
            while pos[r] < len(progs[r]):
                op = progs[r][pos[r]]
                if op[0] in ("F", "B"):
                    heavy = head * v if r == p - 1 and op[1] == v - 1 else 0.0
                    clock[r] += (f if op[0] == "F" else b) / v * (1 + heavy)
                    pos[r] += 1
                    done_ops += 1
                    moved = True
                    continue
                if posted[r] is None:
                    _, sn, sp, rp, rn = op
                    waits = []
                    for tensor, peer, kind in ((sn, (r + 1) % p, "send"), (sp, (r - 1) % p, "send"),
                                               (rp, (r - 1) % p, "recv"), (rn, (r + 1) % p, "recv")):
                        if tensor is None or peer == r:
                            continue
                        link = (r, peer) if kind == "send" else (peer, r)
                        queue = sends if kind == "send" else recvs
                        queue[link].append(clock[r])
                        waits.append((link, len(queue[link]) - 1, kind))
                    posted[r] = waits
                ends = []
                for link, i, kind in posted[r]:
                    if not rendezvous and kind == "send":
                        ends.append(clock[r] + c)
                        continue
                    t = link_done(link, i)
                    if t is None:
                        break
                    ends.append(t)
                else:
                    clock[r] = max([clock[r]] + ends)
                    posted[r] = None
                    pos[r] += 1
                    done_ops += 1
                    moved = True
                    continue
                break
        assert moved, "schedule deadlocked"
    return max(clock)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--f", type=float, default=1.0, help="a stage's forward pass time")
    ap.add_argument("--b", type=float, default=3.0, help="its backward (with recomputation: 3)")
    ap.add_argument("--c", type=float, default=0.0, help="time of one transfer")
    ap.add_argument("--head", type=float, default=0.0,
                    help="extra work of the last stage's output layer, share of a stage's pass")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless, with free transfers, every makespan is the model's")
    a = ap.parse_args()
    bad = 0
    print(f"{'p':>3} {'v':>2} {'m':>4} {'code':>9} {'no wait':>9} {'model':>9} {'code/model':>10}")
    for p, v, m in [(4, 1, 28), (4, 3, 28), (8, 1, 48), (8, 2, 48), (16, 2, 144), (35, 1, 280),
                    (35, 3, 280), (8, 2, 64), (64, 2, 512)]:
        code = simulate(p, v, m, a.f, a.b, a.c, head=a.head)
        free = simulate(p, v, m, a.f, a.b, a.c, rendezvous=False, head=a.head)
        model = (m + (p - 1) / v) * (a.f + a.b) * (1 + a.head)
        print(f"{p:>3} {v:>2} {m:>4} {code:>9.1f} {free:>9.1f} {model:>9.1f} {code / model:>10.4f}")
        if a.check and a.c == 0 and a.head == 0 and max(abs(code - model), abs(free - model)) > 1e-9 * model:
            bad += 1
    if bad:
        print(f"megatron_schedule: {bad} schedule(s) differ from (m + (p - 1) / v)(F + B) with free "
              "transfers: the strategy model's pipeline bubble no longer matches Megatron's order")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
