#!/usr/bin/env bash
# One device call for issue 26: the Kokkos bandwidth kernels on the GPU against the
# hand-written CUDA probes and torch, at two sizes, three rounds each (torch two).
#   OUT=... bench/kokkos/run_device.sh
# Needs build-kokkos-device/carry (bench/kokkos/pack_carry.sh build-kokkos-device), or
# XDEEP_CARRY naming a copy (relative or absolute), carried
# and torch on the GPU machine. Writes under $OUT: log.txt, probe_reports.json (every
# xdeep-probe report), torch.json (every torch run), summary.csv (bench/kokkos/compare.py),
# kokkos_tests.xml and cuda_bandwidth_test.xml (unit tests on the device), study.csv (the
# softmax forms of bench/kokkos/softmax_study.cc), layer_norm_study.csv (the layer norm
# forms of bench/kokkos/layer_norm_study.cc) and the studies' -Xptxas -v output
# (*.ptxas.txt: registers and spills) and, where the GPU machine has Nsight Compute,
# ncu_<form>.csv (the layer norm forms' DRAM bytes, hit rates, occupancy, stalls) and
# ncu_softmax_<form>.csv (XDEEP_KOKKOS_NCU_SOFTMAX_FORMS: the softmax forms'). Every step has
# a timeout. The device call brings
# back at most 8 files: log.txt, summary.csv and layer_norm_study.csv stay as they are,
# the rest goes into raw.tar.gz.
# XDEEP_KOKKOS_NCU_FORMS (default four layer norm forms; empty: none) and
# XDEEP_KOKKOS_NCU_SOFTMAX_FORMS (default none) name the forms Nsight Compute reads.
# XDEEP_KOKKOS_TORCH=0 leaves out torch (a short call; torch's figures of the last run on
# the same card stand). XDEEP_KOKKOS_SOFTMAX_FORMS / _SOFTMAX_SIZES and XDEEP_KOKKOS_LN_FORMS
# narrow the studies (comma-separated; default every form, the sizes below). The row
# kernels' launch the probe chooses on this card is in the log ("kokkos_probe: ...") and
# in every report's versions.kokkos_row_launch.
set -u
OUT=${OUT:-/tmp/xdeep-kokkos-out}
mkdir -p "$OUT" /tmp/xk
rm -f /tmp/xk/*.json
with_torch=${XDEEP_KOKKOS_TORCH:-1}
carry=${XDEEP_CARRY:-build-kokkos-device/carry}  # as given: the log names it so
carry_lib=$(cd "$carry" && pwd)/lib || { echo "no carry directory $carry"; exit 1; }
probe=$carry/xdeep-probe
here=bench/kokkos
# cuBLASLt and NCCL from the host's CUDA, else the wheels torch brought.
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$carry_lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib:$tlib/nccl/lib
source bench/relative_paths.sh  # the log and files name paths relative to the checkout and $OUT
trap 'relative_paths_in "$OUT"' EXIT
relative_log "$OUT/log.txt"
echo "== $(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
ldd $probe | grep -E "not found" && { echo "missing libraries"; exit 1; }
$probe --version || { echo "xdeep-probe does not start"; exit 1; }
el() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
t() { local s=$EPOCHREALTIME; "$@"; local rc=$?; echo "[time] $(el $s) s rc=$rc: $*"; return $rc; }

echo "== Kokkos probe unit tests on the device (data checks, sizes, errors)"
t timeout 60 $carry/profiler_kokkos_probes_test --gtest_output=xml:$OUT/kokkos_tests.xml
echo "== CUDA bandwidth probes' unit test (the six kernels' data checks)"
t timeout 60 $carry/profiler_gpu_probes_test --gtest_filter='*DeviceBandwidth*' --gtest_output=xml:$OUT/cuda_bandwidth_test.xml
softmax_forms=()
[[ -n ${XDEEP_KOKKOS_SOFTMAX_FORMS:-} ]] && softmax_forms=(--forms "$XDEEP_KOKKOS_SOFTMAX_FORMS")
ln_forms=()
[[ -n ${XDEEP_KOKKOS_LN_FORMS:-} ]] && ln_forms=(--forms "$XDEEP_KOKKOS_LN_FORMS")
echo "== softmax forms x buffers x sizes, all timed by CUDA events (softmax_study.cc)"
s0=$EPOCHREALTIME
timeout 60 $carry/softmax_study --row-length 4096 \
  --sizes ${XDEEP_KOKKOS_SOFTMAX_SIZES:-64,128,256,512,1024} "${softmax_forms[@]}" > $OUT/study.csv
rc=$?
echo "[time] $(el $s0) s rc=$rc: softmax_study"
cat $OUT/study.csv
echo "== layer norm: the probe's kernels and forms of the twin x buffers x sizes (layer_norm_study.cc)"
s0=$EPOCHREALTIME
timeout 60 $carry/layer_norm_study --row-length 4096 --sizes 256,512,1024 --rounds 3 \
  "${ln_forms[@]}" > $OUT/layer_norm_study.csv
rc=$?
echo "[time] $(el $s0) s rc=$rc: layer_norm_study"
cat $OUT/layer_norm_study.csv
cp $carry/*.ptxas.txt $OUT/ 2>/dev/null
# Where Nsight Compute is on the GPU machine (not on the build machine): DRAM bytes, L1 / L2
# hit rates and occupancy of the Kokkos layer norm and forms of its twin, at 1 GiB, one
# launch each (the 4th: after the study's three warm-ups). XDEEP_KOKKOS_NCU=0 leaves it out.
ls -d /usr/local/cuda*/bin 2>/dev/null | while read -r d; do echo "$d: $(ls "$d" | tr '\n' ' ')"; done
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [[ ${XDEEP_KOKKOS_NCU:-1} != 0 && -n $ncu ]]; then
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
  metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct
  metrics+=,l1tex__t_sector_hit_rate.pct,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum
  metrics+=,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread
  metrics+=,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
  metrics+=,launch__shared_mem_config_size,sm__cycles_elapsed.avg.per_second
  # Where the time goes (from run 18, softmax forms): warps stalled at a barrier, on
  # memory (long scoreboard), on shared memory / MUFU (short scoreboard), instructions.
  metrics+=,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
  metrics+=,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
  metrics+=,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
  metrics+=,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
  # A metric name this ncu does not know fails the run: then its standard sections instead.
  sections=(--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis
            --section LaunchStats --section WarpStateStats)
  what=(--metrics "$metrics")
  # ncu_study STUDY KERNEL_REGEX FORM: one launch of FORM at 1 GiB into ncu_<prefix><form>.csv;
  # fails where neither the metrics nor the sections gave figures.
  ncu_study() {
    local study=$1 regex=$2 form=$3 csv=$OUT/ncu_$4$3.csv extra=()
    [[ $study == layer_norm_study ]] && extra=(--rounds 1)
    echo "== ncu: $study $form, 1 GiB"
    for _ in 1 2; do
      t timeout 40 "$ncu" "${what[@]}" --kernel-name-base demangled \
        -k regex:"$regex" --launch-skip 3 --launch-count 1 --csv \
        $carry/$study --sizes 1024 "${extra[@]}" --forms $form > $csv 2>&1
      grep -q '^"[0-9]' $csv && break
      tail -3 $csv
      [[ ${what[0]} == --metrics ]] || break
      what=("${sections[@]}")
    done
    grep -q '^"[0-9]' $csv || return 1
    grep -E '^"[0-9]' $csv | awk -F'","' '{print $(NF-2), $(NF-1), $NF}'
  }
  # No figures with either (no permission to the counters, say): the other forms neither.
  for form in ${XDEEP_KOKKOS_NCU_FORMS-kokkos_probe cuda_twin twin_blocks5 twin_as_kokkos5}; do
    ncu_study layer_norm_study 'LayerNorm|TwinRows' $form "" || break
  done
  for form in ${XDEEP_KOKKOS_NCU_SOFTMAX_FORMS:-}; do
    ncu_study softmax_study 'SoftmaxForm|SoftmaxRows|TwinSoftmax' $form softmax_ || break
  done
