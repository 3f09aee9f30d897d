#!/usr/bin/env bash
# The whole validation of issue 7 in one call on a machine with 1 or 2 NVIDIA
# GPUs: xdeep's probes there, real PyTorch training of the same workloads, and
# the tuner's predictions against it (bench/validate/README.md).
#
#   XDEEP_CARRY=build/carry OUT=/tmp/out bench/validate/run_device.sh
#
# XDEEP_CARRY holds xdeep-probe, xdeep_validate and the Debian libraries they
# need (bench/profiler/pack_carry.sh BUILD_DIR). Writes to $OUT: log.txt, the
# probe reports (compute.json, coll_*gpu.json, framework_*.json) and
# profile.json (merged), single_rN.json, ddp_rN.json, fsdp_rN.json
# (measure_pytorch.py, round N), validation.json.
# Every step has a timeout, so the call ends; MODELS, MBS, MBS_2GPU narrow it.
# STAGES picks stages (default all: probes,single,ddp,fsdp,single2,ddp2,fsdp2,
# compare; also `framework`, the framework probe alone, and `collectives`) so
# that a run can span several device calls (10 minutes each); a later call
# finds the earlier ones' files in PRIOR (a folder of the working tree).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-/tmp/xdeep-validate}
carry=${XDEEP_CARRY:-build/carry}
MODELS=${MODELS:-gpt-125m,gpt-350m,gpt-760m,gpt-1.3b,resnet50}
MBS=${MBS:-1,2,4,8,16}      # single GPU
MBS_2GPU=${MBS_2GPU:-1,4,16}  # DDP and FSDP
NPROC=${NPROC:-2}            # GPUs of the DDP and FSDP runs
STEPS=${STEPS:-6}
WARMUP=${WARMUP:-3}
STAGES=,${STAGES:-probes,single,ddp,fsdp,single2,ddp2,fsdp2,compare},
PRIOR=${PRIOR:-}
here=$(cd "$(dirname "$0")" && pwd)
measure=$here/../memory_validation/measure_pytorch.py
framework_probe=$here/../../profiler/framework_probe.py
work=$(mktemp -d)
source "$here/device_env.sh"  # library path, log.txt, stamp, relative_paths_in
# Per-configuration files are merged into $OUT; what stays names files relative
# to the checkout and $OUT.
trap 'relative_paths_in "$OUT"; rm -rf "$work"' EXIT

stamp "$(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
gpus=$(nvidia-smi -L | wc -l)
(( NPROC <= gpus )) || NPROC=$gpus
"$carry/xdeep-probe" --help > /dev/null || { echo "xdeep-probe does not start"; ldd "$carry/xdeep-probe"; exit 1; }
# BIND=1: every process on CPUs of its GPU's NUMA node, distinct cores per GPU, as a
# site binds tasks (gpu_cpus.py). Off by default: it did not make launch-bound runs
# reproducible, and the model's host time per kernel comes from unbound runs
# (data/calibration/2026-11-26_h200x2_bound/README.md).
IFS=';' read -r -a gpu_cpus <<< "$( [ "${BIND:-0}" = 1 ] && python3 "$here/gpu_cpus.py" 6)"
echo "CPUs per GPU: ${gpu_cpus[*]:-not bound}"
on_gpu() {  # on_gpu GPU COMMAND...: COMMAND bound to GPU's CPUs
  local cpus=${gpu_cpus[$1]:-}; shift
  if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi
}
all_cpus=$(IFS=';'; echo "${gpu_cpus[*]:-}")  # torchrun: measure_pytorch.py binds each rank

stage() { [[ $STAGES == *,$1,* ]]; }
# 1. Probes: the workloads' GEMMs, bandwidth and collectives on every GPU here
# (`probes`), and the framework's host costs (`framework`, also part of `probes`).
# The reports land in $OUT; `compare` merges every one found there and in PRIOR.
if stage probes; then
"$carry/xdeep_validate" shapes --models "$MODELS" --micro-batches "$MBS" --out "$work/shapes.json" || exit 1
stamp "compute probes"
on_gpu 0 timeout 300 "$carry/xdeep-probe" compute --suite gpu --shapes "$work/shapes.json" --dtypes bf16 \
  --time-limit 280 --out "$OUT/compute.json"
echo "rc=$?"
fi
# The framework's host costs drift with the host's speed over minutes
# (data/calibration/2026-11-26_h200x2_heldout8): each call of a run times them once, one
# process on one GPU and one on two ranks (FSDP's per-unit collectives wait for
# the other ranks, as in training), so the tuner's medians span the run as the
# training does. Each report is named by the call's start time.
if stage probes || stage framework; then
  tag=$(date -u +%H%M%S)
  stamp "framework probe"
  on_gpu 0 timeout 120 python3 "$framework_probe" --out "$OUT/framework_${tag}.json"
  echo "rc=$?"
  if (( gpus >= 2 )); then
    stamp "framework probe, 2 ranks"
    timeout 120 python3 "$framework_probe" --ranks 2 --out "$OUT/framework_2ranks_${tag}.json"
    echo "rc=$?"
  fi
