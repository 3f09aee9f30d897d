#!/usr/bin/env bash
# run_library.sh without a GPU: nvidia-smi, torchrun, xdeep-probe's GPU commands and the
# Python of the suite, the framework probe and the cuBLAS timings replaced by stand-ins
# that log when they start and end and write a committed run's files; the real
# xdeep-probe merges and the real xdeep_validate predicts. Checks the harness's plan and
# its robustness: the framework probe starts only after both probe lanes have ended (it
# runs alone), a two-GPU mode that fails (FSDP) or hangs (TP, cut by its time box) loses
# only itself, results.tgz holds every other file and the predictions made from them,
# and a call past DEADLINE_S skips its steps yet still returns an archive.
#
#   library_dry_run_test.sh XDEEP_PROBE XDEEP_VALIDATE
set -u
probe=$(realpath "$1") validate=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data/calibration/2026-11-27_h100x2_library_heldout
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/carry/lib"
ln -s "$validate" "$tmp/carry/xdeep_validate"
real_python=$(command -v python3)
log=$tmp/calls.txt
cat > "$tmp/bin/nvidia-smi" <<'SH'
#!/bin/bash
# Two GPUs (run_library.sh counts `nvidia-smi -L`'s lines; with one it runs the single-GPU part only).
if [ "$1" = -L ]; then echo "GPU 0: stand-in"; echo "GPU 1: stand-in"; else echo "stand-in"; fi
SH
cat > "$tmp/bin/torchrun" <<'SH'
#!/bin/bash
while [[ $1 == --* ]]; do shift; done
exec python3 "$@"
SH
# xdeep-probe: merge and --help are the real one's; compute and collectives copy a report.
cat > "$tmp/carry/xdeep-probe" <<SH
#!/bin/bash
case "\$1" in
  merge|--help) exec "$probe" "\$@";;
esac
out=\$(echo "\$*" | sed 's/.*--out \([^ ]*\).*/\1/')
case "\$*" in
  *gemm-heuristic*)
    # The heuristic's answer for every shape asked, a kernel in the report's format.
    shapes=\$(echo "\$*" | sed 's/.*--shapes \([^ ]*\).*/\1/')
    echo "heuristic \$shapes" >> "$log"
    cp "\$shapes" "$tmp/heuristic_asked.json"  # the run removes its own copy when it ends
    exec "$real_python" - "$data/compute.json" "\$shapes" "\$out" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
kernel = {"algo": 66, "tile_id": 24, "stages_id": 35, "swizzle": 0, "reduction": 0, "tile_m": 128,
          "tile_n": 256, "split_k": 1, "cluster_m": 2, "cluster_n": 1}
report.update(gemm=[], bandwidth=[], attention=[], gemm_algos=[
    {"m": g["m"], "n": g["n"], "k": g["k"], "dtype": g["dtype"], "pass": g["pass"], "kernel": kernel}
    for g in json.load(open(sys.argv[2]))["gemms"]])
json.dump(report, open(sys.argv[3], "w"))
PY
    ;;
  *"--dtypes bf16,fp16,tf32"*) what=fit src=$here/data/calibration/2026-11-27_h100x2_library_heldout2/gemm_fit.json;;
  compute*) what=compute src=$data/compute.json;;
  collectives*) what=collectives src=$data/coll_2gpu.json;;
esac
echo "start \$what" >> "$log"; sleep 1; cp "\$src" "\$out"; echo "end \$what" >> "$log"
SH
cat > "$tmp/bin/python3" <<SH
#!/bin/bash
out=\$(echo "\$*" | sed -n 's/.*--out \([^ ]*\).*/\1/p')
case "\$*" in
  -c*) echo "stand-in torch"; exit 0;;
  *framework_probe.py*--ranks*) echo "start framework2" >> "$log"; cp "$data/framework_2ranks.json" "\$out"; echo "end framework2" >> "$log"; exit 0;;
  *framework_probe.py*) echo "start framework" >> "$log"; cp "$data/framework.json" "\$out"; echo "end framework" >> "$log"; exit 0;;
  *"gemm_shapes.py time"*) echo "start check" >> "$log"; sleep 1; cp "$here/data/calibration/2026-11-27_h100x2_library_heldout2/gemm_check.json" "\$out"; echo "end check" >> "$log"; exit 0;;
  *library_suite.py*--mode\ fsdp*) echo "fsdp fails" >> "$log"; exit 1;;
  *library_suite.py*--mode\ tp*) echo "tp hangs" >> "$log"; sleep 60; exit 0;;
  *library_suite.py*)
    mode=\$(echo "\$*" | sed 's/.*--mode \([a-z]*\).*/\1/')
    echo "suite \$mode" >> "$log"
    f=$data/suite_\$mode.json
    case "\$out" in *single_lm*) f=$data/suite_single_lm.json;; *single_vision*) f=$data/suite_single_vision.json;; esac
    cp "\$f" "\$out"; exit 0;;
  *) exec "$real_python" "\$@";;
