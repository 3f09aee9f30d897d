#!/usr/bin/env bash
# run_device.sh without a GPU: nvidia-smi, torchrun and the Python of the
# training and framework probe replaced by stand-ins that record how they were
# called and write a result in measure_pytorch.py's format; the real
# xdeep_validate compares. Checks the harness's plan: every configuration
# once, single-GPU lanes balanced across the two GPUs, launch-bound ones timed
# over a window, the files merged and compared.
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
PATH=$tmp/bin:$PATH OUT=$tmp/out XDEEP_CARRY=$tmp/carry STAGES=single,ddp,fsdp,compare \
  PRIOR=$here/data/2026-11-26_h200x2_heldout3 \
  bash "$here/run_device.sh" > "$tmp/log.txt" 2>&1 || { cat "$tmp/log.txt"; echo "run_device.sh failed"; exit 1; }
fail() { echo "dry run: $*"; cat "$tmp/log.txt"; exit 1; }
count() { grep -c -- "$1" "$calls"; }
# 5 models x 5 micro-batches single, x 3 for DDP and for FSDP: each once.
[ "$(wc -l < "$calls")" = 55 ] || fail "$(wc -l < "$calls") training processes, expected 55"
[ "$(count "GPU=0 ")" = 13 ] && [ "$(count "GPU=1 ")" = 12 ] || fail "lanes unbalanced"
# Launch-bound: GPT micro-batch <= 2 (FSDP <= 4) and every ResNet-50 run.
[ "$(count "min-seconds 6")" = 31 ] || fail "$(count "min-seconds 6") windowed runs, expected 31"
grep -- "--mode fsdp" "$calls" | grep -- "--micro-batches 4 " | grep -qv -- "min-seconds 6" &&
  fail "an FSDP micro-batch-4 run without a window"
for f in single ddp fsdp validation; do [ -s "$tmp/out/$f.json" ] || fail "no $f.json"; done
grep -q "STEP TIME   MAPE" "$tmp/out/log.txt" || fail "no comparison"
grep -q "gpt-1.3b ddp mb16 not measured: estimated out of memory" "$tmp/out/log.txt" ||
  fail "the comparison does not say which configuration was not measured"
echo "dry run: 55 processes planned and compared"
