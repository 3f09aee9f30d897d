#!/usr/bin/env bash
# Builds and installs a Kokkos 4.x core (no tests, examples or benchmarks) for xdeep's
# device probes, statically linked so a probe binary carries it inside.
#   scripts/build-kokkos.sh SRC PREFIX [cuda|hip|openmp]
# SRC: a Kokkos 4.x source tree (a site's own, or a release of github.com/kokkos/kokkos).
# cuda:   CUDA backend for Hopper (sm_90) through Kokkos' nvcc_wrapper; CUDA from
#         CUDA_HOME (default /usr/local/cuda). Override the architecture with
#         KOKKOS_ARCH (a Kokkos_ARCH_* suffix, e.g. AMPERE80).
# hip:    HIP backend through hipcc (ROCm's); KOKKOS_ARCH defaults to AMD_GFX90A.
# openmp: host-only OpenMP backend, the CUDA-free path.
# Patches in scripts/kokkos-patches/<backend>-*.patch are applied to a copy of SRC when
# they still apply (each file says why it is needed).
# Then configure xdeep with -DKokkos_ROOT=PREFIX (see profiler/README.md).
set -euo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 SRC PREFIX [cuda|hip|openmp]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
prefix=$2
backend=${3:-cuda}
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ ! -f $src/core/src/Kokkos_Core.hpp ]]; then
  echo "error: $src is not a Kokkos source tree (no core/src/Kokkos_Core.hpp)" >&2
  exit 2
fi
version=$(sed -n 's/^ *set(Kokkos_VERSION_MAJOR \([0-9]*\)).*/\1/p' "$src/CMakeLists.txt")
if [[ $version != 4 ]]; then
  echo "error: $src is Kokkos ${version:-?}.x; this script builds Kokkos 4.x" >&2
  exit 2
fi

work=$prefix.build
rm -rf "$work"
mkdir -p "$work"
# Patch a copy: a site's tree stays untouched.
cp -a "$src" "$work/src"
for p in "$root"/scripts/kokkos-patches/"$backend"-*.patch; do
  [[ -e $p ]] || continue
  if patch -d "$work/src" -p1 --dry-run -s < "$p" > /dev/null 2>&1; then
    patch -d "$work/src" -p1 -s < "$p"
    echo "applied $(basename "$p")"
  else
    echo "skipped $(basename "$p") (does not apply: this Kokkos already has it or differs)"
  fi
done

args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix"
      -DCMAKE_CXX_STANDARD=20 -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON
      -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF -DKokkos_ENABLE_BENCHMARKS=OFF
      -DKokkos_ENABLE_SERIAL=ON)
case $backend in
  cuda)
    cuda_home=${CUDA_HOME:-/usr/local/cuda}
    export PATH=$cuda_home/bin:$PATH
    export NVCC_WRAPPER_DEFAULT_COMPILER=${NVCC_WRAPPER_DEFAULT_COMPILER:-g++}
    args+=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ARCH_"${KOKKOS_ARCH:-HOPPER90}"=ON
           -DCMAKE_CXX_COMPILER="$work/src/bin/nvcc_wrapper" -DCUDAToolkit_ROOT="$cuda_home")
    ;;
  hip)
    args+=(-DKokkos_ENABLE_HIP=ON -DKokkos_ARCH_"${KOKKOS_ARCH:-AMD_GFX90A}"=ON
           -DCMAKE_CXX_COMPILER="${HIPCXX:-hipcc}")
    ;;
  openmp)
    args+=(-DKokkos_ENABLE_OPENMP=ON)
    ;;
  *)
    echo "error: unknown backend '$backend' (cuda, hip or openmp)" >&2
    exit 2
    ;;
esac
# The machines this runs on are shared: low priority, few jobs.
nice cmake -S "$work/src" -B "$work/build" "${args[@]}"
nice cmake --build "$work/build" -j "${KOKKOS_BUILD_JOBS:-2}"
cmake --install "$work/build"
echo "Kokkos ($backend) installed in $prefix; configure xdeep with -DKokkos_ROOT=$prefix"
