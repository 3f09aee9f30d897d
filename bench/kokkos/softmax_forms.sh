#!/usr/bin/env bash
# A short device call for the softmax's forms (issue 26, from run 19), where run_device.sh's
# full bench is not needed: the Kokkos probe's unit tests and the CUDA probes' bandwidth
# tests on the device (every row form and twin against the reference), ROUNDS rounds of
# softmax_study over FORMS at 256 MiB and 1 GiB (medians against REFERENCES, the CUDA twins:
# study_summary.py), Nsight Compute's instruction and issue figures for NCU_FORMS at 1 GiB
# where the GPU machine has ncu, and (PROBE_ROUNDS > 0, from run 20) the probe itself:
# `xdeep-probe compute --suite memory` at 256 MiB and 1 GiB, PROBE_ROUNDS rounds, with
# torch's softmax (TORCH=0: not) and compare.py.
# About 75 s on an H200 with the defaults; every step has a timeout.
#   XDEEP_CARRY=build-kokkos-device/carry OUT=... bash bench/kokkos/softmax_forms.sh
# FORMS (comma-separated), REFERENCES, NCU_FORMS (space-separated; empty: none), ROUNDS,
# PROBE_ROUNDS and TORCH override the defaults below. Leaves four files under $OUT: log.txt,
# summary.csv (the study's medians), probe_summary.csv (compare.py's) and raw.tar.gz
# (study.csv, the probe reports, torch.json, the tests' XML, ncu_softmax_<form>.csv).
set -u
OUT=${OUT:-/tmp/xdeep-softmax-forms}
mkdir -p "$OUT"
carry=${XDEEP_CARRY:-build-kokkos-device/carry}
[[ -x $carry/softmax_study ]] || { echo "no $carry/softmax_study (bench/kokkos/pack_carry.sh)"; exit 1; }
forms=${FORMS:-cuda_twin,twin_resident,twin_resident_wide,kokkos_resident,kokkos_resident_wide,kokkos_resident_team_reduce,kokkos_lanes,kokkos_wide}
references=${REFERENCES:-cuda_twin twin_resident twin_resident_wide}
ncu_forms=${NCU_FORMS-twin_resident kokkos_resident}
# cuBLASLt and NCCL for xdeep-probe and the CUDA probes' tests: the GPU machine's, or torch's wheels'.
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$(cd "$carry" && pwd)/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib:$tlib/nccl/lib
source bench/relative_paths.sh
trap 'relative_paths_in "$OUT"' EXIT
relative_log "$OUT/log.txt"
el() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
# The time line goes to stderr (the log), never into a step's redirected output.
t() { local s=$EPOCHREALTIME; "$@"; local rc=$?; echo "[time] $(el $s) s rc=$rc: $*" >&2; return $rc; }
echo "== $(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
echo "== Kokkos probe unit tests on the device"
t timeout 60 $carry/profiler_kokkos_probes_test --gtest_output=xml:$OUT/kokkos_tests.xml | tail -3
echo "== CUDA bandwidth probes' unit tests (the twins' data checks)"
t timeout 60 $carry/profiler_gpu_probes_test --gtest_filter='*DeviceBandwidth*' \
  --gtest_output=xml:$OUT/cuda_bandwidth_test.xml | tail -3
for round in $(seq "${ROUNDS:-3}"); do
  echo "== softmax_study round $round: $forms"
  t timeout 60 $carry/softmax_study --row-length 4096 --sizes 256,1024 --forms "$forms" \
    > $OUT/study_round.csv || echo "softmax_study failed"
  if [[ $round == 1 ]]; then cat $OUT/study_round.csv > $OUT/study.csv
  else tail -n +2 $OUT/study_round.csv >> $OUT/study.csv; fi
done
rm -f $OUT/study_round.csv
refs=()
for r in $references; do refs+=(--reference "$r"); done
python3 bench/kokkos/study_summary.py $OUT/study.csv "${refs[@]}" --out $OUT/summary.csv
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
metrics+=,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sector_hit_rate.pct,lts__t_sectors_op_read.sum
metrics+=,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread
metrics+=,launch__occupancy_limit_registers,sm__cycles_elapsed.avg.per_second
metrics+=,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
for form in $ncu_forms; do
  [[ -n $ncu ]] || { echo "== ncu: not found"; break; }
  echo "== ncu: $form, 1 GiB"
  t timeout 40 "$ncu" --metrics "$metrics" --kernel-name-base demangled \
    -k regex:'SoftmaxForm|SoftmaxRows|TwinSoftmax|SoftmaxResident' --launch-skip 3 --launch-count 1 \
    --csv $carry/softmax_study --sizes 1024 --forms $form > $OUT/ncu_softmax_$form.csv 2>&1
  grep -E '^"[0-9]' $OUT/ncu_softmax_$form.csv | awk -F'","' '{print $(NF-2), $(NF-1), $NF}'
done
probe_rounds=${PROBE_ROUNDS:-3}
if ((probe_rounds > 0)); then
  mkdir -p $OUT/probe
  for size in 256 1024; do
    for round in $(seq "$probe_rounds"); do
      echo "== xdeep-probe memory suite, ${size} MiB per array, round $round"
      t timeout 60 $carry/xdeep-probe compute --suite memory --device-bytes ${size}M \
        --row-length 4096 --samples 30 --out $OUT/probe/memory_${size}M_r$round.json | tail -2
    done
    if [[ ${TORCH:-1} != 0 ]]; then
      echo "== torch's softmax, ${size} MiB"
      t timeout 40 python3 bench/kokkos/torch_memory.py --elements $((size * 1024 * 1024 / 4)) \
        --row-length 4096 --rounds 2 --kernels softmax --out $OUT/probe/torch_${size}M.json | tail -2
    fi
  done
  shopt -s nullglob
  torch_runs=($OUT/probe/torch_*.json)
  echo "== comparison (compare.py)"
  python3 bench/kokkos/compare.py --probe $OUT/probe/memory_*.json --torch "${torch_runs[@]}" \
    --out $OUT/probe_summary.csv
fi
relative_paths_in "$OUT"
cd "$OUT" && tar -czf raw.tar.gz --remove-files \
  $(ls | grep -vxE 'log.txt|summary.csv|probe_summary.csv|raw.tar.gz')
