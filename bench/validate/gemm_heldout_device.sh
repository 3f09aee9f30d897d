#!/usr/bin/env bash
# Issue 19 item 1 in one device call: the GEMM model, frozen in the carried
# xdeep_validate, against a fresh random set of training-like shapes.
#
#   cmake --build build --target xdeep-probe xdeep_validate && bench/profiler/pack_carry.sh build
#   SEED=<never used> XDEEP_CARRY=build/carry OUT=$OUT bash bench/validate/gemm_heldout_device.sh
# One H100 or H200: ~130 s expected (seed 4517: fit 50-51 s, check 51-52 s for 183-189
# shapes in the old 45 s box, heuristic 1, gemm-check ~4); at most ~240 s with the
# defaults' time boxes (fit T_FIT + 15, check T_CHECK + T_KERNELS + 30, heuristic 30).
# With PACK=1 the JSON files go into one results.tgz at the end (4 files under $OUT:
# the device returns at most 8).
#
# 1. `gemm_shapes.py generate --seed $SEED`: COUNT shapes (random transformer and CNN
#    layers, aligned and not, bf16 / fp16 / tf32, forward / dgrad / wgrad), none of
#    them in an earlier check set or probe report committed here (either orientation).
# 2. xdeep-probe at the fit shapes (`gemm_shapes.py fitset $FIT_ARGS`, none of whose
#    random layers runs a check shape; the probe adds its anchors), as the model's
#    points. The probe writes no report past --time-limit, so the set must finish well
#    inside T_FIT: on one H100 the default 60 layers (+15 anchors) took > 115 s
#    (2026-11-27 06:23, seed 2719's call), 24 random layers + anchors 63.6 s on a 2x H100
#    host (seed 3301). FIT_ARGS's default: 32 random layers up to 1e12 FLOPs a pass (the
#    check's reach; 8e10 before) and no GPT layers (whose 50257-wide heads at micro-batch
#    16 take a third of the time) -- bench/validate/gemm_model_calibration.md, "The fit
#    set's reach".
#    The report records the cuBLASLt kernel each point ran (tile, split-k, algorithm).
#    With POOL=N the fit set is chosen by kernel class instead (see POOL below).
# 3. torch.matmul (cuBLAS) at the check shapes, timed as the probe times a GEMM
#    (T_CHECK seconds at most; shapes past it are left out and the count says so), then
#    for up to T_KERNELS seconds the name of the kernel torch ran for each (diagnostics).
#    With two GPUs visible, steps 2 and 3 run side by side, one GPU each.
# 4. `xdeep-probe compute --suite gemm-heuristic` at the check shapes: the kernel
#    cuBLASLt's heuristic picks for each, nothing run or timed (no time of a check
#    shape reaches the model).
# 5. `xdeep_validate gemm-check`: the model fitted to step 2's report only, its median
#    and 95th-percentile error on step 3's shapes -- blind (the best tile, as the frozen
#    models before) in gemm_check.txt, and knowing step 4's kernels in
#    gemm_check_kernels.txt (tuner/gemm_kernel_table.h).
# Writes to $OUT: log.txt, check_shapes.json, fit_shapes.json, gemm_fit.json,
# gemm_check.json, check_probe_shapes.json, check_algos.json, gemm_check.txt,
# gemm_check_kernels.txt (PACK=1: the JSON files in results.tgz). Needs torch with
# CUDA on the machine.
set -u
OUT=${OUT:-/tmp/xdeep-gemm-heldout}
carry=${XDEEP_CARRY:-build/carry}
SEED=${SEED:?SEED: a seed never used for a check set before}
COUNT=${COUNT:-200}
FIT_ARGS=${FIT_ARGS:---gpt-micro-batches= --random-layers 32 --max-flops 1e12}
T_FIT=${T_FIT:-75}
# Samples and warm-up per fit GEMM: the check's own (gemm_shapes.py time: 7 samples,
# 20 ms), which also brings the 423-point fit from ~77 s (the probe's 20 and 60 ms,
# seed 8081) to ~30 s on one H100.
FIT_PROBE_ARGS=${FIT_PROBE_ARGS:---samples 7 --warm-up-ms 20 --bandwidth-kernels copy}
# The check's box: seed 4517 timed 183 (H100) and 189 (H200) of 200 shapes in 45 s
# (0.25-0.27 s a shape, nearly all of it the harness's warm-up, holds and batches, not
# the GEMMs: their 183 medians sum to 0.16 s), so 200 need ~48-50 s; 62 s leaves room.
# The call: ~9 s set-up + ~50 s fit + <= 62 + 6 s check + ~5 s heuristic and fits,
# ~130 s on one H100 or H200 (seed 4517's, 45 s box: 123 and 119 s).
T_CHECK=${T_CHECK:-62}
# POOL > 0: choose the fit set by kernel class (gemm_shapes.py pool + fitset --by-kernel,
# FIT_GEMMS of them, plus the probe's anchors) instead of FIT_ARGS's random layers. Not
# yet run on a GPU (session 15 prepared it after its held-out run).
POOL=${POOL:-0}
FIT_GEMMS=${FIT_GEMMS:-300}
T_KERNELS=${T_KERNELS:-6}
PACK=${PACK:-0}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/device_env.sh"  # library path, log.txt, stamp, relative_paths_in
# The JSON and tables name files relative to the checkout; with PACK=1 the JSON
# files (and the pool's) then go into results.tgz, even on a cut-off run.
pack() {
  relative_paths_in "$OUT"
  [ "$PACK" = 1 ] || return 0
  (cd "$OUT" && ls *.json > /dev/null 2>&1 &&
    tar -czf results.tgz.part --remove-files *.json && mv results.tgz.part results.tgz)
}
trap pack EXIT

