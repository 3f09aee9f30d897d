#!/usr/bin/env bash
# The whole product on this host: a Slurm cluster (several slurmd, fake GPUs),
# xdeepd running as its own user (xdeepd), the plugin in the cluster's
# plugstack, and the controller-side hooks: job_submit.lua (strict partitions
# admit only jobs with a reservation) and the jobcomp script (charges settle
# from slurmctld's record of each finished job).
#   scripts/local-stack.sh start DIR BUILD_DIR [--nodes N] [--gpus G]
#   scripts/local-stack.sh stop DIR
# After start: `source DIR/env` (SLURM_CONF); the daemon listens on DIR/xdeepd.sock.
# XDEEP_STACK_LEDGER_INTERVAL_S: how often xdeepd settles finished jobs (its
# squeue --json); 2 s here so that tests see charges at once (default 60).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { sed -n '4,5p' "$0" >&2; exit 2; }
action=$1 dir=$(realpath -m "$2")
daemon_user=xdeepd

case $action in
start)
  build=$(realpath "$3"); shift 3
  # A run that was interrupted (ctest killed before its cleanup step) left its
  # daemons running: a leftover xdeepd would claim the new jobcomp spool and
  # keep the new one from starting (before the spool lock, it took its records).
  "$root/scripts/slurm-cluster.sh" stop "$dir"
  mkdir -p "$dir"
  # The daemon's own user owns its ledger, log and spool; Slurm runs as root.
  id -u "$daemon_user" >/dev/null 2>&1 || useradd --system -M -s /usr/sbin/nologin "$daemon_user"
  # A fresh stack: slurm-cluster.sh starts Slurm's job ids at 1 again. The
  # daemon's files go too: one left by an earlier run (another owner, say)
  # would keep the daemon from opening its own.
  rm -rf "$dir/jobcomp" "$dir/reports" "$dir"/xdeep.db "$dir"/xdeep.db-wal "$dir"/xdeep.db-shm \
    "$dir"/xdeep.db.xdeepd.lock \
    "$dir"/xdeepd.log "$dir"/xdeepd.out "$dir"/xdeepd.sock "$dir"/xdeepd.sock.admit
  mkdir -p "$dir/jobcomp"
  chown "$daemon_user": "$dir" "$dir/jobcomp"
  chmod 0755 "$dir"
  chmod 0700 "$dir/jobcomp"
  # Stacks of several checkouts share this host and all number jobs from 1:
  # each draws its steps' MASTER_PORTs from its own range, below the
  # kernel's ephemeral ports (where srun's and gRPC's sockets land) and above
  # the block slurm-cluster.sh gives the daemons.
  ports=$((20000 + (RANDOM % 127) * 100))
  cat > "$dir/plugstack.conf" <<CONF
required $build/spank_plugin/xdeep_spank.so daemon=unix://$dir/xdeepd.sock timeout_ms=3000 fail=open rendezvous_ports=$ports-$((ports + 99))
CONF
  sed -e "s|^local ADMIT = .*|local ADMIT = \"$build/spank_plugin/xdeep-admit\"|" \
      -e "s|^local ADMIT_SOCKET = .*|local ADMIT_SOCKET = \"$dir/xdeepd.sock.admit\"|" \
      -e "s|^local STRICT = .*|local STRICT = { strict = true }|" \
      "$root/etc/slurm/job_submit.lua" > "$dir/job_submit.lua"
  sed -e "s|^spool=.*|spool=$dir/jobcomp|" -e "s|^slurm_conf=.*|slurm_conf=$dir/slurm.conf|" \
      "$root/etc/slurm/xdeep-jobcomp.sh" > "$dir/xdeep-jobcomp.sh"
  chmod 0755 "$dir/xdeep-jobcomp.sh"
  cat > "$dir/xdeepd.toml" <<CONF
[server]
listen = "unix://$dir/xdeepd.sock"
ledger_interval_s = ${XDEEP_STACK_LEDGER_INTERVAL_S:-2}
[store]
path = "$dir/xdeep.db"
jobcomp_spool = "$dir/jobcomp"
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
# Partition "strict": budgets refuse, and slurmctld admits only jobs holding a reservation.
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
    --extra-partition strict --job-submit "$dir/job_submit.lua" --jobcomp "$dir/xdeep-jobcomp.sh" "$@"
  source "$dir/env"
  export SLURM_CONF
  # setpriv execs (no wrapper process): the recorded pid is the daemon's own.
  setsid setpriv --reuid="$daemon_user" --regid="$daemon_user" --init-groups \
    "$build/daemon/xdeepd" --config "$dir/xdeepd.toml" \
    > "$dir/xdeepd.out" 2>&1 < /dev/null &
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
