#!/usr/bin/env python3
"""kernel_profile.py's sums checked with stand-in profiler events (no GPU, no torch):
kernels go to the first matching kind, host-side and annotation events are left out, old
torch's cuda_time attributes are read where device_time is missing."""
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_phase_check  # noqa: E402
import kernel_profile  # noqa: E402

CUDA, CPU = "cuda", "cpu"
torch = types.SimpleNamespace(autograd=types.SimpleNamespace(
    DeviceType=types.SimpleNamespace(CUDA=CUDA)))


def event(key, device, count=1, **times):
    return types.SimpleNamespace(key=key, device_type=device, count=count,
                                 input_shapes=[[8, 16]], **times)


class Prof:
    def __init__(self, events):
        self.events = events

    def key_averages(self, group_by_input_shape=False):
        return self.events


KINDS = [("gemm", r"gemm|nvjet"), ("add", r"add")]


class KernelProfileTest(unittest.TestCase):
    def test_kernels_sum_by_first_matching_kind(self):
        prof = Prof([
            event("nvjet_gemm_add_epilogue", CUDA, 2, self_device_time_total=300.0),
            event("vectorized_add_kernel", CUDA, 5, self_device_time_total=100.0),
            event("elementwise_mul", CUDA, 1, self_device_time_total=50.0),
            event("old_torch_gemm", CUDA, 1, self_device_time_total=None, self_cuda_time_total=25.0),
            event("aten::mm", CPU, 3, self_device_time_total=999.0),
            event("## step ##", CUDA, 1, self_device_time_total=999.0, is_user_annotation=True),
            event("idle", CUDA, 1, self_device_time_total=0.0),
        ])
        kinds, kernels = kernel_profile.kernels_by_kind(torch, prof, KINDS, 8)
        self.assertEqual(set(kinds), {"gemm", "add", "other"})
        self.assertAlmostEqual(kinds["gemm"][0], 325e-6)
        self.assertEqual(kinds["gemm"][1], 3)
        self.assertAlmostEqual(kinds["add"][0], 100e-6)
        self.assertEqual(kinds["other"][1], 1)
        self.assertEqual([k["s"] for k in kernels], sorted((k["s"] for k in kernels), reverse=True))
        self.assertEqual(kernels[0]["name"], "nvjet_ge")  # cut to name_chars

    def test_ops_keep_host_ops_with_gpu_time_matching_the_pattern(self):
        prof = Prof([
            event("aten::convolution", CPU, 4, device_time_total=800.0),
            event("aten::add_", CPU, 2, device_time_total=None, cuda_time_total=40.0),
            event("aten::view", CPU, 9, device_time_total=0.0),
            event("aten::linear", CPU, 1, device_time_total=70.0),
            event("some_kernel", CUDA, 1, device_time_total=500.0),
        ])
        ops = kernel_profile.ops_by_input_shape(torch, prof, 200, r"convolution|add_")
        self.assertEqual([o["op"] for o in ops], ["aten::convolution", "aten::add_"])
        self.assertAlmostEqual(ops[1]["s"], 40e-6)
        every = kernel_profile.ops_by_input_shape(torch, prof, 200)
        self.assertEqual(len(every), 3)


def span(name, a, b, parent=None, device=CPU):
    return types.SimpleNamespace(name=name, time_range=types.SimpleNamespace(start=a, end=b),
                                 cpu_parent=parent, device_type=device, kernels=[])


class PhaseCountTest(unittest.TestCase):
    def test_counts_by_phase_and_op_depth(self):
        fwd, bwd = span("xdeep::forward", 0, 100), span("xdeep::backward", 100, 200)
        linear = span("aten::linear", 1, 10)
        mm = span("aten::mm", 2, 9, linear)
        node = span("autograd::engine::evaluate_function: MmBackward0", 110, 120)
        mm_b = span("aten::mm", 111, 119, node)
        counts = host_phase_check.count_events([
            fwd, bwd, span("xdeep::forward", 5, 300, device=CUDA),  # the GPU's mark: not a range
            linear, mm, span("cudaLaunchKernel", 3, 4, mm), node, mm_b,
            span("cuLaunchKernelEx", 112, 113, mm_b), span("cudaMemsetAsync", 114, 115, mm_b),
            span("void gemm_kernel", 150, 160, device=CUDA), span("aten::add", 400, 401)], CUDA)
        self.assertEqual(set(counts), {"forward", "backward"})
        f, b = counts["forward"], counts["backward"]
        self.assertEqual((f["launches"], f["aten_all"], f["aten_top"], f["nodes"]), (1, 2, 1, 0))
        self.assertEqual((b["launches"], b["copies"], b["aten_all"], b["aten_top"], b["nodes"]),
                         (1, 1, 1, 1, 1))
        self.assertEqual(b["runtime"], {"cuLaunchKernelEx": 1, "cudaMemsetAsync": 1})


if __name__ == "__main__":
    unittest.main()
