#!/usr/bin/env bash
# The hand-off examples on one node's GPUs, with the environment the xdeep
# plugin would set (decision file, MASTER_ADDR/PORT, RANK, WORLD_SIZE,
# LOCAL_RANK, LOCAL_WORLD_SIZE; PET_* for torchrun), as on the GPU machine:
#   OUT=/some/dir examples/run_gpu_checks.sh [GPUS]     (default: all visible, at least 2)
# Runs, each checking from inside the job that ranks, groups, micro-batch and
# accumulation are the decided ones:
#   ddp_fsdp.py        srun-style (one process per GPU), ZeRO-3 decision -> FSDP
#   ddp_fsdp.py        under the real torchrun with `python3 -m xdeep emit torchrun`
#   deepspeed_train.py srun-style with ZeRO-2, then ZeRO-3; then ZeRO-1 under
#                      DeepSpeed's own launcher (deepspeed.launcher.runner --no_ssh)
#   megatron_tp_pp.py  tp=GPUS, then pp=GPUS (1F1B)
# DeepSpeed and megatron-core are used when importable (put their source trees
# on PYTHONPATH), else the examples' torch fallbacks run; XDEEP_REQUIRE_ENGINE=1
# makes a missing engine a failure. Should DeepSpeed's import fail only through
# its inference-only Triton kernels, the DeepSpeed runs are repeated with
# Triton hidden from it, and the summary says so.
# Writes $OUT/summary.txt and $OUT/gpu-checks.tar.gz (every run's log,
# decision file and step times); exits 1 when any run fails. Needs only this
# checkout (python/ and examples/) and the engines' source trees.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
results=${OUT:?set OUT to a directory for the logs}
mkdir -p "$results"
out=$(mktemp -d)
gpus=${1:-$(python3 -c 'import torch; print(torch.cuda.device_count())')}
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=2
export DS_ACCELERATOR=${DS_ACCELERATOR:-cuda}
summary="$out/summary.txt"

# engine NAME MODULE: one summary line: version and origin, or why it does not import.
engine() {
  python3 -c "import $2 as m; print('$1', getattr(m, '__version__', '?'), 'from', m.__file__)" \
    2>"$out/import-$1.err" | tail -n 1 && return 0  # the last line: DeepSpeed logs on stdout
  echo "$1: not importable: $(grep -v '^\s' "$out/import-$1.err" | tail -n 1)"
  return 1
}
{ echo "host $(hostname), $(date -u +%FT%TZ), $gpus GPUs"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device")'
  engine megatron-core megatron.core
  if ! engine deepspeed deepspeed && grep -q triton "$out/import-deepspeed.err"; then
    mkdir -p "$out/no-triton"
    echo 'raise ImportError("hidden by run_gpu_checks.sh: DeepSpeed 0.14 inference kernels")' \
      > "$out/no-triton/triton.py"
    ds_path="$out/no-triton:$PYTHONPATH"
    PYTHONPATH=$ds_path engine deepspeed deepspeed && echo "deepspeed: runs below with Triton hidden"
  fi
} > "$summary"
ds_path=${ds_path:-$PYTHONPATH}
failed=0
port=29650

# decision NAME LAUNCHER DP TP PP STAGE MICRO ACC SCHEDULE: the file the plugin would write.
decision() {
  local dir="$out/$1"; mkdir -p "$dir"
  local schedule=null; [[ $5 -gt 1 ]] && schedule="\"$9\""
  cat > "$dir/decision.json" <<JSON
{"schema": "xdeep.decision/1", "decision_id": "gpu-check-$1", "workload": "gpu-check",
 "launcher": "$2",
 "layout": {"nodes": 1, "gpus_per_node": $gpus, "ranks": $gpus, "tasks_per_node": $([[ $2 == srun ]] && echo $gpus || echo 1)},
 "parallel": {"strategy": "gpu-check", "dp": $3, "tp": $4, "pp": $5, "cp": 1, "sharding_stage": $6,
              "pipeline_schedule": $schedule, "virtual_stages": 1, "rank_order": "tp-cp-dp-pp"},
 "batch": {"micro_batch": $7, "grad_accumulation": $8, "global_batch": $(( $7 * $8 * $3 ))},
 "recompute": false, "predicted": {}}
JSON
  echo "$dir"
}

