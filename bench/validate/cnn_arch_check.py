#!/usr/bin/env python3
"""CNNs beyond ResNet / VGG trained as the library suite trains CNNs, plus their convolutions
alone (issue 19 items 3/4; calibration for the tuner's depthwise / grouped convolution and
LayerNorm / SiLU / GELU / squeeze-excitation terms).

  OUT=DIR [MODELS=convnext_tiny,...] [MB=64,256,16] [DEADLINE_S=145] python3 bench/validate/cnn_arch_check.py

Part 1, whole networks: each model from the installed torchvision (or timm: a "timm:" prefix),
random weights, 1000 classes, 224 px (NAME@SIDE for another side), channels_last model and
input, bf16 autocast, SGD with momentum 0.9 and weight decay 1e-4 (foreach), cuDNN's heuristics
(cudnn.benchmark off), as library_suite.py trains its CNNs. Per micro-batch: the step's median
and minimum over 10 steps after 5 warm-up steps (CUDA events), the host's time to issue a step,
the peak of allocated memory over those steps and what stays allocated between steps; then one
step under torch.profiler: GPU time and kernel count by kind of kernel (KINDS), and every
convolution op (forward and backward) by class -- dense 1x1, dense kxk, grouped, depthwise --
from its input and weight shapes (groups = input channels / weight's second dimension).
Part 2, convolutions alone (channels_last, bf16 tensors, no autocast): the depthwise and
grouped 3x3-7x7 convolutions those networks run, and the dense convolutions of the same
channels, each forward, input gradient (dgrad) and weight gradient (wgrad) through
aten::convolution_backward, median of 20 after 3 warm-ups; and the elementwise kernels the new
blocks add (LayerNorm over the channels of an NHWC tensor, GELU, SiLU, hardswish, a
squeeze-excitation's pool and scale) forward and backward.
Writes $OUT/cnn_arch_check.json after every entry and prints one line per entry.
"""
import json
import os
import statistics
import sys
import time

import kernel_profile

DEFAULT_MODELS = ("convnext_tiny,efficientnet_b0,mobilenet_v3_large,regnet_y_1_6gf,"
                  "resnext50_32x4d,timm:efficientnet_b0,timm:convnext_tiny")
# Kinds of kernel, first match wins. cuDNN names its grouped / depthwise kernels in more than
# one way, so the per-op classes below (by shape) are what the tuner is checked against.
KINDS = [
    ("conv_dgrad", r"dgrad"),
    ("conv_wgrad", r"wgrad"),
    ("bn_fwd", r"batch_norm_(collect_statistics|transform_input|elemt|stats)|bn_fw|batchnorm_fwd|bn_fwd"),
    ("bn_bwd", r"batch_norm_backward|bn_bw|batchnorm_bwd|bn_bwd"),
    ("layer_norm", r"layer_norm|layernorm"),
    ("depthwise", r"depthwise|dwconv|dw_conv|conv_depthwise"),
    ("conv_fprop_or_gemm", r"gemm|nvjet|xmma|cutlass|cublas|sm90_|sm80_|conv|implicit|winograd|fprop|grouped"),
    ("optimizer", r"multi_tensor_apply"),
    ("gelu", r"gelu"),
    ("silu", r"silu"),
    ("hardswish_hardsigmoid", r"hardswish|hardsigmoid"),
    ("sigmoid", r"sigmoid"),
    ("relu", r"threshold|relu|clamp_min"),
    ("pool_mean", r"pool|mean|reduce_kernel|sum_kernel"),
    ("mul", r"mul"),
    ("add", r"add"),
    ("cast_copy", r"copy|cast|memcpy|memset|fill"),
    ("reduce", r"reduce"),
]


def parse_model(spec):
    """'timm:convnext_tiny@288' -> ('timm', 'convnext_tiny', 288)."""
    side = 224
    if "@" in spec:
        spec, s = spec.split("@", 1)
        side = int(s)
    if spec.startswith("timm:"):
        return "timm", spec[5:], side
    return "torchvision", spec, side


