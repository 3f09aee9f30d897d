#!/usr/bin/env bash
# The whole validation of issue 7 in one call on a machine with 1 or 2 NVIDIA
# GPUs: xdeep's probes there, real PyTorch training of the same workloads, and
# the tuner's predictions against it (bench/validate/README.md).
#
#   XDEEP_CARRY=build/carry OUT=/tmp/out bench/validate/run_device.sh
#
# XDEEP_CARRY holds xdeep-probe, xdeep_validate and the Debian libraries they
# need (bench/profiler/pack_carry.sh BUILD_DIR). Writes to $OUT: log.txt,
# profile.json (the merged probe report), single.json, ddp.json, fsdp.json
# (measure_pytorch.py, one process per configuration), validation.json.
# Every step has a timeout, so the call ends; MODELS, MBS, MBS_2GPU narrow it.
# STAGES picks stages (default all: probes,single,ddp,fsdp,compare; also
# `collectives`, the collective probes alone) so that a
# run can span several device calls (10 minutes each); a later call finds the
# earlier one's files in PRIOR (a folder of the working tree).
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
STAGES=,${STAGES:-probes,single,ddp,fsdp,compare},
PRIOR=${PRIOR:-}
here=$(cd "$(dirname "$0")" && pwd)
measure=$here/../memory_validation/measure_pytorch.py
framework_probe=$here/../../profiler/framework_probe.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT  # per-configuration files: merged into $OUT
mkdir -p "$OUT"
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib
exec > >(tee "$OUT/log.txt") 2>&1
T0=$SECONDS
stamp() { echo "[t=$((SECONDS - T0)) s] $*"; }

stamp "$(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
gpus=$(nvidia-smi -L | wc -l)
(( NPROC <= gpus )) || NPROC=$gpus
"$carry/xdeep-probe" --help > /dev/null || { echo "xdeep-probe does not start"; ldd "$carry/xdeep-probe"; exit 1; }
# BIND=1: every process on CPUs of its GPU's NUMA node, distinct cores per GPU, as a
# site binds tasks (gpu_cpus.py). Off by default: it did not make launch-bound runs
# reproducible, and the model's host time per kernel comes from unbound runs
# (data/2026-11-26_h200x2_bound/README.md).
IFS=';' read -r -a gpu_cpus <<< "$( [ "${BIND:-0}" = 1 ] && python3 "$here/gpu_cpus.py" 6)"
echo "CPUs per GPU: ${gpu_cpus[*]:-not bound}"
on_gpu() {  # on_gpu GPU COMMAND...: COMMAND bound to GPU's CPUs
  local cpus=${gpu_cpus[$1]:-}; shift
  if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi
}
all_cpus=$(IFS=';'; echo "${gpu_cpus[*]:-}")  # torchrun: measure_pytorch.py binds each rank

stage() { [[ $STAGES == *,$1,* ]]; }
# 1. Probes: the workloads' GEMMs, bandwidth, the framework's launch cost, collectives
# on every GPU here.
if stage probes; then
"$carry/xdeep_validate" shapes --models "$MODELS" --micro-batches "$MBS" --out "$work/shapes.json" || exit 1
stamp "compute probes"
on_gpu 0 timeout 300 "$carry/xdeep-probe" compute --suite gpu --shapes "$work/shapes.json" --dtypes bf16 \
  --time-limit 280 --out "$work/compute.json"
echo "rc=$?"
# The framework's host time per kernel (launch-bound steps), with this node's PyTorch,
# in FRAMEWORK_REPEATS processes: the host's speed differs from one process to the
# next by up to 30 %, and the tuner takes the median of the reports' entries.
for ((rep = 1; rep <= ${FRAMEWORK_REPEATS:-3}; rep++)); do
  stamp "framework probe $rep"
  on_gpu 0 timeout 120 python3 "$framework_probe" --out "$work/framework_r$rep.json"
  echo "rc=$?"
done
# FSDP's per-unit collectives wait for the other ranks, and each rank's host issues its
# own kernels: its host cost timed on two ranks, as training runs it (the one-rank
# figure did not carry from one H100 machine to the next, data/2026-11-26_h100x2_heldout5).
if (( gpus >= 2 )); then
  stamp "framework probe, 2 ranks"
  timeout 120 python3 "$framework_probe" --ranks 2 --out "$work/framework_2ranks.json"
  echo "rc=$?"
fi
fi
# Collectives at 2, 4, 8 ranks, as many as this machine has GPUs (stage
# `collectives` alone: the reports land in $OUT, for a profile merged later).
reports=("$work/compute.json")
for f in "$work"/framework_*.json; do [ -e "$f" ] && reports+=("$f"); done
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
    on_gpu 0 timeout 120 "$carry/xdeep-probe" collectives --out "$work/coll_${ranks}gpu.json"
  echo "rank0 rc=$?"
  wait "${pids[@]}"  # (never a bare `wait`: it would wait for the log's tee too)
  reports+=("$work/coll_${ranks}gpu.json")
  stage probes || cp "$work/coll_${ranks}gpu.json" "$OUT/"
done
fi
if stage probes; then
"$carry/xdeep-probe" merge "${reports[@]}" --multi-rank-collectives --out "$OUT/profile.json" || exit 1
fi

