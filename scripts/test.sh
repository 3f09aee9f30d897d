#!/usr/bin/env bash
# README command 2: install, build, and run every test (unit + integration on
# a real local Slurm with the real daemon and plugin).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${XDEEP_BUILD_DIR:-$root/build}

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
cd "$build"
ctest --output-on-failure --timeout 600 "$@"