def build(torch, spec, device):
    lib, name, _ = parse_model(spec)
    if lib == "timm":
        import timm
        model = timm.create_model(name, num_classes=1000)
    else:
        import torchvision
        model = getattr(torchvision.models, name)(num_classes=1000)
    return model.to(device, memory_format=torch.channels_last)


def conv_class(shapes):
    """Class of a convolution op from its profiler input shapes: aten::convolution's are
    [input, weight, ...], aten::convolution_backward's [grad_output, input, weight, ...]."""
    dims4 = [s for s in shapes if isinstance(s, (list, tuple)) and len(s) == 4]
    if len(dims4) < 2:
        return None
    x, w = (dims4[0], dims4[1]) if len(dims4) == 2 else (dims4[1], dims4[2])
    c_in, per_group, k = x[1], w[1], w[2]
    if per_group <= 0 or c_in % per_group:
        return None
    groups = c_in // per_group
    if groups > 1 and groups == c_in:
        return f"depthwise_{k}x{k}"
    if groups > 1:
        return f"grouped_{k}x{k}"
    return "dense_1x1" if k == 1 else f"dense_{k}x{k}"


def conv_ops(torch, prof):
    """{class: {"fwd_s", "bwd_s", "fwd_n", "bwd_n"}} over the step's top-level convolution ops
    (aten::convolution and aten::convolution_backward carry their kernels' GPU time; the ops
    under them are not added again)."""
    out = {}
    for evt in prof.key_averages(group_by_input_shape=True):
        if getattr(evt, "device_type", None) == torch.autograd.DeviceType.CUDA:
            continue
        if evt.key not in ("aten::convolution", "aten::convolution_backward"):
            continue
        cls = conv_class(evt.input_shapes) or "unknown"
        s = kernel_profile._seconds(evt, "device_time_total", "cuda_time_total")
        d = out.setdefault(cls, {"fwd_s": 0.0, "bwd_s": 0.0, "fwd_n": 0, "bwd_n": 0})
        part = "bwd" if evt.key.endswith("backward") else "fwd"
        d[part + "_s"] += s
        d[part + "_n"] += evt.count
    return out


