#!/usr/bin/env python3
"""Builds every model a held-out plan names, with the machine's own libraries, on the CPU or a GPU.

  python3 bench/validate/plan_build_check.py bench/validate/data/heldout/<run>/plan.env
  python3 bench/validate/plan_build_check.py --device cuda bench/validate/data/heldout/<run>/plan.env

The plan's dry run (heldout_plan_dry_run.sh) checks the plan on a machine without transformers,
timm or torchvision; this script is its other half, for the device: each planned model is built
by library_suite.py's own build() on the CPU (no GPU work, no step, no timing, so nothing of the
run's measurements is seen), and its parameter count, class and, for a ViT, its token count are
printed, so that a name the installed library does not register or a config it rejects is found
before the one-shot run. With --device cuda each model is built as the run's single-GPU and
DDP / FSDP2 / TP steps build it (library_suite.build initialises a GPU's model on the GPU), still with
no step, and the seconds each build took are printed (a build is host work the other lane waits out).
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


def main():
    args = sys.argv[1:]
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