fi
# Collectives at 2, 4, 8 ranks, as many as this machine has GPUs.
if stage probes || stage collectives; then
for ranks in 2 4 8; do
  (( ranks <= gpus )) || break
  stamp "collective probes, $ranks GPUs"
  pids=()
  for ((r = 1; r < ranks; r++)); do
    RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29600 + ranks)) \
      on_gpu $r timeout 120 "$carry/xdeep-probe" collectives --out "$work/unused.json" > "$work/rank$r.txt" 2>&1 &
    pids+=($!)
  done
  RANK=0 WORLD_SIZE=$ranks LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29600 + ranks)) \
    on_gpu 0 timeout 120 "$carry/xdeep-probe" collectives --out "$OUT/coll_${ranks}gpu.json"
  echo "rank0 rc=$?"
  wait "${pids[@]}"  # (never a bare `wait`: it would wait for the log's tee too)
done
fi

# 2. Real training: one process (torchrun pair) per mode and model, its micro-batches
# one after the other, each once the one before has left the GPU's memory, and their
# kernel profiles last (measure_pytorch.py). Single-GPU lanes run side by side, one
# per GPU (they do not slow each other, data/checks/2026-11-26_h100x2_lanes_check); 2-GPU
# runs one at a time.
# Launch-bound configurations (micro-batch <= LAUNCH_BOUND_MB, FSDP's up to
# FSDP_LAUNCH_BOUND_MB: its hooks keep it host-bound longer, and ResNet-50) follow
# the host's speed, which switches between levels ~1.5x apart within seconds and
# drifts over minutes (data/checks/2026-11-26_h100x1_host_check_pinned, _h200x2_heldout8):
# their timed steps span LAUNCH_BOUND_SECONDS, and round 2 (stages single2, ddp2,
# fsdp2) times them again in new processes minutes later; xdeep_validate averages
# the two.
LAUNCH_BOUND_MB=${LAUNCH_BOUND_MB:-2}
FSDP_LAUNCH_BOUND_MB=${FSDP_LAUNCH_BOUND_MB:-4}
LAUNCH_BOUND_SECONDS=${LAUNCH_BOUND_SECONDS:-3}
# Modes whose round 1 also profiles each configuration's kernels (compare
# --breakdown); under DDP a profile costs ~6 s, more than the run can spare.
KERNEL_MODES=,${KERNEL_MODES:-single},
bound_mb() {  # bound_mb MODE MODEL: the largest launch-bound micro-batch
  if [ "$2" = resnet50 ]; then echo 1024  # every one: any micro-batch measured here
  elif [ "$1" = fsdp ]; then echo "$FSDP_LAUNCH_BOUND_MB"
  else echo "$LAUNCH_BOUND_MB"; fi
}
train() {  # train MODE MODEL MBS GPU PORT ROUND: MBS (comma-separated) in one process
  local mode=$1 model=$2 mbs=$3 gpu=$4 port=$5 round=$6
  local args=("$measure" --mode "$mode" --models "$model" --micro-batches "$mbs"
              --resnet-micro-batches "$mbs" --steps "$STEPS" --warmup "$WARMUP"
              --min-seconds "$LAUNCH_BOUND_SECONDS" --window-mb "$(bound_mb "$mode" "$model")"
              --out "$work/${mode}_${model}_g${gpu/,/}_r${round}.json")
  (( round == 1 )) && [[ $KERNEL_MODES == *,$mode,* ]] && args+=(--kernels)
  if [ "$mode" = single ]; then
    CUDA_VISIBLE_DEVICES=$gpu XDEEP_GPU_CPUS=${gpu_cpus[$gpu]:-} timeout -k 5 150 python3 "${args[@]}"
  else
    XDEEP_GPU_CPUS=$all_cpus timeout -k 5 200 torchrun --nproc_per_node="$NPROC" --master_port="$port" "${args[@]}"
  fi 2>&1 | grep -v -e "^W1" -e Warning -e "warnings.warn" -e "_warn_once(" | sed "s/^/[t=$((SECONDS - T0))] /"
}
round_mbs() {  # round_mbs MODE MODEL MBS ROUND: MBS, or in round 2 the launch-bound ones
  local mb out=() bound
  bound=$(bound_mb "$1" "$2")
  for mb in ${3//,/ }; do (( $4 == 1 || mb <= bound )) && out+=("$mb"); done
  (IFS=,; echo "${out[*]}")
}
# Single-GPU lanes, one per GPU, so that they take about as long: in round 1
# each model's micro-batches dealt out in turn; in round 2 (few configurations
# a model, a process's start-up counts) whole models, each to the lane with the
# fewest configurations so far, ResNet-50 (all launch-bound) first.
lane1() {  # lane1 GPU LANES: round 1 on this GPU
  local gpu=$1 lanes=$2 k=0 model mb mine
  for model in "${models[@]}"; do
    mine=()
    for mb in ${MBS//,/ }; do
      (( k++ % lanes == gpu )) && mine+=("$mb")
    done
    (( ${#mine[@]} )) && train single "$model" "$(IFS=,; echo "${mine[*]}")" "$gpu" 0 1
  done
}
lane_models() {  # lane_models GPU LANES: round 2's models for this GPU
  local gpu=$1 lanes=$2 model g best n load=() order=()
  for ((g = 0; g < lanes; g++)); do load[g]=0; done
  [[ ,$MODELS, == *,resnet50,* ]] && order+=(resnet50)
  for model in "${models[@]}"; do [ "$model" = resnet50 ] || order+=("$model"); done
  for model in "${order[@]}"; do
    n=$(round_mbs single "$model" "$MBS" 2 | tr , '\n' | grep -c .)
    best=0
    for ((g = 1; g < lanes; g++)); do (( load[g] < load[best] )) && best=$g; done
    load[best]=$(( load[best] + n ))
    (( best == gpu )) && echo "$model"
  done
}
lane2() {  # lane2 GPU LANES: round 2 on this GPU
  local model
  for model in $(lane_models "$1" "$2"); do
    train single "$model" "$(round_mbs single "$model" "$MBS" 2)" "$1" 0 2
  done
}
IFS=, read -r -a models <<< "$MODELS"
port=$((29700 + RANDOM % 200))
for round in 1 2; do
  suffix=$([ "$round" = 2 ] && echo 2)
  if stage "single$suffix"; then
    stamp "single GPU, round $round"
    lanes=$(( gpus >= 2 ? 2 : 1 )) pids=()
    for ((g = 1; g < lanes; g++)); do "lane$round" $g $lanes & pids+=($!); done
    "lane$round" 0 $lanes
    # (never a bare `wait`: it would wait for the log's tee too)
    (( ${#pids[@]} == 0 )) || wait "${pids[@]}"
    python3 "$here/../memory_validation/merge_fresh.py" "$OUT/single_r$round.json" \
      "run_device.sh: one process per model and lane, round $round" "$work"/single_*_r"$round".json
  fi
  (( gpus >= 2 )) || continue
  for mode in ddp fsdp; do
    stage "$mode$suffix" || continue
    stamp "$mode, $NPROC GPUs, round $round"
    for model in "${models[@]}"; do
      mbs=$(round_mbs "$mode" "$model" "$MBS_2GPU" "$round")
      [ -n "$mbs" ] && train "$mode" "$model" "$mbs" 0,1 $((port++)) "$round"
    done
    python3 "$here/../memory_validation/merge_fresh.py" "$OUT/${mode}_r$round.json" \
      "run_device.sh: one torchrun ($NPROC GPUs) per model, round $round" "$work"/${mode}_*_r"$round".json
  done
done

# 3. Predictions against the measurements: the probe reports merged into one
# profile (this call's and PRIOR's; a PRIOR of an earlier protocol has its
# profile.json merged already), then compared with every round's training.
if stage compare; then
  stamp "compare"
  found() {  # found PATTERN: the files matching PATTERN in $OUT, and in PRIOR where $OUT has none
    local f name
    for f in "$OUT"/$1 ${PRIOR:+"$PRIOR"/$1}; do
      [ -e "$f" ] || continue
      name=$(basename "$f")
      [[ $f != "$OUT"/* && -e "$OUT/$name" ]] || echo "$f"
    done
  }
  mapfile -t reports < <(found compute.json; found 'coll_*gpu.json'; found 'framework_*.json')
  if [ -n "$(found compute.json)" ]; then
    "$carry/xdeep-probe" merge "${reports[@]}" --multi-rank-collectives --out "$OUT/profile.json" || exit 1
  fi
  # Each mode's rounds; a PRIOR of the earlier protocol has one file per mode.
  mapfile -t runs < <(for m in single ddp fsdp; do
    rounds=$(found "${m}_r[0-9].json")
    if [ -n "$rounds" ]; then echo "$rounds"; else found "${m}.json"; fi
  done)
  profile=$(found profile.json | head -1)
  if [ -z "$profile" ] || (( ${#runs[@]} == 0 )); then
    echo "compare: no probe reports or no training results here or in PRIOR (${PRIOR:-unset});" \
      "run the probes and training stages first"
  else
    "$carry/xdeep_validate" compare --profile "$profile" --runs "${runs[@]}" --json "$OUT/validation.json"
  fi
fi
stamp "done"