stamp "$(date -u +%FT%TZ) $(hostname) seed $SEED"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
"$carry/xdeep-probe" --help > /dev/null || { echo "xdeep-probe does not start"; ldd "$carry/xdeep-probe"; exit 1; }

# Everything fitted or checked before: no new shape may be one of them.
old=$(ls "$here"/gemm_check_shapes*.json "$here"/data/*/*/gemm_fit.json "$here"/data/*/*/gemm_check.json 2>/dev/null)
python3 "$here/gemm_shapes.py" generate --seed "$SEED" --count "$COUNT" --exclude $old \
  --out "$OUT/check_shapes.json" || exit 1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fit_gpu=0
[ "$gpus" -ge 2 ] && fit_gpu=1
if [ "$POOL" -gt 0 ]; then
  # The fit set by kernel class: the heuristic names the kernel of POOL random shapes
  # (none a check shape; nothing timed), and up to 2 shapes of each class are fitted.
  stamp "cuBLASLt's heuristic at a pool of $POOL shapes (nothing timed)"
  python3 "$here/gemm_shapes.py" pool --seed "$((SEED + 1))" --count "$POOL" \
    --exclude "$OUT/check_shapes.json" $old --out "$OUT/pool_shapes.json" || exit 1
  CUDA_VISIBLE_DEVICES=$fit_gpu timeout 60 "$carry/xdeep-probe" compute --suite gemm-heuristic \
    --no-anchors --shapes "$OUT/pool_shapes.json" --dtypes bf16,fp16,tf32 --time-limit 45 \
    --out "$OUT/pool_algos.json"
  echo "pool heuristic rc=$?"
  python3 "$here/gemm_shapes.py" fitset --by-kernel "$OUT/pool_algos.json" --per-class 2 \
    --max-gemms "$FIT_GEMMS" --exclude "$OUT/check_shapes.json" --out "$OUT/fit_shapes.json" || exit 1
else
  python3 "$here/gemm_shapes.py" fitset $FIT_ARGS --exclude "$OUT/check_shapes.json" \
    --out "$OUT/fit_shapes.json" || exit 1
fi
fit() {
  stamp "GEMM fit points (xdeep-probe, GPU $fit_gpu)"
  CUDA_VISIBLE_DEVICES=$fit_gpu timeout $((T_FIT + 15)) "$carry/xdeep-probe" compute --suite gpu \
    --shapes "$OUT/fit_shapes.json" --dtypes bf16,fp16,tf32 $FIT_PROBE_ARGS --time-limit "$T_FIT" \
    --out "$OUT/gemm_fit.json"
  echo "fit rc=$?"
  stamp "fit done"
}
check() {
  stamp "GEMM check (torch.matmul, GPU 0) at $COUNT shapes"
  CUDA_VISIBLE_DEVICES=0 timeout $((T_CHECK + T_KERNELS + 30)) python3 "$here/gemm_shapes.py" time \
    --shapes "$OUT/check_shapes.json" --deadline-s "$T_CHECK" --kernels-s "$T_KERNELS" \
    --out "$OUT/gemm_check.json"
  echo "check rc=$?"
  stamp "check done"
}
if [ "$fit_gpu" -eq 1 ]; then
  fit &
  fit_pid=$!
  check
  wait "$fit_pid"  # not a bare wait: that would wait for the log's tee too
else
  fit
  check
fi

stamp "cuBLASLt's heuristic at the check shapes (nothing timed)"
python3 "$here/gemm_shapes.py" probeshapes --shapes "$OUT/check_shapes.json" \
  --out "$OUT/check_probe_shapes.json"
CUDA_VISIBLE_DEVICES=0 timeout 30 "$carry/xdeep-probe" compute --suite gemm-heuristic --no-anchors \
  --shapes "$OUT/check_probe_shapes.json" --time-limit 20 --out "$OUT/check_algos.json"
echo "heuristic rc=$?"

stamp "the frozen model: fitted to the probe's points, against the check"
"$carry/xdeep_validate" --version 2>/dev/null
"$carry/xdeep_validate" gemm-check --fit "$OUT/gemm_fit.json" --check "$OUT/gemm_check.json" \
  --worst 25 > "$OUT/gemm_check.txt" 2>&1
echo "gemm-check (blind) rc=$?"
head -14 "$OUT/gemm_check.txt"
"$carry/xdeep_validate" gemm-check --fit "$OUT/gemm_fit.json" --check "$OUT/gemm_check.json" \
  --algos "$OUT/check_algos.json" --worst 25 > "$OUT/gemm_check_kernels.txt" 2>&1
echo "gemm-check (kernels) rc=$?"
head -14 "$OUT/gemm_check_kernels.txt"
stamp "done"
