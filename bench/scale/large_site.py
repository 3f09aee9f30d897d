#!/usr/bin/env python3
"""The real xdeepd at the size of a large site: a simulated cluster of 10,000
nodes x 8 GPUs (Slurm's sinfo / scontrol answered from a generated
inventory, since no Slurm of that size runs here), a policy with partitions and
1,000 users' and 50 accounts' budgets, and decisions asked through the daemon's
real gRPC API by the real `xdeep` client with MUNGE credentials (munged must be
running). Each of the 1,000 users is a distinct caller: run as root, the bench
starts every user's `xdeep` under its own uid (setpriv), so MUNGE vouches for
1,000 different uids; they have no passwd entry on this host, so the daemon
names them by number, and their budgets are written under those names. Prints
decision latency (p50 / p99, with the cheapest authenticated call measured in
the same run as the baseline: the client's own start and one MUNGE round
trip), the daemon's memory, and the time of the largest search (a 70 B model,
every layout up to 10,000 nodes).

Usage: bench/scale/large_site.py BUILD_DIR [--nodes 10000] [--users 1000]
                                 [--decisions 1000] [--concurrency 4] [--largest 5]
"""
import concurrent.futures
import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def simulated_slurm(root, nodes, gpus):
    """scontrol / sinfo / squeue answering for a cluster of `nodes` nodes, in
    the forms the daemon asks for (daemon/slurm_inventory.cc): one line per
    partition from `scontrol -o show partition`, the nodes from `sinfo --json`."""
    bin_dir = os.path.join(root, "bin")
    os.makedirs(bin_dir)
    node_list = []
    for i in range(nodes):
        parts = ["gpu", "short"] if i < nodes // 5 else ["gpu"]
        node_list.append({"name": f"gpu{i:05d}", "partitions": parts, "cpus": 112,
                          "gres": f"gpu:h100:{gpus}", "state": "idle", "state_flags": []})
    for i in range(16):
        node_list.append({"name": f"dbg{i:02d}", "partitions": ["debug"], "cpus": 112,
                          "gres": f"gpu:h100:{gpus}", "state": "idle", "state_flags": []})
    with open(os.path.join(root, "sinfo.json"), "w") as f:
        json.dump({"nodes": node_list}, f)
    weights = "TRESBillingWeights=CPU=0.1,GRES/gpu=1.0"
    partitions = [f"PartitionName=gpu Default=YES State=UP {weights}",
                  f"PartitionName=short Default=NO State=UP {weights}",
                  f"PartitionName=debug Default=NO State=UP {weights}"]
    write(os.path.join(root, "partitions.txt"), "\n".join(partitions) + "\n")
    write(os.path.join(bin_dir, "sinfo"), f"#!/bin/sh\ncat {root}/sinfo.json\n", 0o755)
    write(os.path.join(bin_dir, "scontrol"),
          "#!/bin/sh\n"
          f"case \"$*\" in *partition*) cat {root}/partitions.txt ;; esac\nexit 0\n", 0o755)
    for tool in ("squeue", "sacct"):
        write(os.path.join(bin_dir, tool), "#!/bin/sh\nexit 0\n", 0o755)
    return bin_dir


# Callers' uids: above any real account's, no passwd entry (the daemon names
# them by number, identity.h).
UID_BASE = 200000


def caller_name(u, distinct):
    return str(UID_BASE + u) if distinct else f"user{u:04d}"


