#!/usr/bin/env bash
# Small GEMMs that split k, timed twice on one GPU: by the probe (xdeep-probe, the
# fit's timer, cuBLASLt's heuristic kernel recorded) and by torch.matmul (the check's
# timer, gemm_shapes.py time) at the same shapes (issue 19 item 1; session 25, h25g).
#
#   XDEEP_CARRY=build/carry OUT=$OUT bash bench/validate/gemm_split_points_device.sh
#
# Why: the kernel fits' L2 speed-up drifts x1.1-x4 between folds and pins nothing that
# the check shapes show (gemm_model_calibration.md, "Session 24 (h24g)"): memory-bound
# check shapes under the 50 MB L2 stream no faster than large ones. Two things are not
# told apart by the committed data: (a) whether the probe's timing loop keeps an L2-sized
# GEMM's operands in L2 where torch's does not, (b) what a split-k's second pass costs
# over a GEMM that streams its operands. Here the same 16 CNN-like layers (1x1
# convolutions of 24-512 channels over 12,544-401,408 pixels: their wgrads are small
# outputs over a long k, 2-330 MB, the heuristic splits most of them) run in three
# passes and three precisions (144 GEMMs) under both timers. Data for the next session's
# L2 / split-pass term, calibration; nothing here is held out.
# One H200 or H100: ~80 s (probe ~25 s, torch ~40 s, set-up ~10 s). Writes log.txt,
# split_layers.json, split_probe.json (probe report, kernels), split_shapes.json,
# split_torch.json (torch timings) to $OUT.
set -u
OUT=${OUT:-/tmp/xdeep-gemm-split}
carry=${XDEEP_CARRY:-build/carry}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/device_env.sh"
stamp "$(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
layers = []
# (pixels, in, out): wgrad m=out n=in k=pixels; operands 2 x pixels x (in + out) bytes at 16 bits.
for pixels, cin, cout in [(12544, 64, 128), (12544, 256, 512), (25088, 48, 96), (25088, 128, 256),
                          (50176, 32, 64), (50176, 96, 192), (50176, 256, 64), (100352, 24, 48),
                          (100352, 64, 256), (100352, 128, 32), (200704, 32, 96), (200704, 64, 64),
                          (200704, 24, 120), (401408, 32, 64), (401408, 64, 24), (401408, 96, 96)]:
    layers.append({"name": f"split.c{cin}x1x1->{cout}.t{pixels}", "tokens": pixels, "in": cin,
                   "out": cout})
json.dump({"schema": "xdeep.gemm_shapes/1", "dtypes": ["bf16", "fp16", "tf32"], "layers": layers},
          open(f"{out}/split_layers.json", "w"), indent=1)
shapes = []
for l in layers:
    t, i, o = l["tokens"], l["in"], l["out"]
    for pas, (m, n, k) in {"fwd": (t, o, i), "dgrad": (t, i, o), "wgrad": (o, i, t)}.items():
        for d in ("bf16", "fp16", "tf32"):
            shapes.append({"m": m, "n": n, "k": k, "pass": pas, "dtype": d, "layer": l["name"]})
json.dump({"schema": "xdeep.gemm_check_shapes/1", "seed": 0, "shapes": shapes},
          open(f"{out}/split_shapes.json", "w"), indent=1)
print(len(layers), "layers,", len(shapes), "GEMMs")
PY
stamp "probe (xdeep-probe, the fit's timer)"
timeout 75 "$carry/xdeep-probe" compute --suite gpu --no-anchors --shapes "$OUT/split_layers.json" \
  --dtypes bf16,fp16,tf32 --samples 7 --warm-up-ms 20 --bandwidth-kernels copy --time-limit 60 \
  --out "$OUT/split_probe.json"
echo "probe rc=$?"
stamp "torch.matmul (the check's timer)"
timeout 100 python3 "$here/gemm_shapes.py" time --shapes "$OUT/split_shapes.json" --deadline-s 70 \
  --kernels-s 10 --out "$OUT/split_torch.json"
echo "torch rc=$?"
relative_paths_in "$OUT"
stamp "done"
