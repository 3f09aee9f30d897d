#!/usr/bin/env bash
# What run_device.sh's protocol does to a launch-bound step on a 2-GPU host:
# the same configuration alone on one GPU, in two single-GPU processes side by
# side (as run_device.sh's lanes run), and under DDP on both GPUs, in turn, each
# in its own process (bench/validate/README.md). The kernel profile of each
# run lists its top kernels by GPU time (measure_pytorch.py), to tell what DDP
# adds to a step.
#
#   OUT=/tmp/lc ROUNDS=2 bash bench/validate/lanes_check.sh   # ~65 s per configuration and round
set -u
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-/tmp/xdeep-lanes-check}
ROUNDS=${ROUNDS:-2}
CONFIGS=${CONFIGS:-gpt-125m:1 resnet50:1 gpt-350m:1}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-6}
here=$(cd "$(dirname "$0")" && pwd)
measure=$here/../memory_validation/measure_pytorch.py
work=$(mktemp -d)
mkdir -p "$OUT"
source "$here/../relative_paths.sh"
trap 'relative_paths_in "$OUT"; rm -rf "$work"' EXIT
relative_log "$OUT/log.txt"
T0=$SECONDS
# (nproc would print OMP_NUM_THREADS)
echo "$(date -u +%FT%TZ) $(hostname) $(python3 -c 'import os; print(len(os.sched_getaffinity(0)))') CPUs"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
run() {  # run MODE MODEL MB TAG [GPU]
  local mode=$1 model=$2 mb=$3 tag=$4 gpu=${5:-0}
  local args=("$measure" --mode "$mode" --models "$model" --micro-batches "$mb"
              --resnet-micro-batches "$mb" --steps 6 --warmup 3 --kernels
              --min-seconds "$SECONDS_PER_RUN" --out "$work/${mode}_${model}_mb${mb}_${tag}.json")
  if [ "$mode" = single ]; then
    CUDA_VISIBLE_DEVICES=$gpu timeout -k 5 90 python3 "${args[@]}"
  else
    timeout -k 5 120 torchrun --nproc_per_node=2 --master_port=$((29800 + RANDOM % 100)) "${args[@]}"
  fi 2>&1 | grep -v -e "^W1" -e Warning -e "warnings.warn" -e "_warn_once(" | sed "s/^/[t=$((SECONDS - T0))] $tag /"
}
for ((r = 1; r <= ROUNDS; r++)); do
  for c in $CONFIGS; do
    m=${c%:*} mb=${c#*:}
    run single "$m" "$mb" "alone_r$r" 0
    run single "$m" "$mb" "lane0_r$r" 0 & lane=$!
    run single "$m" "$mb" "lane1_r$r" 1
    wait "$lane"
    run ddp "$m" "$mb" "ddp_r$r"
  done
  # One file per mode after each round (the device tool brings back a few files
  # only; a cut run keeps its rounds); each run's tag is in its `command`.
  for mode in single ddp; do
    python3 "$here/../memory_validation/merge_fresh.py" "$OUT/$mode.json" "lanes_check.sh" "$work"/${mode}_*.json
  done
  echo "[t=$((SECONDS - T0)) s] round $r done"
done