# 2. Real training, one process per configuration (DDP's Reducer buckets of
# one configuration would otherwise move the next one's memory baseline).
# Single-GPU lanes run side by side, one per GPU; 2-GPU runs one at a time.
# Launch-bound configurations (micro-batch <= LAUNCH_BOUND_MB, FSDP's up to
# FSDP_LAUNCH_BOUND_MB: its hooks keep it host-bound longer, and ResNet-50) follow
# the host's speed, which switches between two levels ~1.5x apart every few
# seconds, whatever the core (data/2026-11-26_h100x1_host_check_pinned): their
# timed steps span LAUNCH_BOUND_SECONDS, which samples the levels as training
# does. REPEATS > 1 runs each of them again in a new process (xdeep_validate
# averages the repeats' medians).
REPEATS=${REPEATS:-1}
LAUNCH_BOUND_MB=${LAUNCH_BOUND_MB:-2}
FSDP_LAUNCH_BOUND_MB=${FSDP_LAUNCH_BOUND_MB:-4}
LAUNCH_BOUND_SECONDS=${LAUNCH_BOUND_SECONDS:-6}
one() {  # one MODE MODEL MB GPU PORT
  local mode=$1 model=$2 mb=$3 gpu=$4 port=$5 times=1 seconds=0
  local bound_mb=$LAUNCH_BOUND_MB
  [ "$mode" = fsdp ] && bound_mb=$FSDP_LAUNCH_BOUND_MB
  if (( mb <= bound_mb )) || [ "$model" = resnet50 ]; then
    times=$REPEATS seconds=$LAUNCH_BOUND_SECONDS
  fi
  for ((rep = 1; rep <= times; rep++)); do
    local args=("$measure" --mode "$mode" --models "$model" --micro-batches "$mb"
                --resnet-micro-batches "$mb" --steps "$STEPS" --warmup "$WARMUP" --kernels
                --min-seconds "$seconds" --out "$work/${mode}_${model}_mb${mb}_r${rep}.json")
    if [ "$mode" = single ]; then
      CUDA_VISIBLE_DEVICES=$gpu XDEEP_GPU_CPUS=${gpu_cpus[$gpu]:-} timeout -k 5 90 python3 "${args[@]}"
    else
      XDEEP_GPU_CPUS=$all_cpus timeout -k 5 120 torchrun --nproc_per_node="$NPROC" --master_port=$((port + 100 * rep)) "${args[@]}"
    fi 2>&1 | grep -v -e "^W1" -e Warning -e "warnings.warn" -e "_warn_once(" | sed "s/^/[t=$((SECONDS - T0))] /"
  done
}
# Single-GPU lanes, one per GPU: configurations dealt out in turn, so that
# the lanes take about as long (ResNet-50's are all launch-bound).
lane() {  # lane GPU LANES: this GPU's share of every model x micro-batch
  local gpu=$1 lanes=$2 k=0 model mb
  for model in "${models[@]}"; do
    for mb in ${MBS//,/ }; do
      (( k++ % lanes == gpu )) && one single "$model" "$mb" "$gpu" 0
    done
  done
}
IFS=, read -r -a models <<< "$MODELS"
if stage single; then
stamp "single GPU"
lanes=$(( gpus >= 2 ? 2 : 1 )) pids=()
for ((g = 1; g < lanes; g++)); do lane $g $lanes & pids+=($!); done
lane 0 $lanes
# (never a bare `wait`: it would wait for the log's tee too)
(( ${#pids[@]} == 0 )) || wait "${pids[@]}"
python3 "$here/../memory_validation/merge_fresh.py" "$OUT/single.json" \
  "run_device.sh: one process per configuration, one lane per GPU" "$work"/single_*.json
fi
if (( gpus >= 2 )); then
  port=29700
  for mode in ddp fsdp; do
    stage $mode || continue
    stamp "$mode, $NPROC GPUs"
    for model in "${models[@]}"; do
      for mb in ${MBS_2GPU//,/ }; do one "$mode" "$model" "$mb" 0,1 $((port++)); done
    done
    python3 "$here/../memory_validation/merge_fresh.py" "$OUT/$mode.json" \
      "run_device.sh: one torchrun ($NPROC GPUs) per configuration" "$work"/${mode}_*.json
  done
fi

# 3. Predictions against the measurements (this call's files, else PRIOR's).
if stage compare; then
  stamp "compare"
  pick() { if [ -e "$OUT/$1" ]; then echo "$OUT/$1"; elif [ -n "$PRIOR" ] && [ -e "$PRIOR/$1" ]; then echo "$PRIOR/$1"; fi; }
  runs=()
  for f in single.json ddp.json fsdp.json; do [ -n "$(pick $f)" ] && runs+=("$(pick $f)"); done
  if [ -z "$(pick profile.json)" ] || (( ${#runs[@]} == 0 )); then
    echo "compare: no profile.json or no training results here or in PRIOR (${PRIOR:-unset});" \
      "run the probes and training stages first"
  else
    "$carry/xdeep_validate" compare --profile "$(pick profile.json)" --runs "${runs[@]}" \
      --json "$OUT/validation.json"
  fi
fi
stamp "done"
