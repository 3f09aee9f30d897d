#!/usr/bin/env python3
"""Tensor and pipeline parallelism as xdeep decided them:

    srun --xdeep-tune --xdeep-workload=workloads/tp-pp.toml python3 examples/megatron_tp_pp.py

Each pipeline stage holds one MLP block split Megatron's way over its
tensor-parallel group (column-parallel W1, row-parallel W2, one all-reduce),
`grad_accumulation` micro-batches of `micro_batch` samples per step.

With megatron-core importable, everything is megatron-core's own:
parallel_state started from xdeep.megatron_core_kwargs() (sizes, coordinates
and tp / pp / dp group members checked against xdeep's; both use the rank
order tp-cp-dp-pp), its micro-batch calculator fed the decided global batch,
ColumnParallelLinear / RowParallelLinear, and the pipeline schedule that
get_forward_backward_func() picks (1F1B for pp > 1), forward and backward.
The last stage compares every output, and every stage its weight gradients,
with the unsplit model computed locally: wrong groups or peers give wrong
numbers. Without it (this repository's test machines) the same pipeline runs
on torch.distributed alone (send / recv, forward only, outputs checked);
XDEEP_REQUIRE_ENGINE=1 makes that a failure instead."""
import argparse
import importlib.util
import os
import time

import torch
import torch.distributed as dist

import xdeep
from handoff_check import check_world, fail, record

HIDDEN = 16
SEQ = 4  # megatron-core's activations are [sequence, micro-batch, hidden]


def stage_weights(stage):
    g = torch.Generator().manual_seed(1000 + stage)
    return (torch.randn(HIDDEN, 4 * HIDDEN, generator=g) / HIDDEN ** 0.5,
            torch.randn(4 * HIDDEN, HIDDEN, generator=g) / (4 * HIDDEN) ** 0.5)


def reference(x, stages):
    for s in range(stages):
        w1, w2 = stage_weights(s)
        x = x + torch.relu(x @ w1) @ w2
    return x


def load_megatron_core():
    """megatron.core, or None when it is not installed. An installed
    megatron-core that fails to import is an error, not a reason to fall back."""
    if importlib.util.find_spec("megatron") is None or \
            importlib.util.find_spec("megatron.core") is None:
        if os.environ.get("XDEEP_REQUIRE_ENGINE") == "1":
            fail("XDEEP_REQUIRE_ENGINE=1 but megatron.core is not importable (PYTHONPATH?)")
        return None
    import megatron.core
    return megatron.core


def check_parallel_state(ps, d, groups, dp):
    """megatron-core's parallel_state, started from xdeep.megatron_core_kwargs(),
    puts every rank where xdeep does (both use the rank order tp-cp-dp-pp)."""
    got = {"sizes": (ps.get_tensor_model_parallel_world_size(),
                     ps.get_pipeline_model_parallel_world_size(),
                     ps.get_data_parallel_world_size(), ps.get_context_parallel_world_size()),
           "coords": (ps.get_tensor_model_parallel_rank(), ps.get_pipeline_model_parallel_rank(),
                      ps.get_data_parallel_rank()),
           "tp": sorted(dist.get_process_group_ranks(ps.get_tensor_model_parallel_group())),
           # pp members in stage order
           "pp": dist.get_process_group_ranks(ps.get_pipeline_model_parallel_group()),
           "dp": sorted(dist.get_process_group_ranks(ps.get_data_parallel_group()))}
    want = {"sizes": (d.tp, d.pp, dp, d.cp),
            "coords": (groups.coords.tp, groups.coords.pp, groups.coords.dp),
            "tp": sorted(groups.members["tp"]), "pp": groups.members["pp"],
            "dp": sorted(groups.members["dp"])}
    if got != want:
        fail(f"megatron-core's parallel_state has {got}, xdeep decided {want}")


