#!/usr/bin/env bash
# FSDP2's increment over the single-GPU step, two same-sized models side by side on one host
# (h22f, session 22).
#
# Over runs 1-14, FSDP2's measured increment over the same run's single-GPU step follows the
# model's (units x the probe's per-unit + tensors x its per-tensor host charge) family by family
# (`mode_increments.py build --set all --mode fsdp`, folders whose probe timed FSDP on two ranks):
# Llama-style 1.05x (17 pairs), other LayerNorm models (OPT, Pythia, BERT, RoBERTa, Phi-1.5,
# SantaCoder, StableLM-2) 1.03x (16), timm ViTs 0.93x (24), and transformers' GPT2LMHeadModel
# (GPT-2, Cerebras-GPT-256M / -590M) 1.25x (5 pairs, 4 above). The GPT2 family's 13 other pairs
# come from the three runs whose probe timed FSDP on one rank only (1.74x, h21t's finding), so
# the family signal is weak. This call measures two things on one host: how far FSDP's
# increment at micro-batch 1 moves between rounds (the DDP check of session 21 found 9-14 ms
# there against run 14's 29.6), and GPT-2 against OPT-125m, which have the same blocks (12 x
# 768, 124M parameters, LayerNorm, biased projections, tied head) where GPT-2 builds its
# projections from transformers' Conv1D (addmm on an [in, out] weight) and OPT from nn.Linear;
# the model charges OPT more (196 parameter tensors against 148). If GPT-2's increment is
# ~1.3x OPT's in every round, the GPT2 family has a term of its own (profile one FSDP step of
# each next); if the two are alike, it does not; if either moves by ~20 ms between rounds,
# the rows are the host of the moment.
#
#   OUT=dir [MODELS=hf-gpt2,hf-opt-125m] [ROUNDS=2] [MIN_SECONDS=3] bench/validate/fsdp_increment_check.sh
# Writes $OUT/single_<round>.json, $OUT/fsdp_<round>.json (library_suite.py's schema),
# $OUT/phases.txt (each call's UTC start and end) and prints the medians and increments.
# Needs 2 GPUs; ~3 minutes on 2x H200.
set -euo pipefail
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1  # as run_library.sh
here=$(cd "$(dirname "$0")" && pwd)
: "${OUT:?set OUT}"
MODELS=${MODELS:-hf-gpt2,hf-opt-125m}
ROUNDS=${ROUNDS:-2}
MIN_SECONDS=${MIN_SECONDS:-3}
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  echo "single $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  CUDA_VISIBLE_DEVICES=0 python3 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
    --mode single --models "$MODELS" --micro-batches 1,8 --out "$OUT/single_$r.json"
  echo "fsdp $r start $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
  torchrun --standalone --nproc_per_node=2 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
    --mode fsdp --models "$MODELS" --micro-batches 1,8 --out "$OUT/fsdp_$r.json"
  echo "round $r end $(date -u +%FT%TZ)" >> "$OUT/phases.txt"
done
python3 - "$OUT" "$ROUNDS" <<'EOF'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rows(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {(r["model"], r["micro_batch"]): r for r in json.load(f)["runs"] if "step_times_s" in r}
print("round model mb: single ms median (min-max) | fsdp ms median (min-max) | fsdp - single")
for k in range(1, rounds + 1):
    s, d = rows(f"{out}/single_{k}.json"), rows(f"{out}/fsdp_{k}.json")
    for key in sorted(s):
        if key not in d:
            continue
        a, b = s[key]["step_times_s"], d[key]["step_times_s"]
        ma, mb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
        print(f"{k} {key[0]:14} mb{key[1]:<2} {ma:6.1f} ({min(a) * 1e3:5.1f}-{max(a) * 1e3:5.1f}) |"
              f" {mb:6.1f} ({min(b) * 1e3:5.1f}-{max(b) * 1e3:5.1f}) | {mb - ma:+6.1f}")
EOF
