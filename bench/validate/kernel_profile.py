"""What cnn_kernel_profile.py and transformer_kernel_profile.py share: a training step timed
with CUDA events, and one torch.profiler step summed by kind of kernel and by framework op.

Kept apart from torch (each function takes the module) so the sums can be checked on the
build machine with stand-in events (kernel_profile_test.py)."""
import re
import time


def kind_of(kinds, name):
    """The first (kind, pattern) of `kinds` whose pattern matches the lower-cased name."""
    n = name.lower()
    for kind, pattern in kinds:
        if re.search(pattern, n):
            return kind
    return "other"


def timed_steps(torch, step, warmup=5, steps=10):
    """Seconds per step (CUDA events) and the host's time to issue each, after warm-up."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times, host = [], []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        a.record()
        step()
        b.record()
        host.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return times, host


def _seconds(evt, attr, old_attr):
    # torch 2.x renamed cuda_time to device_time; read whichever this torch has.
    us = getattr(evt, attr, None)
    return (us if us is not None else getattr(evt, old_attr, 0)) * 1e-6


def kernels_by_kind(torch, prof, kinds, name_chars):
    """({kind: [GPU seconds, kernel count]}, kernels by GPU time, largest first)."""
    by_kind, kernels = {}, []
    for evt in prof.key_averages():
        if getattr(evt, "device_type", None) != torch.autograd.DeviceType.CUDA:
            continue
        if getattr(evt, "is_user_annotation", False):
            continue
        s = _seconds(evt, "self_device_time_total", "self_cuda_time_total")
        if s <= 0:
            continue
        k = kind_of(kinds, evt.key)
        by_kind.setdefault(k, [0.0, 0])
        by_kind[k][0] += s
        by_kind[k][1] += evt.count
        kernels.append({"name": evt.key[:name_chars], "kind": k, "count": evt.count, "s": s})
    kernels.sort(key=lambda e: -e["s"])
    return by_kind, kernels


def ops_by_input_shape(torch, prof, shape_chars, op_pattern=None):
    """The framework's ops (those matching op_pattern, or all) by input shapes, with the GPU
    time of the kernels under them, largest first."""
    ops = []
    for evt in prof.key_averages(group_by_input_shape=True):
        if getattr(evt, "device_type", None) == torch.autograd.DeviceType.CUDA:
            continue
        if op_pattern is not None and not re.search(op_pattern, evt.key):
            continue
        s = _seconds(evt, "device_time_total", "cuda_time_total")
        if s > 0:
            ops.append({"op": evt.key, "shapes": str(evt.input_shapes)[:shape_chars],
                        "count": evt.count, "s": s})
    ops.sort(key=lambda e: -e["s"])
    return ops
