#!/usr/bin/env python3
"""Grouped 3x3 convolutions of many group widths alone, with the kernels cuDNN ran for each pass
(issue 19 item 6: calibration for tuner/cnn_conv_model.cc's grouped terms beyond ResNeXt's
widths 4-32 and RegNetY-1.6GF's 24).

  OUT=DIR [DEADLINE_S=80] python3 bench/validate/cnn_grouped_sweep.py

Every shape as cnn_arch_check.py times convolutions alone: channels_last bf16 tensors, no
autocast, cuDNN's heuristics (cudnn.benchmark off, as library_suite.py trains), forward, input
gradient (dgrad) and weight gradient (wgrad) through aten::convolution_backward, CUDA events,
median of 10 after 2 warm-ups. Then one profiled call of each pass: its kernels by name (count,
GPU seconds), so that each measurement says which of cuDNN's ways ran it -- channels sliced per
group (nhwcSliceCKernel) around per-group dense kernels, a layout transform
(tensorTransformGeneric / nhwcToNchw) around a grouped kernel, or one grouped implicit GEMM.
Shapes: group widths 24-120 (powers of two and not) x 2-36 groups at the side a RegNet stage of
that many channels has (56 px up to 256 channels, 28 up to 640, 14 up to 1280, else 7), batch
128; width 56 (RegNetY-8GF's) also at batch 1 / 16 / 64 / 256 and stride 2.
Writes $OUT/cnn_grouped_sweep.json after every shape and prints one line per shape.
"""
import json
import os
import sys
import time

from cnn_arch_check import median_time

WIDTHS = (24, 32, 40, 48, 56, 64, 80, 96, 112, 120)
GROUPS = (2, 4, 8, 16, 36)


def side_for(c):
    return 56 if c <= 256 else 28 if c <= 640 else 14 if c <= 1280 else 7


def shapes():
    """(batch, channels, side, stride, groups), most informative first (a deadline cuts the
    tail)."""
    out = []
    for n in (256, 64, 16, 1):  # RegNetY-8GF's own convolutions first
        for c, g in ((224, 4), (448, 8), (896, 16), (2016, 36)):
            out.append((n, c, side_for(c), 1, g))
    for w in WIDTHS:
        for g in GROUPS:
            if w == 56 and g in (4, 8, 16, 36):
                continue
            out.append((128, w * g, side_for(w * g), 1, g))
    for n, c, side, g in ((256, 224, 112, 4), (256, 448, 56, 8), (256, 896, 28, 16),
                          (256, 2016, 14, 36), (128, 120, 56, 5), (128, 448, 56, 4)):
        out.append((n, c, side, 2, g))
    return out


def kernels_of(torch, fn):
    """[(name[:90], count, GPU seconds)] of one call, largest first."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = []
    for evt in prof.key_averages():
        if getattr(evt, "device_type", None) != torch.autograd.DeviceType.CUDA:
            continue
        us = getattr(evt, "device_time_total", None)
        if us is None:
            us = getattr(evt, "cuda_time_total", 0)
        out.append((evt.key[:90], evt.count, us * 1e-6))
    out.sort(key=lambda r: -r[2])
    return out[:8]


def one(torch, device, shape):
    n, c, side, stride, g = shape
    dt = torch.bfloat16
    x = torch.randn(n, c, side, side, device=device, dtype=dt).to(memory_format=torch.channels_last)
    w = torch.randn(c, c // g, 3, 3, device=device, dtype=dt).to(memory_format=torch.channels_last)
    y = torch.nn.functional.conv2d(x, w, None, stride, 1, 1, g)
    gy = torch.randn_like(y)
    conv_bwd = torch.ops.aten.convolution_backward
    args = (gy, x, w, None, [stride, stride], [1, 1], [1, 1], False, [0, 0], g)
    passes = {
        "fwd": lambda: torch.nn.functional.conv2d(x, w, None, stride, 1, 1, g),
        "dgrad": lambda: conv_bwd(*args, [True, False, False]),
        "wgrad": lambda: conv_bwd(*args, [False, True, False]),
    }
    e = {"n": n, "c": c, "side": side, "k": 3, "stride": stride, "groups": g, "width": c // g,
         "out_side": y.shape[-1]}
    for name, fn in passes.items():
        e[name + "_s"] = median_time(torch, fn, reps=10, warmup=2)
        e[name + "_kernels"] = kernels_of(torch, fn)
    return e


def kernel_path(kernels):
    """Which way cuDNN ran a grouped pass, from its kernels' names: "sliced"
    (per-group channel copies), "transformed" (layout transforms) or "grouped"."""
    names = " ".join(k[0] for k in kernels)
    if "nhwcSliceC" in names:
        return "sliced"
    if "tensorTransform" in names or "nhwcToNchw" in names or "nchwToNhwc" in names:
        return "transformed"
    return "grouped"


def main():
    import torch
    out = os.environ.get("OUT", ".")
    deadline = time.time() + float(os.environ.get("DEADLINE_S", "80"))
    torch.backends.cudnn.benchmark = False
    device = torch.device("cuda")
    report = {"device": torch.cuda.get_device_name(0),
              "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
              "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "calibration": True, "convs": []}
    path = os.path.join(out, "cnn_grouped_sweep.json")
    for shape in shapes():
        if time.time() > deadline:
            print(f"deadline: {shape} skipped", flush=True)
            continue
        try:
            e = one(torch, device, shape)
        except Exception as err:  # one shape's failure (memory) leaves the others
            print(f"{shape}: {type(err).__name__}: {err}", flush=True)
            torch.cuda.empty_cache()
            continue
        report["convs"].append(e)
        print(f"n{e['n']:3d} c{e['c']:4d} {e['side']:3d}px s{e['stride']} g{e['groups']:2d} "
              f"w{e['width']:3d}: " + "  ".join(
                  f"{p} {e[p + '_s'] * 1e3:.3f} ms {kernel_path(e[p + '_kernels'])}"
                  for p in ("fwd", "dgrad", "wgrad")), flush=True)
        with open(path, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if report["convs"] else 1


if __name__ == "__main__":
    sys.exit(main())