class Stage(torch.nn.Module):
    """One pipeline stage: an MLP block of megatron-core's ColumnParallelLinear
    and RowParallelLinear over the tensor-parallel group, loaded with this
    stage's slice of the unsplit weights."""

    def __init__(self, config, stage, tp, tp_rank, device):
        super().__init__()
        from megatron.core import parallel_state as ps
        from megatron.core.enums import ModelType
        from megatron.core.tensor_parallel import ColumnParallelLinear, RowParallelLinear
        self.config = config  # megatron-core's schedules read the model's config and type
        self.model_type = ModelType.encoder_or_decoder
        self.first = stage == 0
        self.fc1 = ColumnParallelLinear(HIDDEN, 4 * HIDDEN, config=config,
                                        init_method=torch.nn.init.zeros_, bias=False,
                                        gather_output=False,
                                        tp_group=ps.get_tensor_model_parallel_group())
        self.fc2 = RowParallelLinear(4 * HIDDEN, HIDDEN, config=config,
                                     init_method=torch.nn.init.zeros_, bias=False,
                                     input_is_parallel=True, skip_bias_add=False,
                                     tp_group=ps.get_tensor_model_parallel_group())
        cols = 4 * HIDDEN // tp
        w1, w2 = stage_weights(stage)
        with torch.no_grad():  # torch.nn.functional.linear keeps the transpose
            self.fc1.weight.copy_(w1[:, tp_rank * cols:(tp_rank + 1) * cols].t())
            self.fc2.weight.copy_(w2[tp_rank * cols:(tp_rank + 1) * cols, :].t())
        self.to(device)
        self.input_tensor = None

    def set_input_tensor(self, tensors):
        self.input_tensor = tensors[0] if isinstance(tensors, list) else tensors

    def forward(self, x0):
        x = x0 if self.first else self.input_tensor
        h, _ = self.fc1(x)
        y, _ = self.fc2(torch.relu(h))
        return x + y


def reference_grads(batches, stages, micro_batches):
    """Gradients of the unsplit model for megatron-core's loss: each
    micro-batch's mean square output, divided by the micro-batch count."""
    weights = [tuple(w.double().requires_grad_() for w in stage_weights(s)) for s in range(stages)]
    total = 0
    for x0 in batches:
        x = x0.double()
        for w1, w2 in weights:
            x = x + torch.relu(x @ w1) @ w2
        total = total + x.pow(2).mean() / micro_batches
    total.backward()
    return [(w1.grad, w2.grad) for w1, w2 in weights]


def run_megatron_core(core, d, groups, device, steps):
    """The decided layout on megatron-core: parallel_state, its micro-batch
    calculator, tensor-parallel layers and its pipeline schedule."""
    from megatron.core import parallel_state as ps
    from megatron.core.model_parallel_config import ModelParallelConfig
    from megatron.core.num_microbatches_calculator import (get_micro_batch_size,
                                                           get_num_microbatches,
                                                           init_num_microbatches_calculator)
    from megatron.core.pipeline_parallel import get_forward_backward_func

    dp = dist.get_world_size() // (d.tp * d.pp * d.cp)
    ps.initialize_model_parallel(**xdeep.megatron_core_kwargs(d))
    check_parallel_state(ps, d, groups, dp)
    init_num_microbatches_calculator(rank=dist.get_rank(), rampup_batch_size=None,
                                     global_batch_size=d.global_batch,
                                     micro_batch_size=d.micro_batch, data_parallel_size=dp)
    if (get_num_microbatches(), get_micro_batch_size()) != (d.grad_accumulation, d.micro_batch):
        fail(f"megatron-core makes {get_num_microbatches()} micro-batches of "
             f"{get_micro_batch_size()} from global batch {d.global_batch}; the decision is "
             f"{d.grad_accumulation} of {d.micro_batch}")
    config = ModelParallelConfig(tensor_model_parallel_size=d.tp,
                                 pipeline_model_parallel_size=d.pp,
                                 pipeline_dtype=torch.float32, params_dtype=torch.float32,
                                 use_cpu_initialization=device.type == "cpu",
                                 perform_initialization=False)
    config.hidden_size = HIDDEN  # the activation shape the pipeline sends: [seq, batch, hidden]
    c = groups.coords
    stage = Stage(config, c.pp, d.tp, c.tp, device)
    schedule = get_forward_backward_func()
    last = c.pp == d.pp - 1
    checked = 0
    for step in range(steps):
        start = time.perf_counter()
        batches = []
        for micro in range(d.grad_accumulation):
            g = torch.Generator().manual_seed(step * 10007 + micro * 101 + c.dp)
            batches.append(torch.randn(SEQ, d.micro_batch, HIDDEN, generator=g))
        outputs, calls = [], []

        def forward_step(data_iterator, model):
            x0 = next(data_iterator)
            calls.append(x0.shape)
            out = model(x0.to(device))

            def loss_func(output):
                outputs.append((x0, output.detach().cpu()))
                return output.float().pow(2).mean(), {}
            return out, loss_func

        for p in stage.parameters():
            p.grad = None
        schedule(forward_step_func=forward_step, data_iterator=iter(batches), model=[stage],
                 num_microbatches=get_num_microbatches(), seq_length=SEQ,
                 micro_batch_size=get_micro_batch_size(), forward_only=False)
        if len(calls) != d.grad_accumulation:
            fail(f"megatron-core's schedule ran {len(calls)} micro-batches on stage {c.pp}, "
                 f"decision {d.grad_accumulation}")
        if last and len(outputs) != d.grad_accumulation:
            fail(f"megatron-core's schedule ran {len(outputs)} micro-batches on the last stage, "
                 f"decision {d.grad_accumulation}")
        for x0, out in outputs:
            if out.shape != (SEQ, d.micro_batch, HIDDEN):
                fail(f"micro-batch output {tuple(out.shape)}, "
                     f"expected {(SEQ, d.micro_batch, HIDDEN)}")
            err = (out - reference(x0, d.pp)).abs().max().item()
            if err > 1e-4:
                fail(f"pipeline output differs from the unsplit model by {err:.3g}")
            checked += 1
        cols = 4 * HIDDEN // d.tp
        g1, g2 = reference_grads(batches, d.pp, d.grad_accumulation)[c.pp]
        want = (g1[:, c.tp * cols:(c.tp + 1) * cols].t(), g2[c.tp * cols:(c.tp + 1) * cols, :].t())
        for name, got, ref in (("W1", stage.fc1.weight.grad, want[0]),
                               ("W2", stage.fc2.weight.grad, want[1])):
            if got is None or not torch.allclose(got.double().cpu(), ref, rtol=1e-3, atol=1e-5):
                diff = ("none" if got is None else
                        f"{(got.double().cpu() - ref).abs().max().item():.3g}")
                fail(f"stage {c.pp} {name} gradient differs from the unsplit model's by {diff}")
        xdeep.report_step(time.perf_counter() - start)
    dist.barrier()
    result = {"megatron_core": "megatron-core " + getattr(core, "__version__", "?"),
              "schedule": getattr(schedule, "__name__", str(schedule)),
              "num_microbatches": get_num_microbatches(),
              "outputs_checked": checked, "grads_checked": steps}
    ps.destroy_model_parallel()
    return result