def one(torch, spec, mb, device):
    _, _, side = parse_model(spec)
    model = build(torch, spec, device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(mb, 3, side, side, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (mb,), device=device)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times, host = kernel_profile.timed_steps(torch, step)
    peak = torch.cuda.max_memory_allocated()
    resident = torch.cuda.memory_allocated()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    kinds, kernels = kernel_profile.kernels_by_kind(torch, prof, KINDS, 160)
    convs = conv_ops(torch, prof)
    ops = kernel_profile.ops_by_input_shape(
        torch, prof, 200,
        r"convolution|batch_norm|layer_norm|gelu|silu|hardswish|hardsigmoid|sigmoid|threshold|"
        r"relu|add|mul|mean|avg_pool|max_pool|linear|addmm|mm")
    entry = {"model": spec, "image": side, "micro_batch": mb,
             "step_median_s": statistics.median(times), "step_min_s": min(times),
             "host_issue_median_s": statistics.median(host),
             "peak_allocated_bytes": peak, "resident_bytes": resident,
             "params": sum(p.numel() for p in model.parameters()),
             "gpu_busy_s": sum(v[0] for v in kinds.values()),
             "kernels_per_step": sum(v[1] for v in kinds.values()),
             "kinds": {k: {"s": v[0], "kernels": v[1]} for k, v in sorted(kinds.items())},
             "conv_classes": convs, "top_kernels": kernels[:60], "ops": ops[:300]}
    del model, opt, x, y
    torch.cuda.empty_cache()
    return entry


def median_time(torch, fn, reps=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(ts)


# (batch, channels, side, kernel, stride, groups); groups 0 = depthwise (= channels). The
# depthwise ones are ConvNeXt-T's 7x7 (every stage), EfficientNet-B0's and MobileNetV3's 3x3 /
# 5x5; the grouped ones RegNetY-1.6GF's (group width 24) and ResNeXt-50 32x4d's 3x3; the
# dense ones the same channels with groups 1, and a few 1x1s for the per-kernel floor.
CONV_SHAPES = [
    (128, 96, 56, 7, 1, 0), (128, 192, 28, 7, 1, 0), (128, 384, 14, 7, 1, 0), (128, 768, 7, 7, 1, 0),
    (32, 96, 56, 7, 1, 0), (32, 768, 7, 7, 1, 0),
    (128, 32, 112, 3, 1, 0), (128, 96, 112, 3, 2, 0), (128, 144, 56, 5, 2, 0), (128, 240, 28, 3, 2, 0),
    (128, 480, 14, 5, 1, 0), (128, 672, 14, 5, 2, 0), (128, 1152, 7, 5, 1, 0), (128, 1152, 7, 3, 1, 0),
    (128, 64, 112, 3, 2, 0), (128, 72, 56, 5, 2, 0), (128, 960, 7, 5, 1, 0), (32, 144, 56, 3, 1, 0),
    (128, 48, 112, 3, 2, 2), (128, 120, 56, 3, 1, 5), (128, 336, 28, 3, 1, 14), (128, 888, 14, 3, 1, 37),
    (128, 888, 7, 3, 1, 37), (128, 336, 14, 3, 1, 14),
    (128, 128, 56, 3, 1, 32), (128, 256, 28, 3, 1, 32), (128, 512, 14, 3, 1, 32), (128, 1024, 7, 3, 1, 32),
    (128, 256, 56, 3, 2, 32), (32, 256, 28, 3, 1, 32),
    (128, 256, 28, 3, 1, 8), (128, 256, 28, 3, 1, 2), (128, 256, 28, 3, 1, 128),
    (128, 256, 28, 3, 1, 1), (128, 512, 14, 3, 1, 1), (128, 336, 28, 3, 1, 1), (128, 120, 56, 3, 1, 1),
    (128, 96, 56, 7, 1, 1), (128, 256, 28, 1, 1, 1), (32, 64, 28, 1, 1, 1),
]


def conv_alone(torch, device, shape):
    n, c, side, k, stride, groups = shape
    g = c if groups == 0 else groups
    dt = torch.bfloat16
    x = torch.randn(n, c, side, side, device=device, dtype=dt).to(memory_format=torch.channels_last)
    w = torch.randn(c, c // g, k, k, device=device, dtype=dt).to(memory_format=torch.channels_last)
    pad = k // 2
    y = torch.nn.functional.conv2d(x, w, None, stride, pad, 1, g)
    gy = torch.randn_like(y)
    conv_bwd = torch.ops.aten.convolution_backward
    args = (gy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], g)
    fwd = median_time(torch, lambda: torch.nn.functional.conv2d(x, w, None, stride, pad, 1, g))
    dgrad = median_time(torch, lambda: conv_bwd(*args, [True, False, False]))
    wgrad = median_time(torch, lambda: conv_bwd(*args, [False, True, False]))
    return {"n": n, "c": c, "side": side, "k": k, "stride": stride, "groups": g,
            "out_side": y.shape[-1], "fwd_s": fwd, "dgrad_s": dgrad, "wgrad_s": wgrad}


# (name, batch, channels, side): NHWC bf16 tensors of ConvNeXt-T's first stage, EfficientNet's
# expanded 112 / 56 px blocks and a late stage.
ELEMENTWISE_SHAPES = [(128, 96, 56), (128, 384, 14), (128, 96, 112), (128, 144, 56), (128, 1152, 7)]


def elementwise_alone(torch, device, shape):
    n, c, side = shape
    F = torch.nn.functional
    x = torch.randn(n, c, side, side, device=device, dtype=torch.bfloat16).to(
        memory_format=torch.channels_last).requires_grad_(True)
    out = {"n": n, "c": c, "side": side, "bytes": x.numel() * 2}
    ln = torch.nn.LayerNorm(c, eps=1e-6).to(device)
    scale = torch.randn(n, c, 1, 1, device=device, dtype=torch.bfloat16).requires_grad_(True)
    cases = {
        # autocast runs layer_norm in fp32: an fp32 output from the bf16 input.
        "layer_norm_nhwc": lambda: F.layer_norm(x.permute(0, 2, 3, 1).float(), (c,), ln.weight,
                                                ln.bias, 1e-6),
        "gelu": lambda: F.gelu(x),
        "silu": lambda: F.silu(x),
        "hardswish": lambda: F.hardswish(x),
        "se_pool": lambda: x.mean((2, 3), keepdim=True),
        "se_scale": lambda: x * torch.sigmoid(scale),
        "add": lambda: x + x,
    }
    for name, fn in cases.items():
        y = fn()
        gy = torch.randn_like(y)
        out[name + "_fwd_s"] = median_time(torch, fn)
        out[name + "_fwdbwd_s"] = median_time(
            torch, lambda: torch.autograd.grad(fn(), [x], gy, retain_graph=False))
    return out


def main():
    import torch
    out = os.environ.get("OUT", ".")
    models = os.environ.get("MODELS", DEFAULT_MODELS).split(",")
    mbs = [int(v) for v in os.environ.get("MB", "64,256,16").split(",")]
    deadline = time.time() + float(os.environ.get("DEADLINE_S", "145"))
    torch.backends.cudnn.benchmark = False  # library_suite.py leaves cuDNN's heuristics on
    device = torch.device("cuda")
    versions = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}
    try:
        import torchvision
        versions["torchvision"] = torchvision.__version__
        import timm
        versions["timm"] = timm.__version__
    except Exception as err:  # timm missing: its models fail alone below
        versions["import_error"] = str(err)
    report = {"device": torch.cuda.get_device_name(0), "sm_count":
              torch.cuda.get_device_properties(0).multi_processor_count, **versions,
              "calibration": True, "entries": [], "convs": [], "elementwise": []}
    path = os.path.join(out, "cnn_arch_check.json")

    def save():
        with open(path, "w") as f:
            json.dump(report, f, indent=1)

    # Part 2 first: short, and what the time model's new terms are fitted to.
    for shape in CONV_SHAPES:
        try:
            e = conv_alone(torch, device, shape)
        except Exception as err:
            print(f"conv {shape}: {type(err).__name__}: {err}", flush=True)
            continue
        report["convs"].append(e)
        print(f"conv n{e['n']} c{e['c']} {e['side']}px k{e['k']} s{e['stride']} g{e['groups']}: "
              f"fwd {e['fwd_s'] * 1e3:.3f} dgrad {e['dgrad_s'] * 1e3:.3f} "
              f"wgrad {e['wgrad_s'] * 1e3:.3f} ms", flush=True)
    for shape in ELEMENTWISE_SHAPES:
        try:
            e = elementwise_alone(torch, device, shape)
        except Exception as err:
            print(f"elementwise {shape}: {type(err).__name__}: {err}", flush=True)
            continue
        report["elementwise"].append(e)
        print("elementwise", json.dumps({k: (round(v * 1e6, 1) if k.endswith("_s") else v)
                                         for k, v in e.items()}), "(us)", flush=True)
    save()
    for mb in mbs:
        for spec in models:
            if time.time() > deadline:
                print(f"deadline: {spec} mb{mb} skipped", flush=True)
                continue
            try:
                e = one(torch, spec, mb, device)
            except Exception as err:  # one model's failure (OOM, no timm) leaves the others
                print(f"{spec} mb{mb}: {type(err).__name__}: {err}", flush=True)
                torch.cuda.empty_cache()
                continue
            report["entries"].append(e)
            parts = "  ".join(f"{k} {v['s'] * 1e3:.2f}" for k, v in e["kinds"].items())
            convs = "  ".join(f"{k} {v['fwd_s'] * 1e3:.2f}+{v['bwd_s'] * 1e3:.2f}"
                              for k, v in sorted(e["conv_classes"].items()))
            print(f"{spec} mb{mb}: step {e['step_median_s'] * 1e3:.2f} ms (host {e['host_issue_median_s'] * 1e3:.1f}),"
                  f" peak {e['peak_allocated_bytes'] / 2**30:.2f} GiB, {e['kernels_per_step']} kernels,"
                  f" GPU busy {e['gpu_busy_s'] * 1e3:.1f} ms: {parts} | convs {convs}", flush=True)
            save()
    save()
    return 0 if report["entries"] else 1


if __name__ == "__main__":
    sys.exit(main())
