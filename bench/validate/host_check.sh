#!/usr/bin/env bash
# How far the framework probe's host time per kernel tracks launch-bound
# training on one machine: the probe and a few launch-bound single-GPU
# configurations, alternating, each in its own process (bench/validate/README.md).
# PIN=1: round r runs every process with its main thread alone on the r-th of
# the CPUs it may use (measure_pytorch.py's XDEEP_MAIN_CPU, the probe's
# --main-cpu), to see whether a process's speed follows that core.
#
#   OUT=/tmp/hc ROUNDS=3 bash bench/validate/host_check.sh   # 150 s on a 1x H200
set -u
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-/tmp/xdeep-host-check}
ROUNDS=${ROUNDS:-3}
CONFIGS=${CONFIGS:-gpt-125m:1 gpt-350m:1 resnet50:1 resnet50:16}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
source "$here/../relative_paths.sh"
trap 'relative_paths_in "$OUT"' EXIT
relative_log "$OUT/log.txt"
T0=$SECONDS
echo "$(date -u +%FT%TZ) $(hostname) $(nproc) CPUs: $(taskset -pc $$ | sed 's/.*: //')"
lscpu | grep -E "Model name|Thread|Core|Socket|NUMA node|MHz"
cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
read -r -a cpus <<< "$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
for ((r = 1; r <= ROUNDS; r++)); do
  pin=() main=
  if [ "${PIN:-0}" = 1 ]; then
    main=${cpus[$(((r - 1) % ${#cpus[@]}))]}
    pin=(--main-cpu "$main")
    echo "round $r: main threads on CPU $main"
  fi
  timeout 120 python3 "$here/../../profiler/framework_probe.py" "${pin[@]}" --out "$OUT/framework_r$r.json"
  for c in $CONFIGS; do
    m=${c%:*} mb=${c#*:}
    XDEEP_MAIN_CPU=$main timeout -k 5 90 python3 "$here/../memory_validation/measure_pytorch.py" \
      --mode single --models "$m" --micro-batches "$mb" --resnet-micro-batches "$mb" --steps 20 \
      --warmup 3 --kernels --out "$OUT/single_${m}_mb${mb}_r$r.json" 2>&1 | grep -v -i warn | tail -2
  done
  echo "[t=$((SECONDS - T0)) s] round $r done"
done
# One file for the runs (the device tool brings back a few files only).
python3 "$here/../memory_validation/merge_fresh.py" "$OUT/single.json" "host_check.sh" \
  "$OUT"/single_*_r*.json && rm -f "$OUT"/single_*_r*.json
