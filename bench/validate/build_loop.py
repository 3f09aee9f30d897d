#!/usr/bin/env python3
"""Builds MODEL (library_suite.build, on the GPU) again and again until killed: the CPU-heavy
neighbour of a timed lane, as run_library.sh's other lane builds its next model.

  python3 bench/validate/build_loop.py MODEL

Prints one line a build. Used by lanes_build_check.sh and host_drift_check.py.
"""
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import library_suite  # noqa: E402

while True:
    t = time.time()
    model = library_suite.build(sys.argv[1], "cuda")
    torch.cuda.synchronize()
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} built {sys.argv[1]} in {time.time() - t:.1f} s",
          flush=True)
    del model
    gc.collect()
    torch.cuda.empty_cache()
