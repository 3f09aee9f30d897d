#!/usr/bin/env bash
# Packs what bench/kokkos/run_device.sh runs on the GPU machine into BUILD/carry:
# xdeep-probe, profiler_kokkos_probes_test and profiler_gpu_probes_test built against a
# CUDA Kokkos (statically linked, scripts/build-kokkos.sh), plus the Debian shared libraries they need (absl,
# spdlog, fmt, gtest), which the GPU machine lacks. CUDA's cuBLASLt, NCCL, the driver
# and the C/C++ runtime come from the GPU machine itself. Also builds the studies
# (bench/kokkos/build_studies.sh) against the same Kokkos into the carry.
#   bench/kokkos/pack_carry.sh BUILD
set -euo pipefail
build=${1:?usage: $0 BUILD (a build configured with -DKokkos_ROOT=<CUDA Kokkos>)}
dest=$build/carry
rm -rf "$dest"
mkdir -p "$dest/lib"
bins=()
for b in profiler/xdeep-probe tests/profiler/profiler_kokkos_probes_test \
         tests/profiler/profiler_gpu_probes_test; do
  [[ -x $build/$b ]] || { echo "error: $build/$b is not built" >&2; exit 1; }
  cp "$build/$b" "$dest/"
  bins+=("$build/$b")
done
# Transitive dependencies do not see the binary's $ORIGIN RUNPATH: the run script puts
# carry/lib on LD_LIBRARY_PATH.
ldd "${bins[@]}" | awk '/=>/ {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libpthread*|librt*|libdl*|libcublas*|libnccl*|libcuda*|ld-linux*) ;;
    *) [[ -e $dest/lib/$name ]] || cp -L "$path" "$dest/lib/$name" ;;
  esac
done
strip --strip-debug "$dest"/xdeep-probe "$dest"/profiler_*_test
# The Kokkos this build was configured with: PREFIX/lib/cmake/Kokkos.
kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' "$build/CMakeCache.txt")
"$(dirname "$0")/build_studies.sh" "$kokkos_dir/../../.." "$build"
du -sh "$dest"
