#!/usr/bin/env bash
# The unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (clang),
# the nightly check of docs/fuzzing.md: any report fails the run.
#   scripts/sanitize.sh [BUILD_DIR] [ctest args...]     (default build-sanitize/)
# A cold build of everything takes about an hour on the 2-core CI VM, so this
# runs nightly rather than in .ci/run. Extra cmake options come from
# XDEEP_SANITIZE_CMAKE_ARGS (e.g. -DXDEEP_FUZZ=ON builds the fuzzers too).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-sanitize}
shift || true

command -v clang++ > /dev/null || {
  echo "sanitize.sh: needs clang; apt-get install clang libclang-rt-14-dev" >&2
  exit 1
}

# Every finding stops the test that made it; leaks count.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# -O1 with line tables only, as the sanitizers' documentation advises: the
# instrumented build of every test compiles in about half the time of -O2 -g
# (tuning.pb.cc alone took over 6 minutes at -O2 -g on the loaded 2-core VM),
# and reports still name file and line. Debug also keeps the tuner's -O3 off.
# shellcheck disable=SC2086  # the extra arguments are meant to split
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" "-DCMAKE_C_FLAGS_DEBUG=-O1 -gline-tables-only" \
  -DXDEEP_SANITIZE=address,undefined -DXDEEP_WITH_CUDA=OFF -DXDEEP_BUILD_BENCH=OFF \
  ${XDEEP_SANITIZE_CMAKE_ARGS:-} > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest -L unit --output-on-failure --timeout 900 "$@"
