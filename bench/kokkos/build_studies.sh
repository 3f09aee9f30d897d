#!/usr/bin/env bash
# Builds the device studies of bench/kokkos (softmax_study: the row softmax in several
# forms and buffers; layer_norm_study: the layer norm probe kernels and forms of the CUDA
# twin; see their headers) with nvcc against a CUDA Kokkos from scripts/build-kokkos.sh
# into BUILD/carry; bench/kokkos/pack_carry.sh calls it.
#   bench/kokkos/build_studies.sh KOKKOS_ROOT BUILD
set -euo pipefail
kokkos=$(cd "${1:?usage: $0 KOKKOS_ROOT BUILD}" && pwd)
build=${2:?usage: $0 KOKKOS_ROOT BUILD}
root=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
grep -q '#define KOKKOS_ENABLE_CUDA' "$kokkos/include/KokkosCore_config.h" ||
  { echo "error: $kokkos is not a CUDA Kokkos" >&2; exit 1; }
mkdir -p "$build/carry"
for study in softmax_study layer_norm_study; do
  # -Xptxas -v: the registers and spills of every kernel, kept beside the binary.
  nice "$cuda/bin/nvcc" -O3 -DNDEBUG -arch=sm_90 --extended-lambda -std=c++20 -I"$root" \
    -isystem "$kokkos/include" -Xptxas -v -x cu "$root/bench/kokkos/$study.cc" \
    "$root/profiler/cuda/kernels.cu" "$root/profiler/kokkos_row_launch.cc" -L"$kokkos/lib" -lkokkoscore -ldl \
    -L"$cuda/lib64/stubs" -lcuda -o "$build/carry/$study" 2> "$build/carry/$study.ptxas.txt" ||
    { cat "$build/carry/$study.ptxas.txt" >&2; exit 1; }
  echo "built $build/carry/$study"
done
