"""framework_probe.py's reading of a torch.profiler run, without PyTorch: which
device events are kernels, and what kind of kernel each is."""
import os
import sys
import unittest
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "profiler"))
from framework_probe import device_kernels, device_seconds, kernel_category  # noqa: E402

CUDA, CPU = "cuda", "cpu"
TORCH = SimpleNamespace(autograd=SimpleNamespace(DeviceType=SimpleNamespace(CUDA=CUDA, CPU=CPU)))


def event(key, device_type, us, annotation=False, count=1):
    return SimpleNamespace(key=key, device_type=device_type, self_device_time_total=us,
                           is_user_annotation=annotation, count=count)


class DeviceKernelsTest(unittest.TestCase):
    def test_record_function_ranges_on_the_device_are_not_kernels(self):
        # As a DDP step's profile has them: the ranges span the kernels listed too.
        events = [
            event("DistributedDataParallel.forward", CUDA, 15170, annotation=True),
            event("Optimizer.step#AdamW.step", CUDA, 10690, annotation=True),
            event("nccl:all_reduce", CUDA, 6040, annotation=True),
            event("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", CUDA, 6040, count=37),
            event("void at::native::vectorized_elementwise_kernel<8, bfloat16_copy_kernel_cuda>", CUDA, 1220, count=195),
            event("aten::copy_", CPU, 0, count=195),
        ]
        kernels = device_kernels(TORCH, events)
        self.assertEqual([k.key[:10] for k in kernels], ["ncclDevKer", "void at::n"])
        self.assertAlmostEqual(sum(device_seconds(k) for k in kernels), 7.26e-3)
        self.assertEqual([kernel_category(k.key) for k in kernels], ["nccl", "elementwise"])

    def test_older_pytorch_without_the_annotation_flag_or_the_device_field(self):
        old = SimpleNamespace(key="Memcpy DtoD (Device -> Device)", device_type=CUDA,
                              self_cuda_time_total=1350, count=196)
        self.assertEqual(device_kernels(TORCH, [old]), [old])
        self.assertAlmostEqual(device_seconds(old), 1.35e-3)
        self.assertEqual(kernel_category(old.key), "memcpy")


if __name__ == "__main__":
    unittest.main()
