#!/bin/bash
# Per-architecture host cost of host-bound steps on one GPU, in the same rounds (h24h, session 24;
# issue 19 item 6). Each round: the framework probe's tiny GPT / Llama passes, then micro-batch-1
# steps of a GPTNeoX at two depths (partial rotary: Pythia-70M, Pythia-410M), a Llama-style
# decoder (AMD-Llama-135m, the count calibration holds), a GPT-2-class decoder (Cerebras-GPT-111M)
# and a GPTBigCode (TinyStarCoderPy, multi-query), all as library_suite.py builds and times them
# (host_drift_check.py): their ratios within a round cancel the host of the moment, so they test
# the model's kernel count per architecture against one another (compare with
# `xdeep_validate compare` at one profile). Then torch.profiler at micro-batch 1 for Pythia-410M
# (kernels by kind, the partial rotary's slices at a second depth). ~170 s on 1x H200.
#   OUT=DIR bench/validate/host_arch_check.sh
set -u
: "${OUT:?OUT=DIR}"
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
mkdir -p "$OUT/rounds" "$OUT/prof"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpus.txt" 2>&1
date -u +%FT%TZ > "$OUT/start.txt"
OUT=$OUT/rounds MODELS=hf-pythia-70m,hf-amd-llama-135m,hf-tiny-starcoder-py,hf-cerebras-gpt-111m,hf-pythia-410m \
  ROUNDS=5 BESIDE_ROUNDS=0 AFTER_ROUNDS=0 TRAIN_SECONDS=2.0 DEADLINE_S=125 \
  timeout 140 python3 "$HERE/host_drift_check.py" > "$OUT/rounds/log.txt" 2>&1
rc1=$?
OUT=$OUT/prof CONFIGS=hf-pythia-410m:1 DEADLINE_S=20 \
  timeout 35 python3 "$HERE/transformer_kernel_profile.py" > "$OUT/prof/log.txt" 2>&1
rc2=$?
echo "rounds rc $rc1, profile rc $rc2" | tee "$OUT/rc.txt"
tail -30 "$OUT/rounds/log.txt"; tail -3 "$OUT/prof/log.txt"
