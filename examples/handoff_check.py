"""Shared by the hand-off examples: what each rank checks against the
decision from inside the job, printed as one JSON line per rank
("xdeep-check {...}") that the integration tests and run_gpu_checks.sh read."""
import json
import os
import sys

import xdeep


def fail(message):
    print(f"xdeep-check-failed: rank {os.environ.get('RANK', '?')}: {message}", file=sys.stderr)
    sys.exit(3)


def local_world_size():
    """Processes on this node: LOCAL_WORLD_SIZE (srun through the plugin,
    torchrun), or LOCAL_SIZE, the name DeepSpeed's launcher gives it."""
    return int(os.environ.get("LOCAL_WORLD_SIZE") or os.environ.get("LOCAL_SIZE") or "0")


def check_world(d, world_size, rank):
    """The processes torch sees are the ones xdeep decided."""
    if world_size != d.ranks:
        fail(f"world size {world_size}, decision {d.ranks} ranks")
    if not 0 <= rank < d.ranks:
        fail(f"rank {rank} outside the decision's {d.ranks}")
    local = int(os.environ.get("LOCAL_RANK", "-1"))
    local_world = local_world_size()
    if local_world != d.gpus_per_node or not 0 <= local < local_world:
        fail(f"LOCAL_RANK {local} of LOCAL_WORLD_SIZE {local_world}, decision "
             f"{d.gpus_per_node} GPUs per node")


def record(d, example, **extra):
    row = {
        "example": example,
        "decision": d.decision_id,
        "launcher": d.launcher,
        "rank": int(os.environ["RANK"]),
        "world": int(os.environ["WORLD_SIZE"]),
        "local_rank": int(os.environ["LOCAL_RANK"]),
        "local_world": local_world_size(),
        "master": f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}",
        "decision_file": os.environ.get("XDEEP_DECISION_FILE", ""),
        "slurm_task": os.environ.get("SLURM_PROCID", ""),
        "micro_batch": d.micro_batch,
        "grad_accumulation": d.grad_accumulation,
        "global_batch": d.global_batch,
    }
    row.update(extra)
    # One write per line: ranks sharing a stdout must not interleave inside it.
    sys.stdout.write("xdeep-check " + json.dumps(row, sort_keys=True) + "\n")
    sys.stdout.flush()
