#!/usr/bin/env bash
# No cost when unused: plain srun against srun with xdeep_spank.so installed
# (required, default=off) but not asked for, on one local cluster, in one run,
# interleaved so drift hits both alike. Prints medians and their ratio.
#   bench/srun_overhead.sh [BUILD_DIR] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
runs=${2:-40}
dir=$(mktemp -d /tmp/xdeep-bench.XXXXXX)
trap '"$root/scripts/slurm-cluster.sh" stop "$dir"; rm -rf "$dir"' EXIT

: > "$dir/plain.plugstack"
echo "required $build/spank_plugin/xdeep_spank.so daemon=unix://$dir/none.sock default=off" \
  > "$dir/xdeep.plugstack"
"$root/scripts/slurm-cluster.sh" start "$dir" --nodes 1 --plugstack "$dir/plain.plugstack" > /dev/null
sed "s|^PlugStackConfig=.*|PlugStackConfig=$dir/xdeep.plugstack|" "$dir/slurm.conf" > "$dir/xdeep.conf"

python3 - "$dir" "$runs" "$build/spank_plugin/xdeep_spank.so" <<'PY'
import os, statistics, subprocess, sys, time
d, runs = sys.argv[1], int(sys.argv[2])
confs = {"plain": f"{d}/slurm.conf", "xdeep": f"{d}/xdeep.conf"}
times = {k: [] for k in confs}
for i in range(runs + 3):
    for name, conf in confs.items():
        env = dict(os.environ, SLURM_CONF=conf)
        t0 = time.perf_counter()
        subprocess.run(["srun", "-Q", "-N1", "true"], env=env, check=True)
        if i >= 3:  # warm-up
            times[name].append(time.perf_counter() - t0)
plain, xdeep = statistics.median(times["plain"]), statistics.median(times["xdeep"])
print(f"srun -N1 true, {runs} runs each, interleaved, on this host")
print(f"  plain srun:                     median {plain*1000:7.2f} ms")
print(f"  xdeep plugin installed, unused: median {xdeep*1000:7.2f} ms")
print(f"  ratio xdeep/plain: {xdeep/plain:.3f}")
libs = subprocess.run(["ldd", sys.argv[3]], capture_output=True, text=True).stdout
print(f"  xdeep_spank.so links {len(libs.splitlines())} libraries, gRPC among them: {'grpc' in libs}")
PY
