#!/usr/bin/env bash
# Packs xdeep-probe (and xdeep_validate, where built) and the Debian shared libraries it needs (absl, spdlog, fmt, Kokkos)
# into build-profiler/carry/, so the binary built here runs on the GPU machine, which
# lacks those packages. CUDA's cuBLASLt, NCCL, the driver and the C/C++ runtime come
# from the GPU machine itself (same CUDA 13 major version; NCCL ABI is stable).
set -euo pipefail
build=${1:-$(cd "$(dirname "$0")/../.." && pwd)/build-profiler}
dest=$build/carry
rm -rf "$dest"
mkdir -p "$dest/lib"
cp "$build/profiler/xdeep-probe" "$dest/"
bins="$build/profiler/xdeep-probe"
if [ -x "$build/bench/validate/xdeep_validate" ]; then
  cp "$build/bench/validate/xdeep_validate" "$dest/"
  bins="$bins $build/bench/validate/xdeep_validate"
fi
# The GPU unit tests, where built, travel too and run there.
if [ -x "$build/tests/profiler/profiler_gpu_probes_test" ]; then
  cp "$build/tests/profiler/profiler_gpu_probes_test" "$dest/"
  bins="$bins $build/tests/profiler/profiler_gpu_probes_test"
fi
# Transitive dependencies do not see the binary's $ORIGIN RUNPATH: callers put
# carry/lib on LD_LIBRARY_PATH.
ldd $bins | awk '/=>/ {print $1, $3}' | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|librt*|libdl*|libcublas*|libnccl*|libcuda*|ld-linux*) ;;
    *) [ -e "$dest/lib/$name" ] || cp -L "$path" "$dest/lib/$name" ;;
  esac
done
# Debug info stays here: the device carries 64 MiB at most.
strip --strip-debug "$dest"/xdeep-probe "$dest"/*_test "$dest"/xdeep_validate 2>/dev/null || true
du -sh "$dest"
