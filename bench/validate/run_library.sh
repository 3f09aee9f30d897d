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
# script), suite_<mode>.json, lane1.log. Every step has a timeout.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
OUT=${OUT:-/tmp/xdeep-library}
carry=${XDEEP_CARRY:-build/carry}
STAGES=,${STAGES:-gemm,probes,suite},
MODES=,${MODES:-single,ddp,fsdp,tp,pp},
LM=${LM:-hf-gpt2,hf-gpt2-medium,hf-gpt2-large,hf-gpt2-xl,hf-llama-1b}
VISION=${VISION:-tv-resnet50,tv-vit-b16}
MBS=${MBS:-1,2,4,8,16,32}
VMBS=${VMBS:-1,8,32,128,256}
MBS_2GPU=${MBS_2GPU:-1,4,16}
STEPS=${STEPS:-5}
T_GEMM=${T_GEMM:-280}     # seconds for the GEMM fit, and for the check
T_COMPUTE=${T_COMPUTE:-190}  # seconds for the compute probe at the suite's shapes
SETTINGS_EFFECTS=${SETTINGS_EFFECTS:-}  # settings_effects.py to run too (GPU 1)
T_SINGLE=${T_SINGLE:-280}  # seconds per single-GPU lane
T_2GPU=${T_2GPU:-150}      # seconds per two-GPU mode
RANKS2=${RANKS2:-1}        # the framework probe on two ranks too
here=$(cd "$(dirname "$0")" && pwd)
suite="python3 $here/library_suite.py --steps $STEPS"
mkdir -p "$OUT"
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib
exec > >(tee "$OUT/log.txt") 2>&1
# The device returns at most 8 files: everything but the log travels as one archive.
res=$(mktemp -d)
trap 'tar -C "$res" -czf "$OUT/results.tgz" .; rm -rf "$res"' EXIT
T0=$SECONDS
stamp() { echo "[t=$((SECONDS - T0)) s] $*"; }
stage() { [[ $STAGES == *,$1,* ]]; }
mode() { [[ $MODES == *,$1,* ]]; }

stamp "$(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 -c 'import torch, transformers, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "cublas", torch.backends.cuda.preferred_blas_library(), "transformers", transformers.__version__, "torchvision", torchvision.__version__)'
"$carry/xdeep-probe" --help > /dev/null || { echo "xdeep-probe does not start"; ldd "$carry/xdeep-probe"; exit 1; }

# 1-2. The GEMM check and the suite's probes, in two GPU lanes side by side (each
# process on its own GPU: neither slows the other's kernels; the host has cores for both).
# GPU 0: xdeep-probe compute at the workloads' GEMM shapes, the framework probe (one
# rank), the GEMM check (torch.matmul at the check shapes). GPU 1: xdeep-probe at the
# GEMM model's fit shapes, then settings_effects.py. Then the collectives on both GPUs.
CHECK_SHAPES=${CHECK_SHAPES:-$here/gemm_check_shapes.json}
lane0() {
  if stage probes; then
    stamp "GPU 0: compute probe at the suite's shapes"
    if "$carry/xdeep_validate" shapes --workloads "$here/workloads" --models "$LM,$VISION" \
      --micro-batches "$MBS" --out /tmp/suite_shapes.json; then
      CUDA_VISIBLE_DEVICES=0 timeout $((T_COMPUTE + 10)) "$carry/xdeep-probe" compute --suite gpu \
        --shapes /tmp/suite_shapes.json --time-limit $T_COMPUTE --out "$res/compute.json"
      echo "compute rc=$?"
    fi
    stamp "GPU 0: framework probe"
    CUDA_VISIBLE_DEVICES=0 timeout 100 python3 "$here/../../profiler/framework_probe.py" --out "$res/framework.json"
    echo "framework rc=$?"
  fi
  if stage gemm; then
    stamp "GPU 0: GEMM check (torch.matmul) at $(basename "$CHECK_SHAPES")"
    CUDA_VISIBLE_DEVICES=0 timeout $T_GEMM python3 "$here/gemm_shapes.py" time \
      --shapes "$CHECK_SHAPES" --out "$res/gemm_check.json"
    echo "check rc=$?"
  fi
}
lane1() {
  if stage gemm; then
    stamp "GPU 1: GEMM fit (xdeep-probe)"
    python3 "$here/gemm_shapes.py" fitset --out /tmp/fit_shapes.json
    CUDA_VISIBLE_DEVICES=1 timeout $((T_GEMM + 10)) "$carry/xdeep-probe" compute --suite gpu \
      --shapes /tmp/fit_shapes.json --dtypes bf16,fp16,tf32 --time-limit $T_GEMM --out "$res/gemm_fit.json"
    echo "fit rc=$?"
  fi
  # The measurement of the training settings' effects (a script; empty: none).
  if [ -n "$SETTINGS_EFFECTS" ]; then
    stamp "GPU 1: $(basename "$SETTINGS_EFFECTS")"
    CUDA_VISIBLE_DEVICES=1 timeout 75 python3 "$SETTINGS_EFFECTS" --deadline-s 62 \
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
fi
if stage probes; then
  [ "$RANKS2" = 1 ] && stamp "framework probe, 2 ranks" && timeout ${T_RANKS2:-100} python3 "$here/../../profiler/framework_probe.py" --ranks 2 --out "$res/framework_2ranks.json"
  stamp "collectives"
  RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29602 \
    timeout 100 "$carry/xdeep-probe" collectives --out /tmp/unused.json > /tmp/rank1.txt 2>&1 &
  RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29602 \
    timeout 100 "$carry/xdeep-probe" collectives --out "$res/coll_2gpu.json"
  wait $!
  # The hardware profile as the daemon keeps it: every report of the node merged.
  "$carry/xdeep-probe" merge "$res/compute.json" "$res/framework.json" \
    $( [ -f "$res/framework_2ranks.json" ] && echo "$res/framework_2ranks.json") \
    "$res/coll_2gpu.json" --out "$res/profile.json"
  echo "merge rc=$?"
fi

# 3. The suite: single-GPU lanes side by side (transformers on GPU 0, vision on GPU 1),
# then each two-GPU mode.
if stage suite; then
  if mode single; then
    stamp "single GPU"
    CUDA_VISIBLE_DEVICES=0 timeout $T_SINGLE $suite --mode single --models "$LM" --micro-batches "$MBS" --model-seconds $((T_SINGLE / 6)) \
      --out "$res/suite_single_lm.json" &
    lane=$!
    CUDA_VISIBLE_DEVICES=1 timeout $T_SINGLE $suite --mode single --models "$VISION" \
      --vision-micro-batches "$VMBS" --model-seconds $((T_SINGLE / 3)) --out "$res/suite_single_vision.json"
    wait $lane
  fi
  for m in ddp fsdp tp pp; do
    mode $m || continue
    models=${MODELS_2GPU:-$LM,$VISION}
    [ $m = tp ] && models=hf-llama-1b
    [ $m = pp ] && models=${MODELS_PP:-hf-gpt2-medium,hf-llama-1b}
    t=$T_2GPU
    [ $m = tp ] && t=${T_TP:-$T_2GPU}
    stamp "$m on 2 GPUs: $models"
    timeout $t torchrun --standalone --nproc_per_node=2 "$here/library_suite.py" --steps "$STEPS" \
      --mode $m --models "$models" --micro-batches "$MBS_2GPU" --vision-micro-batches "${VMBS_2GPU:-$MBS_2GPU,64}" \
      --model-seconds $((t / 4)) --out "$res/suite_$m.json" 2>&1 | grep -v "^W1\|warn" | tail -40
  done
fi
stamp "done"
