#!/usr/bin/env python3
"""The real xdeepd at the size of a large site: a simulated cluster of 10,000
nodes x 8 GPUs (Slurm's sinfo / scontrol answered from a generated
inventory, since no Slurm of that size runs here), a policy with partitions and
1,000 users' and 50 accounts' budgets, and decisions asked through the daemon's
real gRPC API by the real `xdeep` client with MUNGE credentials (munged must be
running). Prints decision latency (p50 / p99, with the cheapest authenticated
call measured in the same run as the baseline: the client's own start and one
MUNGE round trip), the daemon's memory, and the time of the largest search
(a 70 B model, every layout up to 10,000 nodes).

Usage: bench/scale/large_site.py BUILD_DIR [--nodes 10000] [--users 1000]
                                 [--decisions 120] [--largest 5]
"""
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
    """sinfo / scontrol / squeue answering for a cluster of `nodes` nodes."""
    bin_dir = os.path.join(root, "bin")
    os.makedirs(bin_dir)
    lines = []
    for i in range(nodes):
        name = f"gpu{i:05d}"
        lines.append(f"gpu*|{name}|112|gpu:h100:{gpus}|idle")
        if i < nodes // 5:
            lines.append(f"short|{name}|112|gpu:h100:{gpus}|idle")
    for i in range(16):
        lines.append(f"debug|dbg{i:02d}|112|gpu:h100:{gpus}|idle")
    write(os.path.join(root, "sinfo.txt"), "\n".join(lines) + "\n")
    write(os.path.join(bin_dir, "sinfo"), f"#!/bin/sh\ncat {root}/sinfo.txt\n", 0o755)
    write(os.path.join(bin_dir, "scontrol"),
          "#!/bin/sh\n"
          "if [ \"$2\" = show ] && [ \"$3\" = partition ]; then\n"
          "  echo \"PartitionName=$4 State=UP TRESBillingWeights=CPU=0.1,GRES/gpu=1.0\"\n"
          "fi\nexit 0\n", 0o755)
    for tool in ("squeue", "sacct"):
        write(os.path.join(bin_dir, tool), "#!/bin/sh\nexit 0\n", 0o755)
    return bin_dir


def site_config(root, nodes, users):
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
        lines += [f"[budget.user.user{u:04d}]", f"limit = {1000 + 10 * u}"]
    for a in range(50):
        members = ", ".join(f'"user{u:04d}"' for u in range(a * 20, a * 20 + 20))
        lines += [f"[budget.account.acct{a:02d}]", f"limit = {100000 + a}", f"members = [{members}]"]
    write(os.path.join(root, "xdeepd.toml"), "\n".join(lines) + "\n")
    os.makedirs(os.path.join(root, "spool"))
    return os.path.join(root, "xdeepd.toml")


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
    ap.add_argument("--decisions", type=int, default=120)
    ap.add_argument("--largest", type=int, default=5)
    args = ap.parse_args()
    xdeepd = os.path.join(args.build, "daemon", "xdeepd")
    xdeep = os.path.join(args.build, "daemon", "xdeep")
    for exe in (xdeepd, xdeep):
        if not os.access(exe, os.X_OK):
            sys.exit(f"large_site: {exe} missing; build the daemon first")
    if subprocess.run("munge -n | unmunge", shell=True, capture_output=True).returncode != 0:
        sys.exit("large_site: munged is not running (start it: scripts/slurm-cluster.sh does)")

    root = tempfile.mkdtemp(prefix="xdeep-large-site-")
    daemon = None
    try:
        bin_dir = simulated_slurm(root, args.nodes, args.gpus)
        config = site_config(root, args.nodes, args.users)
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
            dt, r = timed([xdeep, "--json", "budget"], env)
            if r.returncode != 0:
                sys.exit(f"large_site: xdeep budget failed: {r.stderr.strip()}")
            base.append(dt)

        rng = random.Random(25)
        workloads = ["gpt-1.3b", "llama-7b", "llama-13b", "llama-70b"]
        objectives = ["cost", "time"]
        lat, searched = [], []
        for i in range(args.decisions):
            w = rng.choice(workloads)
            partition = rng.choice(["gpu", "gpu", "short", "debug"])
            top = {"gpu": args.nodes, "short": args.nodes // 5, "debug": 2}[partition]
            n = rng.choice([1, 2, 8, 64, 512, top])
            n = min(n, top)
            cmd = [xdeep, "--json", "--timeout-ms", "600000", "plan", "-w", w, "-p", partition,
                   "-N", str(n), "--objective", rng.choice(objectives)]
            dt, r = timed(cmd, env)
            # "Nothing fits" is a decision too (a 70 B model on 2 nodes).
            if r.returncode != 0 and "no configuration" not in r.stderr:
                sys.exit(f"large_site: {' '.join(cmd[1:])}: {r.stderr.strip()}")
            lat.append(dt)
            try:
                searched.append(json.loads(r.stdout).get("configurations_evaluated", 0))
            except ValueError:
                pass

        # The largest space: a 70 B model on up to every node, least time.
        largest = []
        for _ in range(args.largest):
            dt, r = timed([xdeep, "--json", "--timeout-ms", "600000", "plan", "-w", "llama-70b",
                           "-N", str(args.nodes), "--objective", "time"], env)
            if r.returncode != 0:
                sys.exit(f"large_site: largest plan: {r.stderr.strip()}")
            largest.append(dt)
            best = json.loads(r.stdout)
        rss, hwm = memory_kib(daemon.pid)

        b50 = statistics.median(base)
        print(f"large_site: {args.nodes} nodes x {args.gpus} GPUs (simulated sinfo), "
              f"{args.users} users' and 50 accounts' budgets, 3 partitions; real xdeepd, "
              f"real xdeep client, MUNGE credentials")
        print(f"  daemon start {start_s * 1e3:.0f} ms; memory {rss0 / 1024:.1f} MiB at start, "
              f"{rss / 1024:.1f} MiB after, peak {hwm / 1024:.1f} MiB")
        print(f"  baseline (xdeep budget, {len(base)} calls): p50 {b50 * 1e3:.1f} ms, "
              f"p99 {percentile(base, 99) * 1e3:.1f} ms")
        print(f"  decisions ({len(lat)} xdeep plan calls, 4 presets, 3 partitions, 1..{args.nodes} "
              f"nodes, cost/time): p50 {statistics.median(lat) * 1e3:.1f} ms, "
              f"p99 {percentile(lat, 99) * 1e3:.1f} ms; over the baseline p50 "
              f"{statistics.median(lat) / b50:.2f}x, p99 {percentile(lat, 99) / b50:.2f}x")
        print(f"  largest search (llama-70b, up to {args.nodes} nodes, time; {len(largest)} calls): "
              f"median {statistics.median(largest) * 1e3:.0f} ms, max {max(largest) * 1e3:.0f} ms "
              f"(baseline subtracted: {(statistics.median(largest) - b50) * 1e3:.0f} ms), "
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