def site_config(root, nodes, users, distinct):
    lines = [
        "[server]", f'listen = "unix://{root}/xdeepd.sock"', "worker_threads = 4",
        "[store]", f'path = "{root}/xdeep.db"', f'jobcomp_spool = "{root}/spool"',
        "[log]", 'level = "info"', f'file = "{root}/xdeepd.log"',
        "[identity]", 'mode = "munge"',
        "[hardware]", 'profile = "h100-sxm"',
        "[fabric]", 'builtin = "dgx-h100-superpod"',
        "[policy]", f"max_nodes = {nodes}", "tuning_default = true",
        "price_per_gpu_hour = 2.5", 'currency = "EUR"', 'default_partition = "gpu"',
        "[policy.partition.gpu]", "price_per_gpu_hour = 2.5",
        "[policy.partition.short]", f"max_nodes = {nodes // 5}", "price_per_gpu_hour = 3.0",
        "[policy.partition.debug]", "max_nodes = 2", "price_per_gpu_hour = 0.5",
    ]
    for u in range(users):
        lines += [f'[budget.user."{caller_name(u, distinct)}"]', f"limit = {1000 + 10 * u}"]
    for a in range(50):
        members = ", ".join(f'"{caller_name(u, distinct)}"' for u in range(a * 20, a * 20 + 20)
                            if u < users)
        lines += [f"[budget.account.acct{a:02d}]", f"limit = {100000 + a}", f"members = [{members}]"]
    write(os.path.join(root, "xdeepd.toml"), "\n".join(lines) + "\n")
    os.makedirs(os.path.join(root, "spool"))
    return os.path.join(root, "xdeepd.toml")


def as_caller(cmd, u, distinct):
    """cmd run as caller u: under its own uid and gid when distinct."""
    if not distinct:
        return cmd
    uid = UID_BASE + u
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"] + cmd


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - t0, r


