#!/bin/bash
# Second measurement run: activation recomputation, gradient accumulation
# (single GPU and DDP), FSDP with recomputation, ResNet-50 under FSDP.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
cd "$(dirname "$0")"
B=${BUDGET:-70}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi-extra.txt"
python3 measure_pytorch.py --mode single --out "$OUT/single_rc.json" --budget-s $B \
  --models gpt-350m,gpt-1.3b --micro-batches 1,4,16 --recompute 2>&1 | grep -v Warning | tail -20
python3 measure_pytorch.py --mode single --out "$OUT/single_ga.json" --budget-s $B \
  --models gpt-350m,gpt-1.3b --micro-batches 1,4 --grad-accum 4 2>&1 | tail -20
torchrun --nproc_per_node=2 measure_pytorch.py --mode ddp --out "$OUT/ddp_ga.json" --budget-s $B \
  --models gpt-350m,gpt-1.3b --micro-batches 1,4 --grad-accum 4 2>&1 | grep -v "^W1" | tail -20
torchrun --nproc_per_node=2 measure_pytorch.py --mode fsdp --out "$OUT/fsdp_rc.json" --budget-s $B \
  --models resnet50,gpt-1.3b --micro-batches 4,16 --resnet-micro-batches 4,16,64 --recompute 2>&1 | grep -v "^W1" | tail -20
