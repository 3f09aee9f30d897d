#!/usr/bin/env bash
# A short device call for the softmax's forms alone (issue 26, from run 19), where
# run_device.sh's full bench is not needed: the Kokkos probe's unit tests on the device
# (every row form against the reference), ROUNDS rounds of softmax_study over FORMS at
# 256 MiB and 1 GiB (medians against the CUDA twin: study_summary.py), and Nsight Compute's
# instruction and issue figures for NCU_FORMS at 1 GiB where the GPU machine has ncu.
# About 20 s on an H200; every step has a timeout.
#   XDEEP_CARRY=build-kokkos-device/carry OUT=... bash bench/kokkos/softmax_forms.sh
# FORMS (comma-separated), NCU_FORMS (space-separated; empty: none) and ROUNDS override the
# defaults below. Writes log.txt, study.csv (the rounds one after another), summary.csv,
# kokkos_tests.xml and ncu_softmax_<form>.csv under $OUT.
set -u
OUT=${OUT:-/tmp/xdeep-softmax-forms}
mkdir -p "$OUT"
carry=${XDEEP_CARRY:-build-kokkos-device/carry}
[[ -x $carry/softmax_study ]] || { echo "no $carry/softmax_study (bench/kokkos/pack_carry.sh)"; exit 1; }
forms=${FORMS:-cuda_twin,twin_kokkos_reduce,kokkos_probe,kokkos_compact,kokkos_lanes,kokkos_wide}
ncu_forms=${NCU_FORMS-cuda_twin kokkos_wide}
export LD_LIBRARY_PATH=$(cd "$carry" && pwd)/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source bench/relative_paths.sh
trap 'relative_paths_in "$OUT"' EXIT
relative_log "$OUT/log.txt"
echo "== $(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv
echo "== Kokkos probe unit tests on the device"
timeout 60 $carry/profiler_kokkos_probes_test --gtest_output=xml:$OUT/kokkos_tests.xml | tail -3
for round in $(seq "${ROUNDS:-3}"); do
  echo "== softmax_study round $round: $forms"
  timeout 60 $carry/softmax_study --row-length 4096 --sizes 256,1024 --forms "$forms" \
    > $OUT/study_round.csv || echo "softmax_study failed (rc $?)"
  if [[ $round == 1 ]]; then cat $OUT/study_round.csv > $OUT/study.csv
  else tail -n +2 $OUT/study_round.csv >> $OUT/study.csv; fi
done
rm -f $OUT/study_round.csv
python3 bench/kokkos/study_summary.py $OUT/study.csv --reference cuda_twin --out $OUT/summary.csv
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
metrics+=,dram__bytes_read.sum,l1tex__t_sector_hit_rate.pct,lts__t_sectors_op_read.sum
metrics+=,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread
metrics+=,launch__occupancy_limit_registers,sm__cycles_elapsed.avg.per_second
for form in $ncu_forms; do
  [[ -n $ncu ]] || { echo "== ncu: not found"; break; }
  echo "== ncu: $form, 1 GiB"
  timeout 40 "$ncu" --metrics "$metrics" --kernel-name-base demangled \
    -k regex:'SoftmaxForm|SoftmaxRows|TwinSoftmax' --launch-skip 3 --launch-count 1 --csv \
    $carry/softmax_study --sizes 1024 --forms $form > $OUT/ncu_softmax_$form.csv 2>&1
  grep -E '^"[0-9]' $OUT/ncu_softmax_$form.csv | awk -F'","' '{print $(NF-2), $(NF-1), $NF}'
done