esac
SH
chmod +x "$tmp/bin/"* "$tmp/carry/xdeep-probe"
fail() { echo "library dry run: $*"; cat "$tmp/out/log.txt" "$log"; exit 1; }
PATH=$tmp/bin:$PATH OUT=$tmp/out XDEEP_CARRY=carry HEURISTIC=1 T_GEMM=20 T_COMPUTE=10 T_SINGLE=20 T_2GPU=10 T_TP=3 \
  LM=hf-gpt2,hf-gpt2-medium VISION=tv-resnet50 MODELS_DDP=hf-gpt2 MODELS_FSDP=hf-gpt2 \
  bash -c "cd '$tmp' && bash '$here/run_library.sh'" > /dev/null 2>&1
[ -s "$tmp/out/results.tgz" ] || fail "no results.tgz"
mkdir "$tmp/res" && tar -C "$tmp/res" -xzf "$tmp/out/results.tgz" || fail "unreadable results.tgz"
for f in compute gemm_fit gemm_check framework framework_2ranks coll_2gpu profile suite_single_lm \
  suite_single_vision suite_ddp suite_pp; do
  [ -s "$tmp/res/$f.json" ] || fail "no $f.json in results.tgz"
done
[ -e "$tmp/res/suite_fsdp.json" ] && fail "a failed mode left a file"
# HEURISTIC=1: the heuristic's answers merged into compute.json, one for every GEMM the
# daemon's probe job would ask about on a 2-GPU node (the suite's and the presets').
"$real_python" - "$tmp/res/compute.json" "$data/compute.json" "$tmp/heuristic_asked.json" <<'PY' ||
  fail "the heuristic's answers are not in compute.json"
import json, sys
merged, timed = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
asked = json.load(open(sys.argv[3]))["gemms"]
assert len(merged["gemm"]) == len(timed["gemm"]) > 0, "the timed points changed"
assert len(merged.get("gemm_algos", [])) == len(asked) > 0, (len(merged.get("gemm_algos", [])), len(asked))
assert any(g["label"].startswith("hf-gpt2.") and ".tp2" in g["label"] for g in asked), "no TP=2 shapes"
PY
grep -q "tp hangs" "$log" && grep -q "suite pp" "$log" || fail "the mode after a hung one did not run"
# The framework probe alone: after every lane's probe has ended.
first_framework=$(grep -n "start framework" "$log" | head -1 | cut -d: -f1)
for w in fit compute check; do
  [ "$(grep -n "end $w" "$log" | cut -d: -f1)" -lt "$first_framework" ] || fail "framework probe beside $w"
done
grep -q "STEP TIME   MAPE" "$tmp/res/compare.txt" || fail "no predictions in compare.txt"
grep -q "95th percentile" "$tmp/res/gemm_check.txt" || fail "no GEMM check in gemm_check.txt"
# Past its deadline a call skips every step and still returns an archive.
PATH=$tmp/bin:$PATH OUT=$tmp/out2 XDEEP_CARRY=carry STAGES=suite DEADLINE_S=1 \
  bash -c "cd '$tmp' && sleep 2 && bash '$here/run_library.sh'" > /dev/null 2>&1
[ -s "$tmp/out2/results.tgz" ] && grep -q "skipped (deadline 1 s)" "$tmp/out2/log.txt" || fail "deadline not kept"
# The logs and the archive name files relative to the checkout and $OUT, never by
# this machine's paths (bench/relative_paths.sh).
root=$(cd "$here/../.." && pwd)
grep -rlF -e "$tmp/out" -e "$root/" "$tmp/out/log.txt" "$tmp/out2/log.txt" "$tmp/res" &&
  fail "machine paths in the files above"
grep -q "skipped (deadline 1 s): python3 bench/validate/library_suite.py" "$tmp/out2/log.txt" ||
  fail "the log does not name the suite relative to the checkout"
echo "library dry run: ok"
