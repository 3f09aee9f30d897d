#!/usr/bin/env python3
"""Print, per GPU, a set of CPUs on that GPU's NUMA node for one process to be bound to.

  gpu_cpus.py [CPUS_PER_GPU]   ->  "0,1,2,3;16,17,18,19"  (GPU 0's; GPU 1's; ...)

A site binds tasks to GPU-local cores (Slurm's --gpu-bind / --cpu-bind); run_device.sh
does the same with BIND=1. Tried as a cure for the launch-bound runs' spread between
processes (up to 30 %, `eager_op_host_s` in two groups near 5.8 and 8 us): it did not
cure it (data/calibration/2026-11-26_h200x2_bound/README.md). Each GPU gets distinct physical
cores (one logical CPU per core) from its own node, as many as the node has for each of
its GPUs (up to CPUS_PER_GPU), so two lanes never share a core. Prints nothing (no
binding) where sysfs or nvidia-smi says nothing.
"""
import subprocess
import sys


def parse_list(text):
    cpus = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def main():
    per_gpu = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    try:
        ids = subprocess.check_output(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                                      text=True).split()
    except (OSError, subprocess.CalledProcessError):
        return
    online = parse_list(read("/sys/devices/system/cpu/online"))
    core = {c: min(parse_list(read(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list")) or [c])
            for c in online}
    locals_ = []
    for bus_id in ids:
        domain, rest = bus_id.split(":", 1)
        locals_.append(parse_list(read(f"/sys/bus/pci/devices/{domain[-4:].lower()}:{rest.lower()}/local_cpulist")))
    used, lists = set(), []
    for local in locals_:
        # As many as the node's physical cores allow its GPUs (at least 2), up to per_gpu.
        sharing = sum(other == local for other in locals_)
        cores = len({core[c] for c in local if c in core})
        want = max(2, min(per_gpu, cores // sharing))
        pick = []
        for cpu in [c for c in local if c in online] + online:  # own node first
            if len(pick) == want:
                break
            if core[cpu] in used:
                continue
            pick.append(cpu)
            used.add(core[cpu])
        if len(pick) < want:
            return  # too few CPUs to keep lanes apart: bind nothing
        lists.append(",".join(map(str, pick)))
    print(";".join(lists))


if __name__ == "__main__":
    main()
