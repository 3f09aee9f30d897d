#!/usr/bin/env bash
# The framework probe's Llama-style block against training's TP steps on the same host (h22t, session 22).
#
# Branch h22t-tried's tuner (ac957ae; not kept) charges each Llama-style block (gated_mlp) under
# DTensor TP the framework probe's Llama-style block's one-rank dispatch, (llama_tp_median_s -
# llama_median_s) / layers, plus 7 meetings of the ranks at the GPT's cost per meeting. The
# probe's first GPU run (data/checks/2026-11-28_h200x2_framework_probe_llama) lost its TP rows;
# copied into run 14's profile it moved OpenCoder-1.5B TP from -25 to -17 % (a check:
# another host). This call puts probe and training on one host, minutes apart: the framework
# probe on two ranks and on one (as run_library.sh runs it), then single-GPU and TP=2 steps of
# transformers Llama-style models at micro-batch 1 and 8, then the two-rank probe again. Read:
#   python3 bench/validate/tp_llama_whatif.py BUILD_OF_h22t-tried --folders $OUT --llama $OUT \
#     --compute-from bench/validate/data/calibration/2026-11-28_h200x2_library_run14
# (TP rows with and without the Llama fields; GEMM and collective figures from run 14's H200).
# Ran once, 2026-11-28 08:20-08:25 UTC: data/checks/2026-11-28_h200x2_tp_llama_check/.
#
#   OUT=dir [MODELS=hf-opencoder-1.5b,hf-llama32-1b] [MIN_SECONDS=3] bench/validate/tp_llama_check.sh
# Writes $OUT/framework.json (one rank), framework_2ranks.json and framework_2ranks_after.json,
# suite_single.json, suite_tp.json, phases.txt. Needs 2 GPUs; ~5 minutes on 2x H200.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1  # as run_library.sh
here=$(cd "$(dirname "$0")" && pwd)
probe="$here/../../profiler/framework_probe.py"
: "${OUT:?set OUT}"
MODELS=${MODELS:-hf-opencoder-1.5b,hf-llama32-1b}
MIN_SECONDS=${MIN_SECONDS:-3}
mkdir -p "$OUT"
phase() { echo "$1 $(date -u +%FT%TZ)" >> "$OUT/phases.txt"; }
phase "probe 2 ranks"
timeout 100 python3 "$probe" --ranks 2 --out "$OUT/framework_2ranks.json"
phase "probe 1 rank"
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 "$probe" --out "$OUT/framework.json"
phase "single"
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
  --mode single --models "$MODELS" --micro-batches 1,8 --out "$OUT/suite_single.json"
phase "tp"
timeout 180 torchrun --standalone --nproc_per_node=2 "$here/library_suite.py" --steps 3 --min-seconds "$MIN_SECONDS" \
  --mode tp --models "$MODELS" --micro-batches 1,8 --out "$OUT/suite_tp.json"
phase "probe 2 ranks again"
timeout 100 python3 "$probe" --ranks 2 --out "$OUT/framework_2ranks_after.json"
phase "end"
