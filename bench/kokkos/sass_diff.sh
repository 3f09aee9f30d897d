#!/usr/bin/env bash
# Which device kernels of the probes a change leaves as they were (issue 26: a form added
# for one card must leave the other card's kernels alone): compiles profiler/kokkos_kernels.cc
# (the Kokkos probe's kernels) and profiler/cuda/kernels.cu (the CUDA probe's) for sm_90 at
# BASE and in the working tree, disassembles both, and prints per kernel "same" (the same
# instructions in the same order; the per-build hashes in internal symbol names and label
# numbers aside), "DIFFERENT", "new" or "gone".
#   bench/kokkos/sass_diff.sh BASE KOKKOS_ROOT NVDISASM [OUTDIR]
# KOKKOS_ROOT: a CUDA Kokkos (scripts/build-kokkos.sh); NVDISASM: an nvdisasm that knows
# sm_90 (CUDA 13 here has none: bench/kokkos/sass.sh fetches Debian's 11.8 one and says why
# the cubin's header is rewritten for it, as here).
set -euo pipefail
base=${1:?usage: $0 BASE KOKKOS_ROOT NVDISASM [OUTDIR]}
kokkos=$(cd "${2:?usage: $0 BASE KOKKOS_ROOT NVDISASM [OUTDIR]}" && pwd)
nvdisasm=${3:?usage: $0 BASE KOKKOS_ROOT NVDISASM [OUTDIR]}
out=${4:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$out/base"
git -C "$root" archive "$base" profiler | tar -x -C "$out/base"
for side in base tree; do
  src=$out/base
  [[ $side == tree ]] && src=$root
  nice "$cuda/bin/nvcc" -O3 -DNDEBUG -arch=sm_90 --extended-lambda -std=c++20 -I"$src" \
    -isystem "$kokkos/include" -x cu -cubin "$src/profiler/kokkos_kernels.cc" -o "$out/kokkos_$side.cubin"
  nice "$cuda/bin/nvcc" -O3 -DNDEBUG -arch=sm_90 -std=c++20 -I"$src" -cubin \
    "$src/profiler/cuda/kernels.cu" -o "$out/cuda_$side.cubin"
done
python3 - "$nvdisasm" "$out" <<'EOF'
import re, subprocess, sys
nvdisasm, out = sys.argv[1:]

def sass(cubin):
    b = bytearray(open(cubin, "rb").read())
    if b[:4] != b"\x7fELF" or b[7] not in (0x33, 0x41):
        sys.exit(f"error: {cubin} is not a CUDA cubin")
    b[7], b[8] = 0x33, 7  # the header as CUDA 11.8 wrote it (bench/kokkos/sass.sh)
    b[0x14:0x18] = (118).to_bytes(4, "little")
    b[0x30:0x34] = (0x5A055A).to_bytes(4, "little")
    open(cubin + ".118", "wb").write(b)
    return subprocess.run([nvdisasm, "-c", cubin + ".118"], capture_output=True, text=True,
                          check=True).stdout

def kernels(text):
    hashed = lambda s: re.sub(r"_INTERNAL_\w{8}_|_GLOBAL__N__\w{8}_", "H", s)
    found = {}
    for block in text.split("//--------------------- ")[1:]:
        head = block.split("\n", 1)[0]
        if not head.startswith(".text."):
            continue
        ins = [re.sub(r"\s+", " ", m.group(1)) for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);", block)]
        ins = [hashed(re.sub(r"__internal_\d+_", "__internal_", re.sub(r"\.L_x_\d+", ".L", i))) for i in ins]
        mangled = head.split()[0][len(".text."):]
        found[hashed(mangled)] = (mangled, ins)
    return found

def name(mangled):
    d = subprocess.run(["c++filt", mangled], capture_output=True, text=True).stdout.strip()
    return re.sub(r"Kokkos::Impl::cuda_parallel_launch_\w+<Kokkos::Impl::ParallelFor<", "", d)[:150]

for probe in ("kokkos", "cuda"):
    old, new = (kernels(sass(f"{out}/{probe}_{side}.cubin")) for side in ("base", "tree"))
    print(f"== {probe} probe's kernels")
    for k in sorted(set(old) | set(new)):
        state = ("gone" if k not in new else "new" if k not in old
                 else "same" if old[k][1] == new[k][1] else "DIFFERENT")
        mangled, ins = new.get(k, old.get(k))
        print(f"{state:9} {len(ins):5d}  {name(mangled)}")
EOF