def run_torch(d, groups, device, steps):
    """The same pipeline on torch.distributed alone (megatron-core not installed):
    column / row split by hand, one all-reduce, send / recv between stages."""
    c = groups.coords
    w1, w2 = stage_weights(c.pp)
    cols = 4 * HIDDEN // d.tp
    w1 = w1[:, c.tp * cols:(c.tp + 1) * cols].contiguous().to(device)  # column-parallel
    w2 = w2[c.tp * cols:(c.tp + 1) * cols, :].contiguous().to(device)  # row-parallel
    pp_ranks = groups.members["pp"]
    checked = 0
    for step in range(steps):
        start = time.perf_counter()
        for micro in range(d.grad_accumulation):
            g = torch.Generator().manual_seed(step * 10007 + micro * 101 + c.dp)
            x0 = torch.randn(d.micro_batch, HIDDEN, generator=g)
            if c.pp == 0:
                x = x0.to(device)
            else:
                x = torch.empty(d.micro_batch, HIDDEN, device=device)
                dist.recv(x, src=pp_ranks[c.pp - 1])
            partial = torch.relu(x @ w1) @ w2
            dist.all_reduce(partial, group=groups.groups["tp"])
            x = x + partial
            if c.pp < d.pp - 1:
                dist.send(x, dst=pp_ranks[c.pp + 1])
            elif not torch.allclose(x.cpu(), reference(x0, d.pp), atol=1e-4):
                fail(f"pipeline output differs from the unsplit model by "
                     f"{(x.cpu() - reference(x0, d.pp)).abs().max().item():.3g}")
            else:
                checked += 1
        xdeep.report_step(time.perf_counter() - start)
    dist.barrier()
    return {"megatron_core": "not installed", "outputs_checked": checked}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()

    d = xdeep.decision()
    core = load_megatron_core()
    groups = xdeep.init_distributed(timeout=120)
    check_world(d, dist.get_world_size(), dist.get_rank())
    if (4 * HIDDEN) % d.tp:
        fail(f"tp={d.tp} does not divide the example's {4 * HIDDEN} columns")
    c = groups.coords
    device = (torch.device("cuda", groups.local_rank) if torch.cuda.is_available()
              else torch.device("cpu"))
    torch.backends.cuda.matmul.allow_tf32 = False  # compared with an fp32 / fp64 reference
    if core is not None:
        result = run_megatron_core(core, d, groups, device, args.steps)
    else:
        result = run_torch(d, groups, device, args.steps)
    record(d, "megatron_tp_pp", tp=d.tp, pp=d.pp, dp=d.dp, coords=[c.tp, c.dp, c.pp],
           tp_group=groups.members["tp"], pp_group=groups.members["pp"], device=str(device),
           **result)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
