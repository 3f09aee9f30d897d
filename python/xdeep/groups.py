"""Which ranks form which group, as pure functions of the decision.

Ranks are laid out in the order tp-cp-dp-pp (Megatron-LM's default): the
tensor-parallel coordinate varies fastest, so a TP group is contiguous ranks
on one node, then context, data and pipeline parallel:

    rank = tp + TP * (cp + CP * (dp + DP * pp))
"""
from dataclasses import dataclass

KINDS = ("tp", "cp", "dp", "pp")


@dataclass(frozen=True)
class RankCoordinates:
    tp: int
    cp: int
    dp: int
    pp: int


def _sizes(d):
    return {"tp": d.tp, "cp": d.cp, "dp": d.dp, "pp": d.pp}


def coordinates(d, rank):
    """The tp / cp / dp / pp coordinates of `rank` in decision `d`."""
    if not 0 <= rank < d.ranks:
        raise ValueError(f"rank {rank} is outside the decision's {d.ranks} ranks")
    left, coords = rank, {}
    for kind in KINDS:
        size = _sizes(d)[kind]
        coords[kind] = left % size
        left //= size
    return RankCoordinates(**coords)


def rank_of(d, coords):
    sizes = _sizes(d)
    rank, stride = 0, 1
    for kind in KINDS:
        rank += getattr(coords, kind) * stride
        stride *= sizes[kind]
    return rank


def group_ranks(d, kind, rank):
    """The ranks of `rank`'s `kind` group (tp, cp, dp or pp), in order."""
    if kind not in KINDS:
        raise ValueError(f"unknown group kind {kind!r}; use one of {', '.join(KINDS)}")
    me = coordinates(d, rank)
    out = []
    for i in range(_sizes(d)[kind]):
        fields = {k: getattr(me, k) for k in KINDS}
        fields[kind] = i
        out.append(rank_of(d, RankCoordinates(**fields)))
    return out


def all_groups(d, kind):
    """Every `kind` group, each once, ordered by its first rank (the order in
    which every rank must create them with torch.distributed.new_group)."""
    seen, groups = set(), []
    for rank in range(d.ranks):
        g = tuple(group_ranks(d, kind, rank))
        if g not in seen:
            seen.add(g)
            groups.append(list(g))
    return groups
