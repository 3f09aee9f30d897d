#!/usr/bin/env python3
"""Builds every model a held-out plan names, with the machine's own libraries, on the CPU or a GPU.

  python3 bench/validate/plan_build_check.py bench/validate/data/heldout/<run>/plan.env
  python3 bench/validate/plan_build_check.py --device cuda bench/validate/data/heldout/<run>/plan.env
  torchrun --standalone --nproc_per_node=2 bench/validate/plan_build_check.py --modes <plan.env>

The plan's dry run (heldout_plan_dry_run.sh) checks the plan on a machine without transformers,
timm or torchvision; this script is its other half, for the device: each planned model is built
by library_suite.py's own build() on the CPU (no GPU work, no step, no timing, so nothing of the
run's measurements is seen), and its parameter count, class and, for a ViT, its token count are
printed, so that a name the installed library does not register or a config it rejects is found
before the one-shot run. With --device cuda each model is built as the run's single-GPU and
DDP / FSDP2 / TP steps build it (library_suite.build initialises a GPU's model on the GPU), still with
no step, and the seconds each build took are printed (a build is host work the other lane waits out).
With --modes, under torchrun on two GPUs, each two-GPU mode's planned models go through
library_suite.run_model at micro-batch 1 (built, wrapped for the mode, one warm-up and one step), its
figures dropped unseen: only whether each ran is printed.
Exit status 1 if any model fails to build.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_suite  # noqa: E402


def planned(plan_env):
    names = []
    for line in open(plan_env):
        key, _, value = line.strip().partition("=")
        if key in ("LM", "VISION") or key.startswith("MODELS_"):
            names += [n for n in value.split(",") if n and n not in names]
    return names


def settings(plan_env):
    return dict(line.strip().split("=", 1) for line in open(plan_env)
                if "=" in line and not line.lstrip().startswith("#"))


def modes_check(plan_env):
    """Under torchrun (2 ranks): each two-GPU mode's planned models as library_suite.run_model builds and
    wraps them (DDP, FSDP2's fully_shard, TP's parallelize_module, PP's stage split), each taking one
    warm-up and one step at micro-batch 1 through run_model itself. Its records and console lines (step
    time, peak) are dropped unseen: only whether each (mode, model) ran, and its seconds, are printed."""
    import contextlib
    import io
    import types
    torch, dist = library_suite.torch, library_suite.dist
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
    device = torch.device("cuda", torch.cuda.current_device())
    plan = settings(plan_env)
    failed = 0
    for mode in ("ddp", "fsdp", "tp", "pp"):
        if mode not in plan.get("MODES", "").split(","):
            continue
        for name in [n for n in plan.get("MODELS_" + mode.upper(), "").split(",") if n]:
            args = types.SimpleNamespace(mode=mode, micro_batches=[1], model_seconds=1e9, deadline_s=0,
                                         reserve_s=0, warmup=1, steps=1, min_seconds=0.0)
            t0 = time.time()
            recs = []
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    library_suite.run_model(name, args, rank, world, device, recs, lambda: None)
                what = "ok" if recs and "error" not in recs[-1] else f"FAILED {recs[-1].get('error', '')[:120]}"
            except Exception as e:  # one (mode, model) failing leaves the others checked
                what = f"FAILED {type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            failed += what != "ok"
            if rank == 0:
                print(f"{mode} {name}: {what} (built, wrapped, one step unseen; {time.time() - t0:.1f} s)",
                      flush=True)
            dist.barrier()
    dist.destroy_process_group()
    return 1 if failed else 0


def main():
    args = sys.argv[1:]
    if args[:1] == ["--modes"]:
        return modes_check(args[1])
    device = "cpu"
    if args[:1] == ["--device"]:
        device, args = args[1], args[2:]
    failed = 0
    for name in planned(args[0]):
        t0 = time.time()
        try:
            model = library_suite.build(name, device)
            if device != "cpu":
                library_suite.torch.cuda.synchronize()
        except Exception as e:  # report every model, not only the first failure
            print(f"{name}: FAILED {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            failed += 1
            continue
        params = sum(p.numel() for p in model.parameters())
        extra = ""
        embed = getattr(model, "patch_embed", None)
        if embed is not None and hasattr(embed, "num_patches"):
            extra = f", {embed.num_patches + getattr(model, 'num_prefix_tokens', 1)} tokens"
        where = f" on {next(model.parameters()).device}" if device != "cpu" else ""
        print(f"{name}: {type(model).__name__}, {params:,} parameters, {len(library_suite.blocks(model))} blocks"
              f"{extra} ({time.time() - t0:.1f} s{where})", flush=True)
        del model
        if device != "cpu":
            library_suite.torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
