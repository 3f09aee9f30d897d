#!/usr/bin/env bash
# What the layer norm kernels compile to (issue 26): the SASS of the CUDA probe's twin
# (profiler/cuda/kernels.cu) and of layer_norm_study.cc's kernels (the Kokkos probe's
# kernel and the twin forms), sm_90, with a count of each kernel's memory, barrier and
# shuffle instructions.
#   bench/kokkos/sass.sh KOKKOS_ROOT OUTDIR
# KOKKOS_ROOT: a CUDA Kokkos from scripts/build-kokkos.sh. Writes OUTDIR/kernels.sass,
# OUTDIR/layer_norm_study.sass and prints the counts.
# CUDA 13 here has no cuobjdump or nvdisasm. Debian's non-free nvidia-cuda-toolkit (11.8)
# has nvdisasm, which knows sm_90 but not the ELF header CUDA 13 writes (OS/ABI 0x41, ABI
# version 8, new e_flags): the cubin is disassembled with the header written the 11.8 way
# (0x33, 7, e_flags 0x5a055a); the sections and instructions are untouched. NVDISASM names
# one; otherwise the package is fetched with apt from a private list (the system's apt
# sources and state are left alone) and unpacked under OUTDIR.
set -euo pipefail
kokkos=$(cd "${1:?usage: $0 KOKKOS_ROOT OUTDIR}" && pwd)
out=${2:?usage: $0 KOKKOS_ROOT OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$out"
out=$(cd "$out" && pwd)
nvdisasm=${NVDISASM:-}
if [[ -z $nvdisasm ]]; then
  apt_dir=$out/apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "http://deb.debian.org/debian bookworm non-free" > "$apt_dir/non-free.list"
  opts=(-o Dir::Etc::SourceList="$apt_dir/non-free.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache")
  apt-get "${opts[@]}" -qq update
  (cd "$apt_dir" && apt-get "${opts[@]}" -qq download nvidia-cuda-toolkit)
  dpkg -x "$apt_dir"/nvidia-cuda-toolkit_*.deb "$apt_dir/root"
  nvdisasm=$apt_dir/root/usr/bin/nvdisasm
fi

# The header bytes nvdisasm 11.8 reads: OS/ABI, ABI version, e_version, e_flags (sm_90).
as_cuda118() {
  python3 - "$1" "$2" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
if b[:4] != b"\x7fELF" or b[7] not in (0x33, 0x41):
    sys.exit(f"error: {sys.argv[1]} is not a CUDA cubin")
b[7], b[8] = 0x33, 7
b[0x14:0x18] = (118).to_bytes(4, "little")
b[0x30:0x34] = (0x5A055A).to_bytes(4, "little")
open(sys.argv[2], "wb").write(b)
EOF
}

flags=(-O3 -DNDEBUG -arch=sm_90 -std=c++20 -I"$root")
"$cuda/bin/nvcc" "${flags[@]}" -cubin "$root/profiler/cuda/kernels.cu" -o "$out/kernels.cubin"
"$cuda/bin/nvcc" "${flags[@]}" --extended-lambda -isystem "$kokkos/include" -x cu -cubin \
  "$root/bench/kokkos/layer_norm_study.cc" -o "$out/layer_norm_study.cubin"
for name in kernels layer_norm_study; do
  as_cuda118 "$out/$name.cubin" "$out/$name.cuda118.cubin"
  "$nvdisasm" -c "$out/$name.cuda118.cubin" > "$out/$name.sass"
done

# Per layer norm kernel: how many of each load, store, barrier and shuffle instruction.
python3 - "$out/kernels.sass" "$out/layer_norm_study.sass" <<'EOF'
import collections
import re
import subprocess
import sys

for path in sys.argv[1:]:
    for block in open(path).read().split("//--------------------- ")[1:]:
        head = block.split("\n", 1)[0]
        if not head.startswith(".text.") or not re.search("LayerNorm|TwinRows", head):
            continue
        name = subprocess.run(["c++filt", head.split()[0][len(".text."):]],
                              capture_output=True, text=True).stdout.strip()
        ops = collections.Counter(re.findall(r"\b((?:LDG|STG|LDS|STS|BAR|SHFL)[A-Z0-9._]*)", block))
        print(f"{name[:160]}\n    " + ", ".join(f"{n} {op}" for op, n in sorted(ops.items())))
EOF
