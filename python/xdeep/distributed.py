"""torch.distributed for the decided layout (imports torch only when called)."""
import os
from dataclasses import dataclass, field

from .decision import DecisionError, decision as read_decision
from .groups import KINDS, all_groups, coordinates


@dataclass
class DistributedGroups:
    rank: int
    world_size: int
    local_rank: int
    coords: object
    decision: object
    groups: dict = field(default_factory=dict)   # kind -> torch ProcessGroup
    members: dict = field(default_factory=dict)  # kind -> ranks of this rank's group

    def __getattr__(self, name):
        if name.endswith("_group") and name[:-6] in KINDS:
            return self.groups[name[:-6]]
        raise AttributeError(name)


def _env_int(name):
    value = os.environ.get(name)
    if value is None:
        raise DecisionError(f"{name} is not set; launch through a tuned srun, or torchrun under "
                            "--xdeep-launcher=torchrun")
    return int(value)


def init_distributed(backend=None, d=None, timeout=None):
    """Starts the default process group from the rendezvous variables the
    plugin (or a per-node launcher) set, checks the world against the
    decision, and creates one process group per tp / cp / dp / pp group.
    Every rank creates every group in the same order, as torch requires."""
    import datetime

    import torch
    import torch.distributed as dist

    d = d or read_decision()
    rank, world, local_rank = _env_int("RANK"), _env_int("WORLD_SIZE"), _env_int("LOCAL_RANK")
    if world != d.ranks:
        raise DecisionError(f"WORLD_SIZE={world} but the decision has {d.ranks} ranks; the launch "
                            "was not the one xdeep decided")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
    kwargs = {"backend": backend, "init_method": "env://", "rank": rank, "world_size": world}
    if timeout is not None:
        kwargs["timeout"] = datetime.timedelta(seconds=timeout)
    if not dist.is_initialized():
        dist.init_process_group(**kwargs)
    out = DistributedGroups(rank, world, local_rank, coordinates(d, rank), d)
    for kind in KINDS:
        for ranks in all_groups(d, kind):
            group = dist.new_group(ranks=ranks)
            if rank in ranks:
                out.groups[kind] = group
                out.members[kind] = ranks
    return out
