#!/usr/bin/env bash
# Crash safety of strict budgets at scale (issue 23, item 4): ROUNDS times,
# LAUNCHES concurrent tuned sbatch jobs on the strict partition of a local
# stack, with a budget that covers half of them at once, while xdeepd is
# SIGKILLed KILLS times at random points and restarted. After each round every
# job Slurm ran is charged exactly once as Slurm recorded it, the budget never
# held more than its limit, and every hold returned
# (tests/integration/test_hostile.py, CrashTest; CI runs it with 16 launches
# and 2 kills). Launches ask for the cheapest layout (--xdeep-cost-tolerance=0:
# one node), so jobs run side by side on the NODES simulated nodes.
#   bench/budget_crash.sh [BUILD_DIR] [ROUNDS] [LAUNCHES] [KILLS] [NODES]
# Results: bench/budget_crash.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
rounds=${2:-20} launches=${3:-200} kills=${4:-3} nodes=${5:-3}
dir=$(mktemp -d /tmp/xdeep-crash.XXXXXX)
trap '"$root/scripts/local-stack.sh" stop "$dir"; rm -rf "$dir"' EXIT
env -u SLURM_CONF "$root/scripts/local-stack.sh" start "$dir" "$build" --nodes "$nodes" --gpus 4 \
  > /dev/null
cd "$root/tests/integration"
passed=0
t_all=$(date +%s)
for round in $(seq 1 "$rounds"); do
  t0=$(date +%s)
  echo "round $round of $rounds: $launches launches, $kills kills ($(date -u +%H:%M:%S) UTC)"
  if XDEEP_IT_DIR=$dir XDEEP_BUILD_DIR=$build XDEEP_SOURCE_DIR=$root PYTHONDONTWRITEBYTECODE=1 \
     XDEEP_CRASH_SEED=$round XDEEP_CRASH_LAUNCHES=$launches XDEEP_CRASH_KILLS=$kills \
       python3 -m unittest -q test_hostile.CrashTest 2>&1 | grep -v '^$'; then
    passed=$((passed + 1))
  fi
  echo "round $round: $(( $(date +%s) - t0 )) s"
done
echo "budget_crash: $passed of $rounds rounds passed in $(( $(date +%s) - t_all )) s" \
  "($launches launches, $kills kills, $nodes nodes)"
[[ $passed -eq $rounds ]]
