#!/usr/bin/env python3
"""library_suite.py's lane lock (lane_lock.py) between processes, without a GPU (~4 s).

Each case starts processes that enter "host" or "steps" work at set times, hold it for a set
time, and report when they got in. The lock must keep steps out while the other lane does host
work (and host work out while steps run), let host beside host and steps beside steps run at
once, and let a lane that wants to build in between configurations of the other lane that times
back to back (no starvation).
"""
import multiprocessing as mp
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lane_lock import LaneLock, lane_lock_arg  # noqa: E402


def worker(path, plan, t0, out):
    """plan: [(start_s, kind, hold_s), ...] in order; reports (kind, asked_s, got_s, left_s)."""
    lock = LaneLock(path)
    for start, kind, hold in plan:
        while time.time() - t0 < start:
            time.sleep(0.005)
        asked = time.time() - t0
        with lock.held(kind):
            got = time.time() - t0
            time.sleep(hold)
        out.put((os.getpid(), kind, asked, got, time.time() - t0))


def run(plans):
    path = os.path.join(tempfile.mkdtemp(), "lanes.lock")
    out = mp.Queue()
    t0 = time.time() + 0.2
    procs = [mp.Process(target=worker, args=(path, p, t0, out)) for p in plans]
    for p in procs:
        p.start()
    n = sum(len(p) for p in plans)
    got = [out.get(timeout=30) for _ in range(n)]
    for p in procs:
        p.join()
    return sorted(got, key=lambda g: g[3])


def check(cond, what):
    if not cond:
        print("lane lock test FAILED:", what)
        sys.exit(1)


def main():
    check(lane_lock_arg(["x", "--lane-lock", "F"]) == "F" and lane_lock_arg(["x", "--lane-lock=G"]) == "G"
          and lane_lock_arg(["x"]) is None, "--lane-lock not read from argv")
    # A lane builds for 1 s; the other asks to time 0.2 s later: it waits until the build ended.
    r = run([[(0.0, "host", 1.0)], [(0.2, "steps", 0.1)]])
    build, steps = [g for g in r if g[1] == "host"][0], [g for g in r if g[1] == "steps"][0]
    check(steps[3] >= build[4] - 0.01, f"steps got in at {steps[3]:.2f} s, beside a build until {build[4]:.2f} s")
    # And the other way: steps for 1 s, a build asked 0.2 s later waits for them.
    r = run([[(0.0, "steps", 1.0)], [(0.2, "host", 0.1)]])
    steps, build = [g for g in r if g[1] == "steps"][0], [g for g in r if g[1] == "host"][0]
    check(build[3] >= steps[4] - 0.01, f"a build got in at {build[3]:.2f} s, beside steps until {steps[4]:.2f} s")
    # Host work beside host work, steps beside steps: neither waits.
    for kind in ("host", "steps"):
        r = run([[(0.0, kind, 1.0)], [(0.2, kind, 0.1)]])
        late = max(r, key=lambda g: g[2])
        check(late[3] - late[2] < 0.3, f"{kind} waited {late[3] - late[2]:.2f} s for {kind}")
    # A lane timing configurations back to back (0.3 s each, for 3 s) and one that wants to build
    # at 0.5 s: the build gets in after at most about one configuration, not after all of them.
    r = run([[(0.0 + 0.3 * i, "steps", 0.29) for i in range(10)], [(0.5, "host", 0.5)]])
    build = [g for g in r if g[1] == "host"][0]
    check(build[3] - build[2] < 0.6, f"the build waited {build[3] - build[2]:.2f} s behind back-to-back steps")
    for g in r:
        if g[1] == "steps":
            check(g[4] <= build[3] + 0.01 or g[3] >= build[4] - 0.01,
                  f"steps at {g[3]:.2f}-{g[4]:.2f} s beside the build at {build[3]:.2f}-{build[4]:.2f} s")
    # Without a file the lock does nothing and never waits.
    nolock = LaneLock(None)
    with nolock.held("steps") as waited:
        check(waited == 0.0, "a lane lock without a file waited")
    print("lane lock test: ok")


if __name__ == "__main__":
    main()
