#!/usr/bin/env bash
# DDP's increment over the single-GPU step at micro-batch 1, repeated on one host (h21x, session 21).
#
# Run 14 (2x H200) measured Cerebras-GPT-256M's DDP step at micro-batch 1 29.6 ms above its
# single-GPU step where the model adds 9.3 ms (at micro-batch 8: 7.2 against 5.5). Over the 53
# DDP / single pairs at micro-batch 1 of runs 1-14 the increment's residual averages -0.1 ms
# (mean |residual| 7.6 ms, `mode_increments.py`), so one row does not show a term. This call
# tells the increment's own spread between calls on one host: single and DDP alternated,
# ROUNDS times, each configuration timed for MIN_SECONDS. If the DDP - single increment at
# micro-batch 1 spreads by ~20 ms between rounds, run 14's miss is the host of the moment;
# if it repeats at ~30 ms, it is a term (then profile one DDP step on both ranks).
#
#   OUT=dir [MODEL=hf-cerebras-gpt-256m] [ROUNDS=3] [MIN_SECONDS=3] bench/validate/ddp_increment_check.sh
# Writes $OUT/single_<round>.json, $OUT/ddp_<round>.json (library_suite.py's schema) and
# $OUT/phases.txt (each call's UTC start and end). Needs 2 GPUs; ~4 minutes on 2x H200.
set -euo pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1  # as run_library.sh
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT}"
MODEL=${MODEL:-hf-cerebras-gpt-256m}
ROUNDS=${ROUNDS:-3}
MIN_SECONDS=${MIN_SECONDS:-3}
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  echo "single $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  CUDA_VISIBLE_DEVICES=0 python3 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
    --mode single --models "$MODEL" --micro-batches 1,8 --out "$OUT/single_$r.json"
  echo "ddp $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  torchrun --standalone --nproc_per_node=2 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
    --mode ddp --models "$MODEL" --micro-batches 1,8 --out "$OUT/ddp_$r.json"
  echo "round $r end $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
done
