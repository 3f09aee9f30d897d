#!/usr/bin/env bash
# A real Slurm cluster on this host: one slurmctld and several slurmd (Debian's
# Slurm is built with --enable-multiple-slurmd), fake GPUs through gres, MUNGE
# authentication. Everything lives in one directory and is stopped by PID.
#
#   scripts/slurm-cluster.sh start DIR [--nodes N] [--gpus G] [--cpus C] [--plugstack FILE]
#                                      [--extra-partition NAME]   (all nodes, not default)
#                                      [--job-submit LUA] (slurmctld's job_submit/lua script)
#                                      [--jobcomp SCRIPT] (jobcomp/script: run once per finished job)
#   scripts/slurm-cluster.sh stop DIR
#
# After start, `source DIR/env` sets SLURM_CONF for every Slurm command.
set -euo pipefail

usage() { sed -n '6,12p' "$0" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
action=$1 dir=$(realpath -m "$2"); shift 2

# Daemon ports come from 10000-19999: not the ephemeral range (32768 up) and
# not the steps' rendezvous ports (local-stack.sh, 20000-32699).
free_port_block() {  # prints a base port P such that P..P+count are all free
  local count=$1
  python3 - "$count" <<'PY'
import random, socket, sys
count = int(sys.argv[1]) + 1
for _ in range(200):
    base = random.randrange(10000, 20000 - count)
    ok = True
    for p in range(base, base + count):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                ok = False
                break
    if ok:
        print(base)
        sys.exit(0)
sys.exit("no free block of ports")
PY
}

start_munge() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return; fi
  [[ -f /etc/munge/munge.key ]] || { mkdir -p /etc/munge; dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none; chown munge: /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
  mkdir -p /run/munge /var/log/munge /var/lib/munge; chown munge: /run/munge /var/log/munge /var/lib/munge
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return; sleep 0.1; done
  echo "slurm-cluster: munged did not come up" >&2; exit 1
}

wait_idle() {
  local want=$1
  for _ in $(seq 150); do
    local idle
    idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l || true)
    [[ $idle -ge $want ]] && return 0
    sleep 0.2
  done
  echo "slurm-cluster: nodes not idle after 30 s; see $dir/log" >&2
  sinfo -N >&2 || true
  return 1
}

case $action in
start)
  nodes=2 gpus=4 cpus=4 plugstack="" extra="" job_submit="" jobcomp=""
  while [[ $# -gt 0 ]]; do
    case $1 in
      --nodes) nodes=$2; shift 2 ;;
      --gpus) gpus=$2; shift 2 ;;
      --cpus) cpus=$2; shift 2 ;;
      --plugstack) plugstack=$(realpath "$2"); shift 2 ;;
      --extra-partition) extra=$2; shift 2 ;;
      --job-submit) job_submit=$(realpath "$2"); shift 2 ;;
      --jobcomp) jobcomp=$(realpath "$2"); shift 2 ;;
      *) usage ;;
    esac
  done
  # A fresh cluster: jobs left in the state of an earlier run (a requeued
  # job waiting out its credentials) would keep a node from becoming idle.
  rm -rf "$dir/state" "$dir/spool"
  mkdir -p "$dir"/{log,run,state,dev}
  start_munge
  base=$(free_port_block $((nodes + 1)))
  host=$(hostname -s)
  last_gpu=$((gpus - 1))
  for g in $(seq 0 $last_gpu); do ln -sf /dev/null "$dir/dev/fakegpu$g"; done
  for n in $(seq 1 "$nodes"); do mkdir -p "$dir/spool/n$n"; done
  [[ -n $plugstack ]] || { plugstack=$dir/plugstack.conf; : > "$plugstack"; }
  cat > "$dir/slurm.conf" <<CONF
ClusterName=xdeeptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
MailProg=/bin/true
GresTypes=gpu
PlugStackConfig=$plugstack
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=10
NodeName=n[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((base + 1))-$((base + nodes))] CPUs=$cpus RealMemory=4000 Gres=gpu:$gpus
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  [[ -z $extra ]] || echo "PartitionName=$extra Nodes=ALL Default=NO MaxTime=INFINITE State=UP" >> "$dir/slurm.conf"
  # job_submit/lua reads job_submit.lua beside slurm.conf.
  if [[ -n $job_submit ]]; then
    [[ $job_submit == "$dir/job_submit.lua" ]] || cp "$job_submit" "$dir/job_submit.lua"
    echo "JobSubmitPlugins=lua" >> "$dir/slurm.conf"
  fi
  [[ -z $jobcomp ]] || printf 'JobCompType=jobcomp/script\nJobCompLoc=%s\n' "$jobcomp" >> "$dir/slurm.conf"
  cat > "$dir/gres.conf" <<CONF
AutoDetect=off
NodeName=n[1-$nodes] Name=gpu File=$dir/dev/fakegpu[0-$last_gpu]
CONF
  echo "export SLURM_CONF=$dir/slurm.conf" > "$dir/env"
  export SLURM_CONF=$dir/slurm.conf
  setsid /usr/sbin/slurmctld -D -i > "$dir/log/slurmctld.out" 2>&1 < /dev/null &
  echo $! > "$dir/run/slurmctld.fgpid"
  for n in $(seq 1 "$nodes"); do
    setsid /usr/sbin/slurmd -D -N "n$n" > "$dir/log/slurmd-n$n.out" 2>&1 < /dev/null &
    echo $! > "$dir/run/slurmd-n$n.fgpid"
  done
  wait_idle "$nodes"
  echo "slurm-cluster: $nodes nodes x $gpus fake GPUs up in $dir (slurmctld port $base)"
  ;;
stop)
  shopt -s nullglob
  pids=()
  for f in "$dir"/run/*.fgpid; do
    pid=$(cat "$f"); rm -f "$f"
    # Only a process of this cluster: a pid recorded by a run that ended long
    # ago may belong to another process now (another checkout's slurmd, say).
    conf=$( (tr '\0' '\n' < "/proc/$pid/environ") 2>/dev/null | sed -n 's/^SLURM_CONF=//p' | head -1 || true)
    if [[ -n $conf && $(realpath -m "$conf") == "$dir/slurm.conf" ]]; then pids+=("$pid"); fi
  done
  [[ ${#pids[@]} -gt 0 ]] || exit 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && exit 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
  ;;
*) usage ;;
esac
