#!/usr/bin/env bash
# The probe's GEMM fit set with its anchors (profiler/suites.cc ModelAnchorGemms),
# timed on one GPU as gemm_heldout_device.sh's step 2 times it: does every anchor
# run, and how long does the fit probe take now? Session 23 (h23g) added four
# first-convolution anchors (36 GEMMs over bf16 / fp16 / tf32); seed 3907's fit
# set ran 423 GEMMs in ~50 s on one H200 before.
#
#   cmake --build build --target xdeep-probe xdeep_validate && bench/profiler/pack_carry.sh build
#   XDEEP_CARRY=build/carry OUT=$OUT bash bench/validate/gemm_anchor_check.sh
# ~60 s on one H100 or H200. Writes $OUT/log.txt, $OUT/fit_shapes.json and
# $OUT/gemm_fit.json (the probe report), and prints the anchors' times.
set -u
OUT=${OUT:-/tmp/xdeep-gemm-anchors}
carry=${XDEEP_CARRY:-build/carry}
FIT_ARGS=${FIT_ARGS:---gpt-micro-batches= --random-layers 32 --max-flops 1e12}
FIT_PROBE_ARGS=${FIT_PROBE_ARGS:---samples 7 --warm-up-ms 20 --bandwidth-kernels copy}
T_FIT=${T_FIT:-75}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/device_env.sh"  # library path, log.txt, stamp, relative_paths_in
trap 'relative_paths_in "$OUT"' EXIT

stamp "$(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 "$here/gemm_shapes.py" fitset $FIT_ARGS --out "$OUT/fit_shapes.json" || exit 1
stamp "GEMM fit points with the anchors (xdeep-probe)"
CUDA_VISIBLE_DEVICES=0 timeout $((T_FIT + 15)) "$carry/xdeep-probe" compute --suite gpu \
  --shapes "$OUT/fit_shapes.json" --dtypes bf16,fp16,tf32 $FIT_PROBE_ARGS --time-limit "$T_FIT" \
  --out "$OUT/gemm_fit.json"
echo "fit rc=$?"
stamp "fit done"
python3 - "$OUT/gemm_fit.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
gemm = d.get("gemm", [])
anchors = [g for g in gemm if g["layer"].startswith("anchor.")]
print(f"probe elapsed {d.get('elapsed_s', 0):.1f} s, {len(gemm)} GEMMs, {len(anchors)} anchors, "
      f"errors: {d.get('errors', [])}")
for g in anchors:
    if g["layer"].startswith("anchor.conv1") or g["layer"] == "anchor.stem":
        k = g.get("kernel", {})
        print(f"  {g['layer']:14} {g['dtype']} {g['pass']:5} m={g['m']:8} n={g['n']:5} k={g['k']:8} "
              f"{1e6 * g['median_s']:8.1f} us {g['tflops']:6.1f} TFLOP/s  algo {k.get('algo')} "
              f"tile {k.get('tile_m')}x{k.get('tile_n')} split {k.get('split_k')}")
EOF