else
  echo "== ncu: not run (${ncu:-not found})"
fi

# Workload sizes: 256 MiB per array is a 16384-token x 4096-hidden activation (layer
# norm rows, a GEMM epilogue) or a 64M-parameter optimizer group; 1 GiB a 268M one.
for size in 256 1024; do
  elements=$((size * 1024 * 1024 / 4))
  for round in 1 2 3; do
    echo "== xdeep-probe memory suite, ${size} MiB per array, round $round"
    t timeout 90 $probe compute --suite memory --device-bytes ${size}M --row-length 4096 \
      --samples 30 --out /tmp/xk/memory_${size}M_r$round.json
  done
  [[ $with_torch != 0 ]] || continue
  echo "== torch, ${size} MiB per array (two rounds in one process)"
  t timeout 150 python3 $here/torch_memory.py --elements $elements --row-length 4096 \
    --rounds 2 --out /tmp/xk/torch_${size}M.json
done
shopt -s nullglob
merge='import json,sys; json.dump({f.split("/")[-1]: json.load(open(f)) for f in sys.argv[2:]}, open(sys.argv[1],"w"), indent=1)'
python3 -c "$merge" $OUT/probe_reports.json /tmp/xk/memory_*.json
torch_runs=(/tmp/xk/torch_*.json)
((${#torch_runs[@]})) && python3 -c "$merge" $OUT/torch.json "${torch_runs[@]}"
echo "== comparison"
python3 $here/compare.py --probe /tmp/xk/memory_*.json --torch "${torch_runs[@]}" --out $OUT/summary.csv
echo "== layer norm study: medians over rounds (study_summary.py)"
python3 $here/study_summary.py $OUT/layer_norm_study.csv
echo "== softmax study: each form against the CUDA twin (study_summary.py)"
python3 $here/study_summary.py $OUT/study.csv --reference cuda_twin
ls -la $OUT
relative_paths_in "$OUT"
cd "$OUT" && tar -czf raw.tar.gz --remove-files \
  $(ls | grep -vxE 'log.txt|summary.csv|layer_norm_study.csv|raw.tar.gz')
