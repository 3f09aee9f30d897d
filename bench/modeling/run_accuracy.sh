#!/usr/bin/env bash
# Accuracy of xdeep's modelers against Extra-P itself on the synthetic cases.
#   bench/modeling/run_accuracy.sh [BUILD_DIR] [extra xdeep_modeling_accuracy args...]
# Extra-P is not on PyPI here (no network to it); its source comes from a
# snapshot of github.com/extra-p/extrap (EXTRAP_SNAPSHOT: a git directory, by
# default where the search tool's fetch puts it, or EXTRAP_SOURCE: a folder
# holding the `extrap` package), unpacked into BUILD_DIR/extrap-src, and runs
# under Debian's python3 with Debian's packages (python3-numpy python3-scipy
# python3-marshmallow python3-tqdm python3-packaging python3-sklearn).
# Takes ~1.5 min on the 2-core VM (Extra-P ~45 s, xdeep ~45 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
shift || true
bin=$build/bench/modeling/xdeep_modeling_accuracy
[[ -x $bin ]] || { echo "build it first: cmake --build $build --target xdeep_modeling_accuracy" >&2; exit 1; }
python=/usr/bin/python3
if ! $python -c 'import numpy, marshmallow, tqdm, packaging' 2>/dev/null; then
  echo "Extra-P needs Debian's python3-numpy python3-scipy python3-marshmallow python3-tqdm" \
       "python3-packaging python3-sklearn (apt-get install them)" >&2
  exit 1
fi
out=$build/modeling-accuracy
mkdir -p "$out"
source_dir=${EXTRAP_SOURCE:-}
if [[ -z $source_dir ]]; then
  snapshot=${EXTRAP_SNAPSHOT:-/work/.mirror/extra-p+extrap/repo}
  [[ -d $snapshot ]] || { echo "no Extra-P snapshot at $snapshot: set EXTRAP_SNAPSHOT or EXTRAP_SOURCE" >&2; exit 1; }
  source_dir=$build/extrap-src
  rm -rf "$source_dir" && mkdir -p "$source_dir"
  git --git-dir="$snapshot" archive HEAD extrap | tar -x -C "$source_dir"
  echo "Extra-P from $snapshot at $(git --git-dir="$snapshot" log -1 --format='%h %s')"
fi
"$bin" --cases-out "$out/cases.json"
$python "$root/bench/modeling/extrap_models.py" "$source_dir" "$out/cases.json" "$out/extrap.json"
"$bin" --extrap "$out/extrap.json" --csv "$out/results.csv" "$@"
