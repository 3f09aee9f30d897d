#!/usr/bin/env python3
"""Where a CNN's GPU-bound training step spends its GPU time, by kind of kernel (issue 19, item 6).

  OUT=DIR [MODELS=resnet50,timm:resnet26,...] [MB=256] [DEADLINE_S=100] python3 bench/validate/cnn_kernel_profile.py

The library suite's CNN step as library_suite.py trains it (channels_last model and input,
bf16 autocast, SGD with momentum and weight decay, foreach), timed with CUDA events
(median of 10 steps after 5 warm-up steps), then one step under torch.profiler: each
kernel's GPU time summed by kind (convolution forward / dgrad / wgrad, BatchNorm forward /
backward, ReLU and its gradient, residual adds and gradient sums, pooling, the optimizer,
casts, everything else), beside the elements of every BatchNorm's output (what its passes
read), the stem alone and the framework's ops by input shape. Run 2026-11-27 on one H200
(bench/validate/data/checks/2026-11-27_h200x1_cnn_kernel_profile): it named why every ResNet
at micro-batch 256 was under-predicted (BatchNorm's statistics kernel, bound by arithmetic).
Writes $OUT/cnn_kernel_profile.json (the top kernels by GPU time too) and prints a summary.
ResNet-101 is left out by default: held-out run 11 trains timm's (the same layer table).
"""
import json
import os
import statistics
import sys
import time

import kernel_profile

KINDS = [  # (kind, pattern over the lower-cased kernel name), first match wins
    ("nccl", r"nccl"),
    ("conv_dgrad", r"dgrad"),
    ("conv_wgrad", r"wgrad"),
    ("bn_fwd", r"batch_norm_(collect_statistics|transform_input|elemt|stats)|bn_fw|batchnorm_fwd|bn_fwd"),
    ("bn_bwd", r"batch_norm_backward|bn_bw|batchnorm_bwd|bn_bwd"),
    ("conv_fprop_or_gemm", r"gemm|nvjet|xmma|cutlass|cublas|sm90_|sm80_|conv|implicit|winograd|fprop"),
    ("optimizer", r"multi_tensor_apply"),
    ("relu", r"threshold|relu|clamp_min"),
    ("pool", r"pool"),
    ("add", r"add"),
    ("cast_copy", r"copy|cast|memcpy|memset|fill"),
    ("reduce", r"reduce"),
]


def kind_of(name):
    return kernel_profile.kind_of(KINDS, name)


def build(torch, name, device):
    if name.startswith("timm:"):
        import timm
        model = timm.create_model(name[5:], num_classes=1000)
    else:
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=1000)
    return model.to(device, memory_format=torch.channels_last)


def counted_bytes(torch, model, mb):
    """Output elements of every BatchNorm (x2: BN's input and the ReLU's output, as the
    tuner saves them) at this micro-batch, from one forward's hooks."""
    sizes = []
    hooks = [m.register_forward_hook(lambda m, i, o: sizes.append(o.numel()))
             for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    return sizes, hooks


def stem_time(torch, model, x):
    """The stem alone (7x7 conv on 3 channels, BN, ReLU, max-pool), forward and backward
    as in the step (the images need no gradient): median of 10 with CUDA events."""
    act = getattr(model, "relu", None) or getattr(model, "act1", None)
    parts = [getattr(model, n, None) for n in ("conv1", "bn1")] + [act, getattr(model, "maxpool", None)]
    if any(p is None for p in parts):
        return 0.0
    stem = torch.nn.Sequential(*parts)
    times = []
    for i in range(13):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = stem(x)
        out.float().sum().backward()
        b.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(a.elapsed_time(b) * 1e-3)
    model.zero_grad(set_to_none=True)
    return statistics.median(times)


def one(torch, name, mb, device):
    model = build(torch, name, device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(mb, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (mb,), device=device)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    times, _ = kernel_profile.timed_steps(torch, step)
    stem = stem_time(torch, model, x)
    sizes, hooks = counted_bytes(torch, model, mb)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    for h in hooks:
        h.remove()
    kinds, kernels = kernel_profile.kernels_by_kind(torch, prof, KINDS, 160)
    # The framework's ops by input shapes, with the GPU time of the kernels under them:
    # which convolutions (1x1 or 3x3, which stage) and which BatchNorms take the time.
    ops = kernel_profile.ops_by_input_shape(
        torch, prof, 200, r"convolution|batch_norm|threshold|relu|add_|aten::add|max_pool|clamp")
    busy = sum(v[0] for v in kinds.values())
    bn_elems = sum(sizes)
    entry = {"model": name, "micro_batch": mb, "step_median_s": statistics.median(times),
             "step_min_s": min(times), "gpu_busy_s": busy,
             "kinds": {k: {"s": v[0], "kernels": v[1]} for k, v in sorted(kinds.items())},
             "stem_s": stem, "bn_output_elements": bn_elems, "batchnorms": len(sizes),
             "params": sum(p.numel() for p in model.parameters()),
             "top_kernels": kernels[:60], "ops": ops[:300]}
    del model, opt, x, y
    torch.cuda.empty_cache()
    return entry


def main():
    import torch
    out = os.environ.get("OUT", ".")
    models = os.environ.get("MODELS", "resnet50,timm:resnet26,resnet18,resnet34,wide_resnet50_2,vgg16").split(",")
    mbs = [int(v) for v in os.environ.get("MB", "256").split(",")]
    deadline = time.time() + float(os.environ.get("DEADLINE_S", "100"))
    torch.backends.cudnn.benchmark = False  # library_suite.py leaves cuDNN's heuristics on
    device = torch.device("cuda")
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "cudnn": torch.backends.cudnn.version(), "entries": []}
    for mb in mbs:
        for name in models:
            if time.time() > deadline:
                print(f"deadline: {name} mb{mb} skipped", flush=True)
                continue
            try:
                e = one(torch, name, mb, device)
            except Exception as err:  # one model's failure (OOM, no timm) leaves the others
                print(f"{name} mb{mb}: {type(err).__name__}: {err}", flush=True)
                torch.cuda.empty_cache()
                continue
            report["entries"].append(e)
            parts = "  ".join(f"{k} {v['s'] * 1e3:.2f}" for k, v in e["kinds"].items())
            print(f"{name} mb{mb}: step {e['step_median_s'] * 1e3:.1f} ms, stem {e['stem_s'] * 1e3:.2f} ms,"
                  f" GPU busy {e['gpu_busy_s'] * 1e3:.1f} ms"
                  f" ({e['batchnorms']} BN, {e['bn_output_elements'] / 1e9:.3f} G elements): {parts}", flush=True)
            with open(os.path.join(out, "cnn_kernel_profile.json"), "w") as f:
                json.dump(report, f, indent=1)
    return 0 if report["entries"] else 1


if __name__ == "__main__":
    sys.exit(main())
