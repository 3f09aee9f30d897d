"""Megatron's tensor-parallel f and g (Shoeybi et al. 2019, section 3) for the bench's
hand-split GPT blocks (tp_overhead.py, interleave_vs_tp.py).

`GROUP` is the process group a split block's all-reduces span; None while the blocks run
whole on one GPU, where f and g are identities.
"""
import torch
import torch.distributed as dist

GROUP = None


class CopyToGroup(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the gradient backward."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        if GROUP is not None:
            g = g.contiguous()
            dist.all_reduce(g, group=GROUP)
        return g


class ReduceFromGroup(torch.autograd.Function):
    """Megatron's g: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        if GROUP is not None:
            dist.all_reduce(x, group=GROUP)
            ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g
