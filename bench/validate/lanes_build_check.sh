#!/usr/bin/env bash
# A host-bound single-GPU step alone and beside another process building a large model (h22x,
# session 22).
#
# Held-out run 15 (2x H200) measured AMD-Llama-135m's single-GPU steps at micro-batch 1-8 1.43x
# the host time the model counts (-29.7 / -30.0 % at mb1 / mb4) while, on the other GPU,
# run_library.sh's LM lane built Qwen1.5-1.8B (from its config on the CPU, then .to(cuda)).
# `data/checks/2026-11-26_h100x2_lanes_check` found two launch-bound training processes side by
# side do not slow each other; it never timed a row beside a model's build. Run 15 alone cannot
# tell the neighbour from the host (Cerebras-GPT-111M beside a light neighbour read 1.40x;
# bench/validate/README.md, "h22x, session 22"). This call alternates, ROUNDS times, MODEL's
# single-GPU rows on GPU 0 alone and beside a process on GPU 1 that builds BUILD over and over
# (library_suite.py's own build()). If the rows beside the builder are slower in every round by
# more than the rounds' own spread, run_library.sh should build a lane's models before the other
# lane times anything (a change of the plan, not of the model); if not, the factor was the host.
#
#   OUT=dir [MODEL=hf-amd-llama-135m] [BUILD=hf-qwen1.5-1.8b] [ROUNDS=2] [MIN_SECONDS=3] \
#     bench/validate/lanes_build_check.sh
# Writes $OUT/alone_<round>.json, $OUT/beside_<round>.json (library_suite.py's schema),
# $OUT/builder_<round>.log (each build's time), $OUT/phases.txt (each phase's UTC start and end)
# and prints the medians. Needs 2 GPUs; ~3 minutes on 2x H200 with the defaults.
set -euo pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1  # as run_library.sh
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT}"
MODEL=${MODEL:-hf-amd-llama-135m}
BUILD=${BUILD:-hf-qwen1.5-1.8b}
ROUNDS=${ROUNDS:-2}
MIN_SECONDS=${MIN_SECONDS:-3}
mkdir -p "$OUT"
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT  # no builder outlives the script

timed() {  # MODEL's rows on GPU 0, as run_library.sh's single-GPU lane times them
  CUDA_VISIBLE_DEVICES=0 python3 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
    --mode single --models "$MODEL" --micro-batches 1,4,8 --out "$1"
}

builder() {  # BUILD built on GPU 1 again and again until killed: the neighbour lane's build
  # exec: the background job's pid is python's, so the kill below ends the builder itself.
  exec env CUDA_VISIBLE_DEVICES=1 python3 "$here/build_loop.py" "$BUILD"
}

for r in $(seq 1 "$ROUNDS"); do
  echo "alone $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  timed "$OUT/alone_$r.json"
  echo "beside $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  builder > "$OUT/builder_$r.log" 2>&1 &
  pid=$!
  sleep 8  # the builder's imports: its first build is under way before the timed process's
  timed "$OUT/beside_$r.json"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
  echo "round $r end $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
done

python3 "$here/round_pairs.py" "$OUT" "$ROUNDS" alone beside
