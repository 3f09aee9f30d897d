#!/usr/bin/env bash
# What xdeep costs a launch, against plain srun measured in the same run,
# interleaved so drift hits every kind alike (medians of RUNS rounds):
#   plain      a cluster with no plugin anywhere
#   plugin     a cluster whose srun and slurmstepd (compute nodes) load
#              xdeep_spank.so, not asked for: the plugin's per-step cost
#   unused     the local stack (scripts/local-stack.sh): the plugin as above,
#              plus job_submit.lua and the jobcomp script in slurmctld; not
#              asked, non-strict partition: what an installed xdeep costs a job
#   tuned      --xdeep-tune on the non-strict partition (decision, re-exec,
#              bind, report), against plain srun of the same shape
#   strict     the same on the strict partition: slurmctld's job_submit.lua
#              runs xdeep-admit for every job (the submission-time check)
#   bench/srun_overhead.sh [BUILD_DIR] [RUNS] [WORKLOAD]
# Besides wall time it counts CPU time: srun and its children, plus what the
# daemons (slurmctld and what it runs, slurmd and its slurmstepd, xdeepd,
# munged) used during the launch. On a busy machine wall times swell with
# everyone else's work; the CPU a launch costs does not.
# With XDEEP_BENCH_BREAKDOWN=1 it also times the parts of one tuned launch
# (strace timestamps: client module loads, daemon calls, the re-exec).
# xdeepd settles finished jobs every XDEEP_BENCH_LEDGER_INTERVAL_S (default
# 60, the daemon's own default): its periodic squeue --json is work per
# interval, not per launch, and at the test stack's 2 s it landed in about
# every second launch window (~7 ms of squeue's CPU plus slurmctld's each time).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
runs=${2:-40}
workload=${3:-gpt-125m}
dir=$(mktemp -d /tmp/xdeep-bench.XXXXXX)
cleanup() {
  "$root/scripts/local-stack.sh" stop "$dir/stack" > /dev/null 2>&1 || true
  "$root/scripts/slurm-cluster.sh" stop "$dir/plain" > /dev/null 2>&1 || true
  "$root/scripts/slurm-cluster.sh" stop "$dir/plugin" > /dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
chmod 0755 "$dir"  # xdeepd runs as its own user inside it

mkdir -p "$dir/plain"
: > "$dir/plain/empty.plugstack"
"$root/scripts/slurm-cluster.sh" start "$dir/plain" --nodes 1 \
  --plugstack "$dir/plain/empty.plugstack" > /dev/null
ledger_interval_s=${XDEEP_BENCH_LEDGER_INTERVAL_S:-60}
XDEEP_STACK_LEDGER_INTERVAL_S=$ledger_interval_s \
  "$root/scripts/local-stack.sh" start "$dir/stack" "$build" --nodes 1 > /dev/null
mkdir -p "$dir/plugin"
cp "$dir/stack/plugstack.conf" "$dir/plugin/xdeep.plugstack"
"$root/scripts/slurm-cluster.sh" start "$dir/plugin" --nodes 1 \
  --plugstack "$dir/plugin/xdeep.plugstack" > /dev/null

python3 - "$dir" "$runs" "$workload" "$build/spank_plugin" "$ledger_interval_s" <<'PY'
import glob, os, re, resource, statistics, subprocess, sys, time
d, runs, workload, plugin_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ledger_interval_s = sys.argv[5]
plain_conf, stack_conf = f"{d}/plain/slurm.conf", f"{d}/stack/slurm.conf"
plugin_conf = f"{d}/plugin/slurm.conf"
tune = ["--xdeep-tune", f"--xdeep-workload={workload}"]

def srun(conf, args, capture=False):
    env = dict(os.environ, SLURM_CONF=conf, XDEEP_REPORT_DIR=f"{d}/reports")
    return subprocess.run(["srun", "-Q", *args], env=env, check=True, text=True,
                          stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                          stderr=subprocess.PIPE if capture else subprocess.DEVNULL)

# The tuned launch's shape, so that plain srun runs the same one.
shape = srun(stack_conf, [*tune, "-N1", "bash", "-c",
                          "echo $SLURM_JOB_NUM_NODES $SLURM_NTASKS $SLURM_GPUS_ON_NODE"],
             capture=True).stdout.split("\n")[0].split()
nodes, tasks, gpus = shape
same = [f"-N{nodes}", f"-n{tasks}", f"--gpus-per-node={gpus}"]
kinds = {
    "plain":        (plain_conf, ["-N1", "-n1", "true"]),
    "plugin":       (plugin_conf, ["-N1", "-n1", "true"]),
    "unused":       (stack_conf, ["-N1", "-n1", "true"]),
    "plain shaped": (plain_conf, [*same, "true"]),
    "tuned":        (stack_conf, [*tune, "-N1", "true"]),
    "strict":       (stack_conf, [*tune, "-N1", "-p", "strict", "true"]),
}
# The daemons of both clusters (pid files) and munged.
pids = []
for pidfile in glob.glob(f"{d}/*/run/*.fgpid"):
    try:
        pids.append(int(open(pidfile).read().split()[0]))
    except (OSError, ValueError, IndexError):
        pass
munged = [int(p) for p in subprocess.run(["pgrep", "-x", "munged"], capture_output=True,
                                        text=True).stdout.split()]
pids += munged
tick = os.sysconf("SC_CLK_TCK")
def daemons_cpu(which=None):
    total = 0
    for pid in (pids if which is None else which):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / tick
def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
times = {k: [] for k in kinds}
cpu = {k: [] for k in kinds}
cpu_munged = {k: [] for k in kinds}  # munged serves every stack on this host: noisy
for i in range(runs + 3):
    for name, (conf, args) in kinds.items():
        c0, d0, m0 = children_cpu(), daemons_cpu(), daemons_cpu(munged)
        t0 = time.perf_counter()
        srun(conf, args)
        t1 = time.perf_counter()
        time.sleep(0.05)  # slurmd reaps the step, jobcomp runs: their CPU counts too
        if i >= 3:  # warm-up
            times[name].append(t1 - t0)
            cpu[name].append(children_cpu() - c0 + daemons_cpu() - d0)
            cpu_munged[name].append(daemons_cpu(munged) - m0)
m = {k: statistics.median(v) * 1000 for k, v in times.items()}
mc = {k: statistics.mean(v) * 1000 for k, v in cpu.items()}
print(f"srun on a 1-node local cluster, {runs} interleaved rounds, medians; "
      f"tuned: {workload}, decided {nodes} node(s) x {gpus} GPU(s), {tasks} task(s); "
      f"xdeepd ledger_interval_s = {ledger_interval_s}")
print(f"  {'':<52} {'wall (median)':>13}  {'ratio':>5}  {'CPU (mean, all processes)':>26}")
def line(label, name, base):
    print(f"  {label:<52} {m[name]:10.2f} ms  {m[name]/m[base]:5.3f}  {mc[name]:8.2f} ms "
          f"(+{mc[name]-mc[base]:6.2f} ms, ratio {mc[name]/mc[base]:.3f})")
print(f"  {'plain srun -N1 -n1 true':<52} {m['plain']:10.2f} ms  {1:5.3f}  {mc['plain']:8.2f} ms")
line("plugin in srun + slurmstepd, not asked", "plugin", "plain")
line("whole stack (+ job_submit.lua, jobcomp), not asked", "unused", "plain")
print(f"  {'plain srun of the decided shape':<52} {m['plain shaped']:10.2f} ms  {1:5.3f}  "
      f"{mc['plain shaped']:8.2f} ms")
line("tuned launch, non-strict partition", "tuned", "plain shaped")
line("tuned launch, strict partition (job_submit check)", "strict", "plain shaped")
def both(a, b):
    return f"wall {m[a]-m[b]:+.2f} ms, CPU {mc[a]-mc[b]:+.2f} ms"
print(f"  plugin's cost per step, not tuned: {both('plugin', 'plain')} (target 0)")
print(f"  controller hooks per job, not tuned: {both('unused', 'plugin')}")
print(f"  strict check (strict - non-strict tuned): {both('strict', 'tuned')} (target <= 3 ms)")
print(f"  tuned launch over plain srun: {both('tuned', 'plain shaped')} (target <= 30 ms)")
mm = {k: statistics.mean(v) * 1000 for k, v in cpu_munged.items()}
print(f"    of its CPU, munged (shared by every MUNGE user on this host, so the noisiest part): "
      f"{mm['tuned'] - mm['plain shaped']:+.2f} ms; without munged: "
      f"{(mc['tuned'] - mm['tuned']) - (mc['plain shaped'] - mm['plain shaped']):+.2f} ms")
# The submission-time check itself: job_submit.lua runs xdeep-admit once per
# job that carries a token (every tuned launch; required on strict partitions).
admit_wall, admit_cpu, admit_daemons = [], [], []
for _ in range(runs):
    c0, d0 = children_cpu(), daemons_cpu()
    t0 = time.perf_counter()
    subprocess.run([f"{plugin_dir}/xdeep-admit", f"--socket={d}/stack/xdeepd.sock.admit",
                    "--timeout-ms=3000", "--uid=0", "--partition=strict", "--nodes=1",
                    "--token=0000"], capture_output=True)
    admit_wall.append(time.perf_counter() - t0)
    admit_cpu.append(children_cpu() - c0)
    admit_daemons.append(daemons_cpu() - d0)
print(f"  xdeep-admit (the submission check, per tuned job): wall median "
      f"{statistics.median(admit_wall)*1000:.2f} ms, CPU mean {statistics.mean(admit_cpu)*1000:.2f} ms"
      f" its own process + {statistics.mean(admit_daemons)*1000:.2f} ms the daemons "
      f"(target <= 3 ms)")
for module in ["xdeep_spank.so", "xdeep_spank_socket.so", "xdeep_spank_client.so"]:
    libs = subprocess.run(["ldd", f"{plugin_dir}/{module}"], capture_output=True,
                          text=True).stdout
    print(f"  {module} links {len(libs.splitlines())} libraries, gRPC among them: "
          f"{'grpc' in libs}")
print("  (srun loads xdeep_spank_socket.so when the daemon has its client socket, "
      f"here: {os.path.exists(d + '/stack/xdeepd.sock.client')})")

if os.environ.get("XDEEP_BENCH_BREAKDOWN") == "1":
    # One tuned launch under strace: when each part starts and ends.
    trace = f"{d}/trace.txt"
    env = dict(os.environ, SLURM_CONF=stack_conf, XDEEP_REPORT_DIR=f"{d}/reports")
    subprocess.run(["strace", "-f", "-ttt", "-o", trace, "-e",
                    "trace=execve,openat,connect,exit_group", "srun", "-Q", *tune, "-N1", "true"],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = None
    events = []
    main_pid = None
    for raw in open(trace):
        fields = raw.split(None, 2)
        if len(fields) < 3:
            continue
        pid, t, call = int(fields[0]), float(fields[1]), fields[2]
        if first is None:
            first, main_pid = t, pid
        if pid != main_pid and not call.startswith("connect("):
            continue  # gRPC's threads connect; the rest is srun's own thread
        if call.startswith("execve("):
            events.append((t, "execve srun" if not events else "re-exec srun"))
        elif re.search(r"xdeep_spank_(client|socket)\.so", call) and "= -1" not in call:
            events.append((t, "client module opened"))
        elif call.startswith("connect(") and "xdeepd.sock" in call:
            events.append((t, "connect to xdeepd"))
        elif call.startswith("exit_group("):
            events.append((t, "exit"))
    print("  one tuned launch, parts (strace -f -ttt of srun's own pid; strace slows it):")
    prev = first
    for t, what in events:
        print(f"    +{(t-first)*1000:8.2f} ms  (+{(t-prev)*1000:7.2f})  {what}")
        prev = t
PY
