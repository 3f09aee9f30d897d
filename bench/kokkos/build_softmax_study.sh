#!/usr/bin/env bash
# Builds bench/kokkos/softmax_study (the row softmax in several forms and buffers, see
# its header) against a CUDA Kokkos from scripts/build-kokkos.sh into BUILD/carry;
# bench/kokkos/pack_carry.sh calls it.
#   bench/kokkos/build_softmax_study.sh KOKKOS_ROOT BUILD
set -euo pipefail
kokkos=$(cd "${1:?usage: $0 KOKKOS_ROOT BUILD}" && pwd)
build=${2:?usage: $0 KOKKOS_ROOT BUILD}
root=$(cd "$(dirname "$0")/../.." && pwd)
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
grep -q '#define KOKKOS_ENABLE_CUDA' "$kokkos/include/KokkosCore_config.h" ||
  { echo "error: $kokkos is not a CUDA Kokkos" >&2; exit 1; }
mkdir -p "$build/carry"
nice "$nvcc" -O3 -DNDEBUG -arch=sm_90 --extended-lambda -std=c++20 -I"$root" \
  -isystem "$kokkos/include" -x cu "$root/bench/kokkos/softmax_study.cc" \
  "$root/profiler/cuda/kernels.cu" -L"$kokkos/lib" -lkokkoscore -ldl \
  -L"${CUDA_HOME:-/usr/local/cuda}/lib64/stubs" -lcuda \
  -o "$build/carry/softmax_study"
echo "built $build/carry/softmax_study"
