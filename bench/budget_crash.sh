#!/usr/bin/env bash
# Crash safety of strict budgets at scale: ROUNDS times, LAUNCHES concurrent
# tuned sbatch jobs on the strict partition of a local stack while xdeepd is
# SIGKILLed KILLS times at random points and restarted; after each round every
# job Slurm ran must be charged exactly once (tests/integration/test_hostile.py,
# CrashTest, which CI runs with 16 launches and 2 kills).
#   bench/budget_crash.sh [BUILD_DIR] [ROUNDS] [LAUNCHES] [KILLS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
rounds=${2:-20} launches=${3:-200} kills=${4:-3}
dir=$(mktemp -d /tmp/xdeep-crash.XXXXXX)
trap '"$root/scripts/local-stack.sh" stop "$dir"; rm -rf "$dir"' EXIT
env -u SLURM_CONF "$root/scripts/local-stack.sh" start "$dir" "$build" --nodes 3 --gpus 4 > /dev/null
cd "$root/tests/integration"
for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds: $launches launches, $kills kills"
  XDEEP_IT_DIR=$dir XDEEP_BUILD_DIR=$build XDEEP_SOURCE_DIR=$root PYTHONDONTWRITEBYTECODE=1 \
  XDEEP_CRASH_SEED=$round XDEEP_CRASH_LAUNCHES=$launches XDEEP_CRASH_KILLS=$kills \
    python3 -m unittest -q test_hostile.CrashTest
done
echo "budget_crash: $rounds rounds passed"
