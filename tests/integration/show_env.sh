#!/usr/bin/env bash
# Printed by every task of a test job: what Slurm and xdeep gave it, as JSON.
gpus=${CUDA_VISIBLE_DEVICES:-}
ngpus=0; [[ -n $gpus ]] && ngpus=$(tr ',' '\n' <<< "$gpus" | wc -l)
printf '{"node":"%s","procid":%s,"ntasks":%s,"nnodes":%s,"gpus_on_node":%s,' \
  "${SLURMD_NODENAME:-}" "${SLURM_PROCID:-0}" "${SLURM_NTASKS:-0}" "${SLURM_NNODES:-0}" "$ngpus"
printf '"xdeep_nodes":"%s","xdeep_tasks":"%s","xdeep_gpn":"%s","xdeep_strategy":"%s",' \
  "${XDEEP_NODES:-}" "${XDEEP_TASKS:-}" "${XDEEP_GPUS_PER_NODE:-}" "${XDEEP_STRATEGY:-}"
printf '"xdeep_dp":"%s","xdeep_mb":"%s","xdeep_accum":"%s","xdeep_batch":"%s","decision":"%s"}\n' \
  "${XDEEP_DP:-}" "${XDEEP_MICRO_BATCH:-}" "${XDEEP_GRAD_ACCUM:-}" "${XDEEP_GLOBAL_BATCH:-}" \
  "${XDEEP_DECISION_ID:-}"
