#!/usr/bin/env bash
# run_device.sh without a GPU: nvidia-smi, torchrun and the Python of the
# training and framework probe replaced by stand-ins that record how they were
# called and write a result in measure_pytorch.py's format; the real
# xdeep-probe merges and xdeep_validate compares. Checks the harness's plan:
# every configuration once in round 1, single-GPU lanes balanced across the two
# GPUs, launch-bound ones timed over a window and again in round 2, an earlier
# call's probe reports (PRIOR) merged, the files merged and compared.
#
#   dry_run_test.sh XDEEP_PROBE XDEEP_VALIDATE
set -u
probe=$(realpath "$1") validate=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/carry/lib"
ln -s "$probe" "$tmp/carry/xdeep-probe"
ln -s "$validate" "$tmp/carry/xdeep_validate"
real_python=$(command -v python3)
calls=$tmp/calls.txt
cat > "$tmp/bin/nvidia-smi" <<'SH'
#!/bin/bash
if [ "${1:-}" = -L ]; then echo "GPU 0: stand-in"; echo "GPU 1: stand-in"; else echo "stand-in"; fi
SH
cat > "$tmp/bin/torchrun" <<'SH'
#!/bin/bash
while [[ $1 == --* ]]; do shift; done
exec python3 "$@"
SH
cat > "$tmp/bin/python3" <<SH
#!/bin/bash
case "\$*" in
  *"import torch"*|*gpu_cpus.py*) exit 0;;
  *measure_pytorch.py*)
    echo "GPU=\${CUDA_VISIBLE_DEVICES:-all} \$*" >> "$calls"
    shift  # measure_pytorch.py's path; its arguments follow
    exec "$real_python" "$here/dry_run_measure.py" "\$@";;
  *) exec "$real_python" "\$@";;
esac
SH
chmod +x "$tmp/bin/"*
PATH=$tmp/bin:$PATH OUT=$tmp/out XDEEP_CARRY=$tmp/carry STAGES=single,ddp,fsdp,single2,ddp2,fsdp2,compare \
  PRIOR=$here/data/calibration/2026-11-26_h100x2_heldout9 \
  bash "$here/run_device.sh" > "$tmp/log.txt" 2>&1 || { cat "$tmp/log.txt"; echo "run_device.sh failed"; exit 1; }
fail() { echo "dry run: $*"; cat "$tmp/log.txt"; exit 1; }
# Every call as "GPU=g round mode model mb window kernels" per configuration.
"$real_python" - "$calls" > "$tmp/configs.txt" <<'PY' || fail "unreadable calls"
import sys
for line in open(sys.argv[1]):
    words = line.split()
    arg = {k: v for k, v in zip(words, words[1:]) if k.startswith("--")}
    rnd = arg["--out"].rsplit("_r", 1)[1].split(".")[0]
    for mb in arg["--micro-batches"].split(","):
        window = "window" if int(mb) <= float(arg["--window-mb"]) else "-"
        print(words[0], rnd, arg["--mode"], arg["--models"], mb, window,
              "kernels" if "--kernels" in words else "-")
PY
count() { grep -c -- "^$1" "$tmp/configs.txt"; }  # count REGEX: configurations from the start
# Round 1: 5 models x 5 micro-batches single, x 3 for DDP and for FSDP, each once, in
# one process per model (and lane).
[ "$(count "[^ ]* 1 ")" = 55 ] || fail "$(count "[^ ]* 1 ") configurations in round 1, expected 55"
[ "$(sort "$tmp/configs.txt" | cut -d' ' -f2- | grep '^1 ' | uniq -d | wc -l)" = 0 ] ||
  fail "a configuration twice in round 1"
[ "$(wc -l < "$calls")" = 35 ] || fail "$(wc -l < "$calls") training processes, expected 35"
[ "$(count "GPU=0 1 single")" = 13 ] && [ "$(count "GPU=1 1 single")" = 12 ] || fail "lanes unbalanced"
# Launch-bound: GPT micro-batch <= 2 (FSDP <= 4) and every ResNet-50 run, timed over a
# window in round 1 and again in round 2, nothing else in round 2.
[ "$(count "[^ ]* 1 .* window")" = 31 ] || fail "$(count "[^ ]* 1 .* window") windowed runs in round 1, expected 31"
grep -q "fsdp gpt-350m 4 -" "$tmp/configs.txt" && fail "an FSDP micro-batch-4 run without a window"
[ "$(count "[^ ]* 2 .* window")" = 31 ] && [ "$(count "[^ ]* 2 ")" = 31 ] || fail "round 2 is not the 31 launch-bound runs"
# Round 2's single-GPU lanes: whole models, 7 and 6 configurations.
[ "$(count "GPU=0 2 single")" = 7 ] && [ "$(count "GPU=1 2 single")" = 6 ] || fail "round 2's lanes unbalanced"
# Kernel profiles: single GPU's round 1 only (KERNEL_MODES).
[ "$(count ".* kernels$")" = 25 ] && [ "$(count "[^ ]* 1 single .* kernels$")" = 25 ] ||
  fail "kernel profiles other than single GPU's round 1"
for f in single_r1 ddp_r1 fsdp_r1 single_r2 ddp_r2 fsdp_r2 validation; do
  [ -s "$tmp/out/$f.json" ] || fail "no $f.json"
done
grep -q "STEP TIME   MAPE" "$tmp/out/log.txt" || fail "no comparison"
# PRIOR's probe reports merged into this run's profile; its training files not compared.
[ -s "$tmp/out/profile.json" ] && grep -q "^profile: measured .*NVIDIA H100" "$tmp/out/log.txt" ||
  fail "PRIOR's probe reports not merged into profile.json"
grep -q "heldout9/[a-z]*_r[12].json" "$tmp/out/log.txt" && fail "compared PRIOR's training beside this run's"
grep -q "gpt-1.3b ddp mb16 not measured: estimated out of memory" "$tmp/out/log.txt" ||
  fail "the comparison does not say which configuration was not measured"
# A peak measured over the configuration before's memory is left out, and said.
grep -q "gpt-125m ddp mb4 peak memory not compared: its baseline held 496 MB" "$tmp/out/log.txt" &&
  grep -q "peak memory MAPE ddp .* over 13 runs" "$tmp/out/log.txt" ||
  fail "a peak over a moved baseline was compared"
# What comes back names files relative to the checkout and $OUT, never by this
# machine's paths (bench/relative_paths.sh).
root=$(cd "$here/../.." && pwd)
grep -rlF -e "$tmp/out" -e "$root/" "$tmp/out" && fail "machine paths in the files above"
grep -qF '$OUT/single_r1.json: stand-in' "$tmp/out/log.txt" ||
  fail "the log does not name \$OUT's files as \$OUT/..."
echo "dry run: 35 processes, 55 configurations and 31 launch-bound ones again, compared"
