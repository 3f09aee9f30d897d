#!/usr/bin/env bash
# Printed by every task of test_options.py's jobs: what Slurm and xdeep gave
# it, as one JSON line (placement, scope and the decision's variables).
gpus=${CUDA_VISIBLE_DEVICES:-}
ngpus=0; [[ -n $gpus ]] && ngpus=$(tr ',' '\n' <<< "$gpus" | wc -l)
printf '{"node":"%s","procid":%s,"ntasks":%s,"nnodes":%s,"gpus_on_node":%s,' \
  "${SLURMD_NODENAME:-}" "${SLURM_PROCID:-0}" "${SLURM_NTASKS:-0}" "${SLURM_NNODES:-0}" "$ngpus"
printf '"cpus_per_task":"%s","partition":"%s","account":"%s","cwd":"%s","marker":"%s",' \
  "${SLURM_CPUS_PER_TASK:-}" "${SLURM_JOB_PARTITION:-}" "${SLURM_JOB_ACCOUNT:-}" "$PWD" \
  "${XDEEP_IT_MARKER:-}"
printf '"xdeep_nodes":"%s","xdeep_tasks":"%s","xdeep_gpn":"%s","xdeep_tuned":"%s","decision":"%s"}\n' \
  "${XDEEP_NODES:-}" "${XDEEP_TASKS:-}" "${XDEEP_GPUS_PER_NODE:-}" "${XDEEP_TUNED:-}" \
  "${XDEEP_DECISION_ID:-}"
