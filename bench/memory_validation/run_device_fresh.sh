#!/bin/bash
# DDP memory measured cleanly: one torchrun process pair per configuration
# (measure_pytorch.py's multi-configuration runs let DDP's Reducer buckets of
# one configuration leak into the next one's baseline). Then the same
# configurations single-GPU, one process each, for the DDP-minus-single
# difference. Lanes run side by side to fit the lease: max_memory_allocated
# is per process, so sharing a GPU leaves it exact, but step times from here
# are not clean (not used). Results: $OUT/ddp_fresh.json, $OUT/single_fresh.json.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
cd "$(dirname "$0")"
T0=$SECONDS
DDP_STOP=${DDP_STOP:-250}        # no DDP configuration starts after this (s)
SINGLE_STOP=${SINGLE_STOP:-330}  # nor a single-GPU one after this
TMP=$(mktemp -d)
LOG="$OUT/log.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi-fresh.txt"

merge() {  # $1 ddp|single
  local desc="one process per configuration (run_device_fresh.sh); lanes side by side, step times not clean"
  python3 merge_fresh.py "$OUT/${1}_fresh.json" "$desc" "$TMP"/"$1"_*.json
}

# lane MODE PORT GPU CONFIG... ; CONFIG = model:micro_batch:grad_accum
lane() {
  local mode=$1 port=$2 gpu=$3; shift 3
  local stop=$DDP_STOP limit=100
  [ "$mode" = single ] && stop=$SINGLE_STOP limit=60
  for cfg in "$@"; do
    IFS=: read -r m mb ga <<<"$cfg"
    local f="$TMP/${mode}_${m}_mb${mb}_ga${ga}.json"
    if (( SECONDS - T0 > stop )); then echo "[$mode] skip $cfg (lease time)"; continue; fi
    local args=(measure_pytorch.py --mode "$mode" --out "$f" --models "$m" --micro-batches "$mb"
                --resnet-micro-batches "$mb" --grad-accum "$ga" --budget-s 1000)
    if [ "$mode" = ddp ]; then
      timeout -k 5 $limit torchrun --nproc_per_node=2 --master_port="$port" "${args[@]}"
    else
      CUDA_VISIBLE_DEVICES=$gpu timeout -k 5 $limit python3 "${args[@]}"
    fi 2>&1 | grep -v -e "^W1" -e Warning -e "warnings.warn" | sed "s/^/[$mode $cfg t=$((SECONDS - T0))] /"
    merge "$mode"
  done
}

# Memory: the three mb16 GPT peaks together would not fit one H200, so the
# 760m lane takes its largest first and the 1.3b lane its largest last.
{
  lane ddp 29501 0,1 gpt-1.3b:1:1 gpt-1.3b:2:1 gpt-1.3b:4:1 gpt-1.3b:8:1 gpt-1.3b:16:1 \
       gpt-1.3b:1:4 gpt-1.3b:4:4 &
  lane ddp 29511 0,1 gpt-760m:16:1 gpt-760m:8:1 gpt-760m:4:1 gpt-760m:2:1 gpt-760m:1:1 \
       resnet50:1:1 resnet50:4:1 resnet50:16:1 resnet50:32:1 resnet50:64:1 &
  lane ddp 29521 0,1 gpt-125m:1:1 gpt-125m:2:1 gpt-125m:4:1 gpt-125m:8:1 gpt-125m:16:1 \
       gpt-350m:1:1 gpt-350m:2:1 gpt-350m:4:1 gpt-350m:8:1 gpt-350m:16:1 gpt-350m:1:4 gpt-350m:4:4 &
  wait
  echo "DDP done at t=$((SECONDS - T0)) s"
  lane single 0 0 gpt-1.3b:1:1 gpt-1.3b:2:1 gpt-1.3b:4:1 gpt-1.3b:8:1 gpt-1.3b:16:1 \
       gpt-1.3b:1:4 gpt-1.3b:4:4 resnet50:1:1 resnet50:4:1 resnet50:16:1 resnet50:32:1 resnet50:64:1 &
  lane single 0 1 gpt-760m:1:1 gpt-760m:2:1 gpt-760m:4:1 gpt-760m:8:1 gpt-760m:16:1 \
       gpt-125m:1:1 gpt-125m:2:1 gpt-125m:4:1 gpt-350m:1:1 gpt-350m:4:1 gpt-350m:16:1 \
       gpt-350m:1:4 gpt-350m:4:4 gpt-125m:8:1 gpt-125m:16:1 gpt-350m:2:1 gpt-350m:8:1 &
  wait
  echo "all done at t=$((SECONDS - T0)) s"
} 2>&1 | tee "$LOG"
python3 summarize_fresh.py "$OUT/ddp_fresh.json" "$OUT/single_fresh.json" | tee -a "$LOG"
