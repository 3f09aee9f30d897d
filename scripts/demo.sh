#!/usr/bin/env bash
# README command 1: install, build, start a local Slurm cluster (2 nodes x 4
# fake GPUs) with xdeepd and the plugin, and run one tuned launch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${XDEEP_BUILD_DIR:-$root/build}
stack=$(mktemp -d /tmp/xdeep-demo.XXXXXX)

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build" > "$stack/build.log" 2>&1 || { tail -40 "$stack/build.log"; exit 1; }
trap '"$root/scripts/local-stack.sh" stop "$stack"' EXIT
"$root/scripts/local-stack.sh" start "$stack" "$build" --nodes 2 --gpus 4
source "$stack/env"

cd "$root"
echo
echo "\$ srun --xdeep-tune=explain --xdeep-workload=examples/workloads/gpt-125m.toml python3 examples/train.py"
srun --xdeep-tune=explain --xdeep-workload=examples/workloads/gpt-125m.toml python3 examples/train.py
echo
echo "\$ srun --xdeep-tune --xdeep-objective=time --xdeep-workload=examples/workloads/gpt-125m.toml python3 examples/train.py"
srun --xdeep-tune --xdeep-objective=time --xdeep-workload=examples/workloads/gpt-125m.toml \
  python3 examples/train.py
echo
echo "xdeepd's log of this launch ($stack/xdeepd.log):"
grep -E "event=(tune|bind|report)" "$stack/xdeepd.log" | tail -3
