#!/usr/bin/env bash
# The whole product on this host: a Slurm cluster (several slurmd, fake GPUs),
# xdeepd, and the plugin in the cluster's plugstack.
#   scripts/local-stack.sh start DIR BUILD_DIR [--nodes N] [--gpus G]
#   scripts/local-stack.sh stop DIR
# After start: `source DIR/env` (SLURM_CONF); the daemon listens on DIR/xdeepd.sock.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { sed -n '4,5p' "$0" >&2; exit 2; }
action=$1 dir=$(realpath -m "$2")

case $action in
start)
  build=$(realpath "$3"); shift 3
  mkdir -p "$dir"
  cat > "$dir/plugstack.conf" <<CONF
required $build/spank_plugin/xdeep_spank.so daemon=unix://$dir/xdeepd.sock timeout_ms=3000 fail=open verify_steps=on
CONF
  cat > "$dir/xdeepd.toml" <<CONF
[server]
listen = "unix://$dir/xdeepd.sock"
ledger_interval_s = 2
[store]
path = "$dir/xdeep.db"
[log]
level = "info"
file = "$dir/xdeepd.log"
[hardware]
profile = "h100-sxm"
[policy]
max_nodes = 64
price_per_gpu_hour = 2.5
currency = "EUR"
admins = ["root"]
budget_period = "monthly"
# Partition "strict": budgets refuse, and every step needs a reservation.
[policy.partition.strict]
enforcement = "strict"
[budget.user."*"]
limit = 1000000
[budget.user.xdeep-poor]
limit = 5
[probes]
partition = "debug"
time_limit_s = 60
probe_path = "$build/profiler/xdeep-probe"
reports_dir = "$dir/reports"
CONF
  "$root/scripts/slurm-cluster.sh" start "$dir" --plugstack "$dir/plugstack.conf" \
    --extra-partition strict "$@"
  source "$dir/env"
  export SLURM_CONF
  setsid "$build/daemon/xdeepd" --config "$dir/xdeepd.toml" > "$dir/xdeepd.out" 2>&1 < /dev/null &
  echo $! > "$dir/run/xdeepd.fgpid"
  for _ in $(seq 100); do
    [[ -S $dir/xdeepd.sock ]] && { echo "local-stack: xdeepd up on unix://$dir/xdeepd.sock"; exit 0; }
    kill -0 "$(cat "$dir/run/xdeepd.fgpid")" 2>/dev/null || break
    sleep 0.1
  done
  echo "local-stack: xdeepd did not start:" >&2
  cat "$dir/xdeepd.out" >&2
  exit 1
  ;;
stop)
  "$root/scripts/slurm-cluster.sh" stop "$dir"
  ;;
*) sed -n '4,5p' "$0" >&2; exit 2 ;;
esac