# srun_style NAME SCRIPT ARGS...: one process per GPU, the plugin's per-task variables.
srun_style() {
  local name=$1 script=$2; shift 2
  local dir="$out/$name" pids=() rc=0
  port=$((port + 1))
  for ((r = 0; r < gpus; r++)); do
    XDEEP_DECISION_FILE="$dir/decision.json" XDEEP_JOB_TMP="$dir" XDEEP_REPORT="$dir/step_times" \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$gpus LOCAL_RANK=$r \
    LOCAL_WORLD_SIZE=$gpus GROUP_RANK=0 XDEEP_NODE_RANK=0 XDEEP_NPROC_PER_NODE=$gpus \
      timeout ${RUN_TIMEOUT:-120} python3 "$root/examples/$script" "$@" > "$out/$name.rank$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  for ((r = 0; r < gpus; r++)); do cat "$out/$name.rank$r.log" >> "$out/$name.log"; done
  rm -f "$out/$name".rank*.log
  finish "$name" $rc
}

finish() {
  local name=$1 rc=$2 checks
  checks=$(grep -c '^xdeep-check ' "$out/$name.log" 2>/dev/null || true)
  if [[ $rc -eq 0 && $checks -eq $gpus ]] && ! grep -q 'xdeep-check-failed' "$out/$name.log"; then
    echo "PASS $name: $checks ranks checked; step times: $(wc -l < "$out/$name/step_times" 2>/dev/null || echo 0)" >> "$summary"
  else
    echo "FAIL $name: rc=$rc, $checks of $gpus ranks checked (see $name.log):" \
         "$(grep -E 'xdeep-check-failed|Error' "$out/$name.log" 2>/dev/null | tail -n 1)" >> "$summary"
    failed=1
  fi
}

decision fsdp srun "$gpus" 1 1 3 4 2 >/dev/null
srun_style fsdp ddp_fsdp.py --steps 5

dir=$(decision torchrun torchrun "$gpus" 1 1 0 4 2)
port=$((port + 1))
args=$(XDEEP_DECISION_FILE="$dir/decision.json" XDEEP_NODE_RANK=0 MASTER_ADDR=127.0.0.1 \
       MASTER_PORT=$port python3 -m xdeep emit torchrun)
echo "torchrun $args" > "$out/torchrun.log"
XDEEP_DECISION_FILE="$dir/decision.json" XDEEP_JOB_TMP="$dir" XDEEP_REPORT="$dir/step_times" \
  timeout ${RUN_TIMEOUT:-120} torchrun $args "$root/examples/ddp_fsdp.py" --steps 5 >> "$out/torchrun.log" 2>&1
finish torchrun $?

decision deepspeed srun "$gpus" 1 1 2 2 4 >/dev/null
PYTHONPATH=$ds_path srun_style deepspeed deepspeed_train.py --steps 5
decision deepspeed_zero3 srun "$gpus" 1 1 3 2 4 >/dev/null
PYTHONPATH=$ds_path srun_style deepspeed_zero3 deepspeed_train.py --steps 5

# The per-node launch the plugin makes for --xdeep-launcher=deepspeed: one task
# with XDEEP_NODE_RANK / XDEEP_NPROC_PER_NODE, DeepSpeed's launcher starting the
# GPUs' processes (it names the node's process count LOCAL_SIZE).
dir=$(decision deepspeed_launcher deepspeed "$gpus" 1 1 1 2 4)
port=$((port + 1))
launch=(python3 -m deepspeed.launcher.runner --no_ssh --node_rank=0 --num_nodes=1
        --num_gpus="$gpus" --master_addr=127.0.0.1 --master_port=$port)
echo "${launch[*]} examples/deepspeed_train.py --steps 5" > "$out/deepspeed_launcher.log"
PYTHONPATH=$ds_path XDEEP_DECISION_FILE="$dir/decision.json" XDEEP_JOB_TMP="$dir" \
  XDEEP_REPORT="$dir/step_times" XDEEP_NODE_RANK=0 XDEEP_NPROC_PER_NODE=$gpus \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  timeout ${RUN_TIMEOUT:-120} "${launch[@]}" "$root/examples/deepspeed_train.py" --steps 5 \
  >> "$out/deepspeed_launcher.log" 2>&1
finish deepspeed_launcher $?

decision megatron_tp srun 1 "$gpus" 1 0 2 4 >/dev/null
srun_style megatron_tp megatron_tp_pp.py --steps 3

decision megatron_pp srun 1 1 "$gpus" 0 2 4 1f1b >/dev/null
srun_style megatron_pp megatron_tp_pp.py --steps 3

tar czf "$results/gpu-checks.tar.gz" -C "$out" .
cp "$summary" "$results/summary.txt"
rm -rf "$out"
cat "$results/summary.txt"
exit $failed