def memory_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--decisions", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--largest", type=int, default=5)
    args = ap.parse_args()
    # Distinct MUNGE identities need root (setpriv); otherwise one user asks.
    distinct = os.geteuid() == 0 and shutil.which("setpriv") is not None
    xdeepd = os.path.join(args.build, "daemon", "xdeepd")
    xdeep = os.path.join(args.build, "daemon", "xdeep")
    for exe in (xdeepd, xdeep):
        if not os.access(exe, os.X_OK):
            sys.exit(f"large_site: {exe} missing; build the daemon first")
    if subprocess.run("munge -n | unmunge", shell=True, capture_output=True).returncode != 0:
        sys.exit("large_site: munged is not running (start it: scripts/slurm-cluster.sh does)")

    root = tempfile.mkdtemp(prefix="xdeep-large-site-")
    os.chmod(root, 0o755)  # the callers' uids reach the socket through it
    daemon = None
    try:
        bin_dir = simulated_slurm(root, args.nodes, args.gpus)
        config = site_config(root, args.nodes, args.users, distinct)
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}",
                   XDEEP_DAEMON=f"unix://{root}/xdeepd.sock")
        t0 = time.perf_counter()
        daemon = subprocess.Popen([xdeepd, "--config", config], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not os.path.exists(f"{root}/xdeepd.sock"):
            if daemon.poll() is not None or time.perf_counter() - t0 > 60:
                sys.exit(f"large_site: xdeepd did not start; see {root}/xdeepd.log")
            time.sleep(0.05)
        start_s = time.perf_counter() - t0
        rss0, _ = memory_kib(daemon.pid)

        # Baseline: the cheapest authenticated call (client start, MUNGE, one read).
        base = []
        for _ in range(20):
            dt, r = timed(as_caller([xdeep, "--json", "budget"], 0, distinct), env)
            if r.returncode != 0:
                sys.exit(f"large_site: xdeep budget failed: {r.stderr.strip()}")
            base.append(dt)

        rng = random.Random(25)
        workloads = ["gpt-1.3b", "llama-7b", "llama-13b", "llama-70b"]
        objectives = ["cost", "time"]
        requests = []
        for i in range(args.decisions):
            w = rng.choice(workloads)
            partition = rng.choice(["gpu", "gpu", "short", "debug"])
            top = {"gpu": args.nodes, "short": args.nodes // 5, "debug": 2}[partition]
            n = rng.choice([1, 2, 8, 64, 512, top])
            n = min(n, top)
            cmd = [xdeep, "--json", "--timeout-ms", "600000", "plan", "-w", w, "-p", partition,
                   "-N", str(n), "--objective", rng.choice(objectives)]
            requests.append(as_caller(cmd, i % args.users, distinct))

        def ask(cmd):
            dt, r = timed(cmd, env)
            # "Nothing fits" is a decision too (a 70 B model on 2 nodes).
            if r.returncode != 0 and "no configuration" not in r.stderr:
                raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
            try:
                return dt, json.loads(r.stdout).get("configurations_evaluated", 0)
            except ValueError:
                return dt, None

        lat, searched = [], []
        t_dec = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            try:
                for dt, n in pool.map(ask, requests):
                    lat.append(dt)
                    if n is not None:
                        searched.append(n)
            except RuntimeError as e:
                sys.exit(f"large_site: {e}")
        dec_wall = time.perf_counter() - t_dec

        # The daemon told the callers apart: each sees its own budget.
        callers_checked = 0
        for u in sorted(rng.sample(range(args.users), min(10, args.users))):
            _, r = timed(as_caller([xdeep, "--json", "budget"], u, distinct), env)
            text = r.stdout
            if r.returncode != 0 or caller_name(u, distinct) not in text or \
                    str(1000 + 10 * u) not in text:
                sys.exit(f"large_site: caller {caller_name(u, distinct)} does not see its own "
                         f"budget (limit {1000 + 10 * u}): {text.strip()[:300]} {r.stderr.strip()}")
            callers_checked += 1

        # The largest space: a 70 B model on up to every node, least time. The
        # daemon keeps search results by request, so each call caps the GPUs one
        # node's worth lower (-n): a fresh search of all but the last i nodes.
        largest = []
        for i in range(args.largest):
            dt, r = timed([xdeep, "--json", "--timeout-ms", "600000", "plan", "-w", "llama-70b",
                           "-N", str(args.nodes), "-n", str((args.nodes - i) * args.gpus),
                           "--objective", "time"], env)
            if r.returncode != 0:
                sys.exit(f"large_site: largest plan: {r.stderr.strip()}")
            largest.append(dt)
            best = json.loads(r.stdout)
        rss, hwm = memory_kib(daemon.pid)

        b50 = statistics.median(base)
        print(f"large_site: {args.nodes} nodes x {args.gpus} GPUs (simulated sinfo), "
              f"{args.users} users' and 50 accounts' budgets, 3 partitions; real xdeepd, "
              f"real xdeep client, MUNGE credentials; "
              + (f"{min(args.users, args.decisions)} distinct callers (own uids {UID_BASE}.., "
                 f"{callers_checked} checked to see their own budget)" if distinct
                 else "one caller (not root: no setpriv)"))
        print(f"  daemon start {start_s * 1e3:.0f} ms; memory {rss0 / 1024:.1f} MiB at start, "
              f"{rss / 1024:.1f} MiB after, peak {hwm / 1024:.1f} MiB")
        print(f"  baseline (xdeep budget, {len(base)} calls): p50 {b50 * 1e3:.1f} ms, "
              f"p99 {percentile(base, 99) * 1e3:.1f} ms")
        print(f"  decisions ({len(lat)} xdeep plan calls, {args.concurrency} at a time, "
              f"{len(lat) / dec_wall:.1f}/s, 4 presets, 3 partitions, 1..{args.nodes} "
              f"nodes, cost/time): p50 {statistics.median(lat) * 1e3:.1f} ms, "
              f"p99 {percentile(lat, 99) * 1e3:.1f} ms; over the baseline p50 "
              f"{statistics.median(lat) / b50:.2f}x, p99 {percentile(lat, 99) / b50:.2f}x")
        print(f"  largest search (llama-70b, up to {args.nodes} nodes, time; {len(largest)} uncached "
              f"calls, -n {args.nodes * args.gpus} down by {args.gpus} a call): "
              f"median {statistics.median(largest) * 1e3:.0f} ms, max {max(largest) * 1e3:.0f} ms "
              f"(baseline subtracted: {(statistics.median(largest) - b50) * 1e3:.0f} ms; each: "
              f"{', '.join(f'{x * 1e3:.0f}' for x in largest)} ms), "
              f"{best.get('configurations_evaluated', 0)} configurations scored; chosen "
              f"{best.get('chosen', {}).get('label', '?')} on {best.get('chosen', {}).get('nodes', '?')} nodes")
        if searched:
            print(f"  configurations scored per decision: median {statistics.median(searched):.0f}, "
                  f"max {max(searched)}")
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
