#!/usr/bin/env bash
# Decisions per second of two xdeepd binaries, one after the other on one local
# stack (scripts/local-stack.sh, started here), each on a fresh ledger, with the
# same client (BUILD's decisions_bench): repeated / varied / unique advise and
# varied auto. Then both decide the ten --picks requests; the picks must match.
#   bench/daemon/compare_daemons.sh STACK_DIR BUILD_DIR BASELINE_XDEEPD [SECONDS] [CLIENTS] [ROUNDS]
# The load average is printed beside every run (a shared machine).
# BASELINE_BENCH=FILE: the baseline daemon is measured with that client
# instead (an older decisions_bench: the clients' own cost before and after).
# RUNS="advise repeated,advise varied": only those of the four runs.
# BENCH_ARGS="--credentials-before 8000": more options for every run's bench.
# HEAVY=1: instead of the four runs, integration.bounded's --heavy run (four
# worst-case clients with 40 ms deadlines beside four ordinary ones, 8,000
# ordinary calls of each kind in 16 windows): each run's ordinary p99 alone,
# beside them, and the ratio (issue #27: within 2x).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 3 ]] || { sed -n '5,6p' "$0" >&2; exit 2; }
stack=$(realpath -m "$1") build=$(realpath "$2") baseline=$(realpath "$3")
seconds=${4:-3} clients=${5:-16} rounds=${6:-1}
bench=$build/bench/daemon/decisions_bench
baseline_bench=$(realpath "${BASELINE_BENCH:-$bench}")
IFS=, read -r -a runs <<< "${RUNS:-advise repeated,advise varied,advise unique,auto varied}"
[[ -x $bench && -x $build/daemon/xdeepd && -x $baseline ]] || {
  echo "compare_daemons: needs $bench, $build/daemon/xdeepd and $baseline" >&2; exit 2; }
sock=$stack/xdeepd.sock

"$root/scripts/local-stack.sh" start "$stack" "$build" --nodes 2 > /dev/null
trap '"$root/scripts/local-stack.sh" stop "$stack" > /dev/null 2>&1 || true' EXIT
source "$stack/env"
export SLURM_CONF

# Replaces the running xdeepd (this stack's, started by this script) by `$1`
# on an empty ledger.
restart_daemon() {
  local pid
  pid=$(cat "$stack/run/xdeepd.fgpid")
  kill "$pid" 2> /dev/null || true
  while kill -0 "$pid" 2> /dev/null; do sleep 0.1; done
  rm -f "$stack"/xdeep.db "$stack"/xdeep.db-wal "$stack"/xdeep.db-shm "$sock"
  setsid setpriv --reuid=xdeepd --regid=xdeepd --init-groups "$1" --config "$stack/xdeepd.toml" \
    >> "$stack/xdeepd.out" 2>&1 < /dev/null &
  echo $! > "$stack/run/xdeepd.fgpid"
  for _ in $(seq 100); do [[ -S $sock ]] && return 0; sleep 0.1; done
  echo "compare_daemons: $1 did not start" >&2
  exit 1
}

measure() {  # label binary
  restart_daemon "$2"
  local pid bench=$bench
  [[ $label == baseline ]] && bench=$baseline_bench
  pid=$(cat "$stack/run/xdeepd.fgpid")
  if [[ -n ${HEAVY:-} ]]; then
    echo "== daemon $label, heavy, load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bench" --daemon "unix://$sock" --clients 4 --seconds 2 --mix varied --heavy 4 \
      --heavy-workload "$root/bench/daemon/worst_case.toml" --heavy-deadline-ms 40 \
      --heavy-samples 8000 --heavy-windows 16 | tail -n 5 || true
    return
  fi
  for run in "${runs[@]}"; do
    set -- $run
    echo "== daemon $label, mode $1, mix $2, load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bench" --daemon "unix://$sock" --clients "$clients" --seconds "$seconds" --mode "$1" \
      --mix "$2" --cpu-of xdeepd="$pid" --cpu-of munged="$(pgrep -xo munged)" ${BENCH_ARGS:-} \
      | tail -n +2 || true
  done
}

for round in $(seq "$rounds"); do
  for label in baseline new; do
    if [[ $label == baseline ]]; then measure "$label" "$baseline"; else measure "$label" "$build/daemon/xdeepd"; fi
  done
done

for label in baseline new; do
  restart_daemon "$([[ $label == baseline ]] && echo "$baseline" || echo "$build/daemon/xdeepd")"
  "$bench" --daemon "unix://$sock" --picks > "$stack/picks.$label.txt"
done
if diff -q "$stack/picks.baseline.txt" "$stack/picks.new.txt" > /dev/null; then
  echo "== picks: the ten requests decided identically ($(wc -l < "$stack/picks.new.txt") lines, $stack/picks.new.txt)"
else
  echo "== picks DIFFER:"
  diff "$stack/picks.baseline.txt" "$stack/picks.new.txt" || true
  exit 1
fi
