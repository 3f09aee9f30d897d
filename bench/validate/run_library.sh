#!/usr/bin/env bash
# Issue 19 on a machine with two NVIDIA GPUs, in one device call: the GEMM check
# (xdeep-probe at the fit shapes, torch.matmul at the check shapes) and the library
# suite (library_suite.py: transformers and torchvision models, single GPU, DDP,
# FSDP2, TP=2, PP=2), with xdeep's probes as the daemon runs them for those
# workloads (compute at their GEMM shapes, the framework probe, collectives).
#
#   XDEEP_CARRY=build/carry OUT=/tmp/out STAGES=gemm,probes,suite bash bench/validate/run_library.sh
#
# Writes to $OUT: log.txt and results.tgz holding gemm_fit.json (probe report of the
# fit shapes), gemm_check.json (cuBLAS times of CHECK_SHAPES), compute.json,
# framework*.json, coll_2gpu.json (the suite's probes) and profile.json (them merged,
# as the daemon keeps them), settings_effects.json (where SETTINGS_EFFECTS names the
# script), suite_<mode>.json, lane1.log, and the frozen model's predictions made there
# (compare.txt, gemm_check.txt; stage `predict`). Every step has a timeout, none runs
# past DEADLINE_S seconds from the start, and results.tgz is rewritten after every
# stage, so a configuration or stage that fails or hangs loses only itself.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
OUT=${OUT:-/tmp/xdeep-library}
carry=${XDEEP_CARRY:-build/carry}
STAGES=,${STAGES:-gemm,probes,suite,predict},
MODES=,${MODES:-single,ddp,fsdp,tp,pp},
LM=${LM:-hf-gpt2,hf-gpt2-medium,hf-gpt2-large,hf-gpt2-xl,hf-llama-1b}
VISION=${VISION:-tv-resnet50,tv-vit-b16}
MBS=${MBS:-1,2,4,8,16,32}
# The micro-batches whose GEMM shapes the compute probe times (default: MBS): a plan may time
# fewer than it trains, so that the GEMM model predicts the others (and the probe's time stays).
PROBE_MBS=${PROBE_MBS:-$MBS}
VMBS=${VMBS:-1,8,32,128,256}
MBS_2GPU=${MBS_2GPU:-1,4,16}
STEPS=${STEPS:-5}
T_GEMM=${T_GEMM:-280}     # seconds for the GEMM fit, and for the check
T_COMPUTE=${T_COMPUTE:-190}  # seconds for the compute probe at the suite's shapes
SETTINGS_EFFECTS=${SETTINGS_EFFECTS:-}  # settings_effects.py to run too (GPU 1)
T_SINGLE=${T_SINGLE:-280}  # seconds per single-GPU lane
T_2GPU=${T_2GPU:-150}      # seconds per two-GPU mode (T_FSDP, T_TP, T_PP: that mode's own)
RANKS2=${RANKS2:-1}        # the framework probe on two ranks too
# HEURISTIC=1: after the compute probe, cuBLASLt's heuristic asked about every GEMM the
# search may look up (the suite's workloads and the presets', 2 GPUs a node), merged into
# compute.json, as the daemon's probe job does (docs/probe_report.md, gemm_algos). Off by
# default: it moves the GEMM times of every shape answered, so a run planned without it
# (held-out run 10) keeps its frozen model.
HEURISTIC=${HEURISTIC:-0}
DEADLINE_S=${DEADLINE_S:-100000}  # no step starts or runs past this many seconds
MODELS_DDP=${MODELS_DDP:-${MODELS_2GPU:-$LM,$VISION}}
MODELS_FSDP=${MODELS_FSDP:-${MODELS_2GPU:-$LM,$VISION}}
MODELS_TP=${MODELS_TP:-hf-llama-1b}
MODELS_PP=${MODELS_PP:-hf-gpt2-medium,hf-llama-1b}
here=$(cd "$(dirname "$0")" && pwd)
MIN_SECONDS=${MIN_SECONDS:-0}  # each configuration timed for at least this long (library_suite.py)
suite="python3 $here/library_suite.py --steps $STEPS --min-seconds $MIN_SECONDS"
source "$here/device_env.sh"  # library path, log.txt, stamp
# The device returns at most 8 files: everything but the log travels as one archive,
# packed again after each stage (a call cut off at its limit keeps what was done).
res=$(mktemp -d)
scratch=$(mktemp -d)  # the run's own working files: two runs on one machine do not share them
pack() {
  relative_paths_in "$res"
  tar -C "$res" -czf "$OUT/results.tgz.part" . && mv "$OUT/results.tgz.part" "$OUT/results.tgz"
}
trap 'pack; rm -rf "$res" "$scratch"' EXIT
# A step's timeout: its own, or what is left before DEADLINE_S (0: skip it).
box() {
  local left=$((DEADLINE_S - (SECONDS - T0)))
  if [ "$left" -lt 5 ]; then echo 0; elif [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
# `run T cmd...`: cmd under timeout T (boxed), or a note that the deadline skipped it.
run() {
  local t
  t=$(box "$1")
  shift
  if [ "$t" -eq 0 ]; then echo "skipped (deadline ${DEADLINE_S} s): $*"; return 124; fi
  timeout "$t" "$@"
}
stage() { [[ $STAGES == *,$1,* ]]; }
mode() { [[ $MODES == *,$1,* ]]; }

stamp "$(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 -c 'import torch, transformers, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "cublas", torch.backends.cuda.preferred_blas_library(), "transformers", transformers.__version__, "torchvision", torchvision.__version__)'
"$carry/xdeep-probe" --help > /dev/null || { echo "xdeep-probe does not start"; ldd "$carry/xdeep-probe"; exit 1; }
# On a one-GPU machine a plan runs its single-GPU part only: the lanes one after the other on
# GPU 0, no two-rank probe or collectives, no two-GPU mode (each says it was skipped).
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$GPUS" -ge 2 ] || { RANKS2=0; echo "one GPU: the single-GPU part of the plan only"; }

# 1. The GEMM check and the compute probe, in two GPU lanes side by side (each process
# on its own GPU: neither slows the other's kernels). GPU 0: xdeep-probe compute at the
# workloads' GEMM shapes, then the GEMM check (torch.matmul at the check shapes). GPU 1:
# xdeep-probe at the GEMM model's fit shapes, then settings_effects.py.
# 2. The framework probe (host time per kernel) alone on the machine, on one rank and on
# two, as the daemon runs it on an idle node: beside another lane's probe it read the
# host 20-45 % slower than training then ran (38.7 and 41.6 us per kernel against 26.5 and
# 32.1 alone; bench/validate/data/calibration/2026-11-2{6,7}_h100x2_library_heldout*). Then the
# collectives, and every report merged into the profile.
CHECK_SHAPES=${CHECK_SHAPES:-$here/gemm_check_shapes.json}
lane0() {
  if stage probes; then
    stamp "GPU 0: compute probe at the suite's shapes"
    heuristic=()
    [ "$HEURISTIC" = 1 ] && heuristic=(--heuristic-out $scratch/suite_heuristic.json --gpus-per-node 2)
    if "$carry/xdeep_validate" shapes --workloads "$here/workloads" --models "$LM,$VISION" \
      --micro-batches "$PROBE_MBS" --out $scratch/suite_shapes.json "${heuristic[@]}"; then
      CUDA_VISIBLE_DEVICES=0 run $((T_COMPUTE + 10)) "$carry/xdeep-probe" compute --suite gpu \
        --shapes $scratch/suite_shapes.json --time-limit $T_COMPUTE --out "$res/compute.json"
      echo "compute rc=$?"
      if [ "$HEURISTIC" = 1 ] && [ -s "$res/compute.json" ]; then
        stamp "GPU 0: cuBLASLt's heuristic at the GEMMs the search may look up (nothing timed)"
        cp "$res/compute.json" "$res/compute_timed.json"  # the same probe without its answers
        CUDA_VISIBLE_DEVICES=0 run 70 "$carry/xdeep-probe" compute --suite gemm-heuristic --no-anchors \
          --shapes $scratch/suite_heuristic.json --time-limit 60 --out $scratch/suite_heuristic_report.json &&
          "$carry/xdeep-probe" merge "$res/compute.json" $scratch/suite_heuristic_report.json \
            --out "$res/compute.json"
        echo "heuristic rc=$?"
      fi
    fi
  fi
  if stage gemm; then
    stamp "GPU 0: GEMM check (torch.matmul) at $(basename "$CHECK_SHAPES")"
    t=$(box ${T_CHECK:-$T_GEMM})
    CUDA_VISIBLE_DEVICES=0 run $t python3 "$here/gemm_shapes.py" time \
      --shapes "$CHECK_SHAPES" --deadline-s $((t > 20 ? t - 15 : 5)) --out "$res/gemm_check.json"
    echo "check rc=$?"
  fi
}
lane1() {
  if stage gemm; then
    stamp "GPU 1: GEMM fit (xdeep-probe)"
    python3 "$here/gemm_shapes.py" fitset --exclude "$CHECK_SHAPES" --out $scratch/fit_shapes.json
    CUDA_VISIBLE_DEVICES=1 run $((T_GEMM + 10)) "$carry/xdeep-probe" compute --suite gpu \
      --shapes $scratch/fit_shapes.json --dtypes bf16,fp16,tf32 --time-limit $T_GEMM --out "$res/gemm_fit.json"
    echo "fit rc=$?"
  fi
  # The measurement of the training settings' effects (a script; empty: none).
  if [ -n "$SETTINGS_EFFECTS" ]; then
    stamp "GPU 1: $(basename "$SETTINGS_EFFECTS")"
    CUDA_VISIBLE_DEVICES=1 run 75 python3 "$SETTINGS_EFFECTS" --deadline-s 62 \
      > "$res/settings_effects.json" 2> "$res/settings_effects.log"
    echo "settings_effects rc=$?"
  fi
}
if stage gemm || stage probes; then
  lane1 > "$res/lane1.log" 2>&1 &
  lane1_pid=$!
  lane0
  wait $lane1_pid
  cat "$res/lane1.log"
  pack
fi
if stage probes; then
  stamp "framework probe, 1 rank, alone"
  CUDA_VISIBLE_DEVICES=0 run ${T_FRAMEWORK:-100} python3 "$here/../../profiler/framework_probe.py" --library-decoders --out "$res/framework.json"
  echo "framework rc=$?"
  if [ "$RANKS2" = 1 ]; then
    stamp "framework probe, 2 ranks"
    run ${T_RANKS2:-100} python3 "$here/../../profiler/framework_probe.py" --ranks 2 --out "$res/framework_2ranks.json"
    echo "framework 2 ranks rc=$?"
  fi
  stamp "collectives"
  t=$(box 100)
  [ "$GPUS" -ge 2 ] || t=0
  if [ "$t" -gt 0 ]; then
    RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29602 \
      timeout "$t" "$carry/xdeep-probe" collectives --out $scratch/unused.json > $scratch/rank1.txt 2>&1 &
    RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29602 \
      timeout "$t" "$carry/xdeep-probe" collectives --out "$res/coll_2gpu.json"
    wait $!
  fi
  # The hardware profile as the daemon keeps it: every report of the node merged.
  reports=()
  for f in compute framework framework_2ranks coll_2gpu; do
    [ -s "$res/$f.json" ] && reports+=("$res/$f.json")
  done
  "$carry/xdeep-probe" merge "${reports[@]}" --out "$res/profile.json"
  echo "merge rc=$?"
  pack
fi

# 3. The suite: single-GPU lanes side by side (transformers on GPU 0, vision on GPU 1),
# then each two-GPU mode, each in its own time box (a hung or failed mode loses itself).
# Side by side, the lanes share a lock (library_suite.py --lane-lock, bench/validate/lane_lock.py):
# a lane's host work (its start, each model's build and copy to the GPU) and the other lane's timed
# steps exclude each other, so no step is timed beside a build (h23h: a build beside host-bound
# steps slowed them 1.15-1.30x, data/checks/2026-11-28_h200x1_host_drift). Each lane's file says
# how long it waited (meta lane_wait_s); LANE_LOCK=0 runs the lanes without it, as before.
if stage suite; then
  if mode single; then
    stamp "single GPU"
    t=$(box $T_SINGLE)
    lock=()
    [ "$GPUS" -ge 2 ] && [ "${LANE_LOCK:-1}" = 1 ] && lock=(--lane-lock "$scratch/lanes.lock")
    CUDA_VISIBLE_DEVICES=0 run $t $suite --mode single --models "$LM" --micro-batches "$MBS" --model-seconds $((t / 6)) \
      --deadline-s $t --out "$res/suite_single_lm.json" "${lock[@]}" &
    lane=$!
    vision_gpu=1
    if [ "$GPUS" -lt 2 ]; then wait $lane; vision_gpu=0; t=$(box $T_SINGLE); fi
    # The second lane is VISION's: a plan may put a language model there too, to balance the lanes
    # (it is then swept over MBS, as in the first lane).
    CUDA_VISIBLE_DEVICES=$vision_gpu run $t $suite --mode single --models "$VISION" --micro-batches "$MBS" \
      --vision-micro-batches "$VMBS" --model-seconds $((t / 3)) --deadline-s $t --out "$res/suite_single_vision.json" \
      "${lock[@]}"
    wait $lane
    pack
  fi
  for m in ddp fsdp tp pp; do
    mode $m || continue
    [ "$GPUS" -ge 2 ] || { echo "$m skipped: one GPU"; continue; }
    case $m in
      ddp) models=$MODELS_DDP t=$T_2GPU ;;
      fsdp) models=$MODELS_FSDP t=${T_FSDP:-$T_2GPU} ;;
      tp) models=$MODELS_TP t=${T_TP:-$T_2GPU} ;;
      pp) models=$MODELS_PP t=${T_PP:-$T_2GPU} ;;
    esac
    t=$(box "$t")
    # Each model gets an equal share of the box less ~10 s of torchrun's start-up (run 8's
    # t / (n + 1) left TP's one model 25 of 50 s: building Qwen2.5-1.5B and micro-batch 1
    # spent them, so micro-batch 8 was skipped with 8 s of the box unused); the suite writes
    # its file after every configuration and starts none within 15 s of the box's end, so
    # a box that is too short loses only what it did not reach.
    n=$(tr ',' '\n' <<< "$models" | grep -c .)
    stamp "$m on 2 GPUs: $models"
    run "$t" torchrun --standalone --nproc_per_node=2 "$here/library_suite.py" --steps "$STEPS" --min-seconds "$MIN_SECONDS" \
      --mode $m --models "$models" --micro-batches "$MBS_2GPU" --vision-micro-batches "${VMBS_2GPU:-$MBS_2GPU,64}" \
      --model-seconds $(((t - 10) / n)) --deadline-s $((t - 3)) --out "$res/suite_$m.json" 2>&1 | grep -v "^W1\|warn" | tail -40
    pack
  done
fi

# 4. The frozen model's predictions, made here from this machine's probes (CPU only).
if stage predict; then
  stamp "predictions"
  if [ -s "$res/profile.json" ] && ls "$res"/suite_*.json > /dev/null 2>&1; then
    run 60 "$carry/xdeep_validate" compare --workloads "$here/workloads" --profile "$res/profile.json" \
      --runs "$res"/suite_*.json --step-time-target 0.10 > "$res/compare.txt" 2>&1
    echo "compare rc=$?"
  fi
  if [ -s "$res/gemm_fit.json" ] && [ -s "$res/gemm_check.json" ]; then
    run 60 "$carry/xdeep_validate" gemm-check --fit "$res/gemm_fit.json" --check "$res/gemm_check.json" \
      --worst 20 > "$res/gemm_check.txt" 2>&1
    echo "gemm-check rc=$?"
  fi
  tail -25 "$res/compare.txt" 2>/dev/null
  head -9 "$res/gemm_check.txt" 2>/dev/null
fi
stamp "done"
