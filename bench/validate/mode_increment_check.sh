#!/usr/bin/env bash
# A two-GPU mode's increment over the single-GPU step, repeated on one host: single and the mode
# alternated ROUNDS times, each configuration timed for MIN_SECONDS, so that the increment's own
# spread between calls is seen beside any term of the model (`mode_increments.py` reads the same
# increment across the committed runs).
#
# Two questions it has answered (check data in data/checks/):
# * MODE=ddp (h21x, session 21; 2026-11-28_h200x2_ddp_increment): run 14 measured
#   Cerebras-GPT-256M's DDP step at micro-batch 1 29.6 ms above its single-GPU step where the model
#   adds 9.3 ms, while the 53 DDP / single pairs of runs 1-14 average a -0.1 ms residual. An
#   increment that spreads by ~20 ms between rounds is the host of the moment; one that repeats at
#   ~30 ms is a term.
# * MODE=fsdp (h22f, session 22; 2026-11-28_h200x2_fsdp_increment): transformers' GPT2LMHeadModel
#   family added 1.25x the model's FSDP2 increment over the two-rank-probe runs. GPT-2 and OPT-125m
#   have the same blocks (12 x 768, LayerNorm, biased projections, tied head; Conv1D against
#   nn.Linear): if GPT-2's increment is ~1.3x OPT's in every round, the family has a term of its
#   own; if the two are alike, it does not.
#
#   OUT=dir MODE=ddp|fsdp|tp|pp [MODELS=...] [ROUNDS=2] [MIN_SECONDS=3] bench/validate/mode_increment_check.sh
# MODELS defaults to hf-cerebras-gpt-256m for ddp and hf-gpt2,hf-opt-125m otherwise. Writes
# $OUT/single_<round>.json, $OUT/<mode>_<round>.json (library_suite.py's schema), $OUT/phases.txt
# (each call's UTC start and end) and prints each round's medians and increments. Needs 2 GPUs;
# ~2-4 minutes on 2x H200.
set -euo pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1  # as run_library.sh
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT}"
: "${MODE:?set MODE (ddp, fsdp, tp or pp)}"
case "$MODE" in
  ddp) default_models=hf-cerebras-gpt-256m ;;
  fsdp|tp|pp) default_models=hf-gpt2,hf-opt-125m ;;
  *) echo "MODE=$MODE: use ddp, fsdp, tp or pp" >&2; exit 2 ;;
esac
MODELS=${MODELS:-$default_models}
ROUNDS=${ROUNDS:-2}
MIN_SECONDS=${MIN_SECONDS:-3}
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  echo "single $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  CUDA_VISIBLE_DEVICES=0 python3 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
    --mode single --models "$MODELS" --micro-batches 1,8 --out "$OUT/single_$r.json"
  echo "$MODE $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  torchrun --standalone --nproc_per_node=2 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
    --mode "$MODE" --models "$MODELS" --micro-batches 1,8 --out "$OUT/${MODE}_$r.json"
  echo "round $r end $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
done
python3 "$here/round_pairs.py" "$OUT" "$ROUNDS" single "$MODE"
