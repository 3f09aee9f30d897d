#!/bin/bash
# Runs measure_pytorch.py single-GPU, DDP and FSDP on a 2-GPU machine; results
# land in $OUT (or ./out). NVLink multicast stays off (shared hosts).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
cd "$(dirname "$0")"
BUDGET=${BUDGET:-110}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"
python3 measure_pytorch.py --mode single --out "$OUT/single.json" --budget-s "$BUDGET" 2>&1 | tail -40
torchrun --nproc_per_node=2 measure_pytorch.py --mode ddp --out "$OUT/ddp.json" --budget-s "$BUDGET" 2>&1 | tail -40
torchrun --nproc_per_node=2 measure_pytorch.py --mode fsdp --out "$OUT/fsdp.json" --budget-s "$BUDGET" 2>&1 | tail -40
