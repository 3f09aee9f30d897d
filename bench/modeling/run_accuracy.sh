#!/usr/bin/env bash
# Accuracy of xdeep's modelers against Extra-P itself on the synthetic cases.
#   bench/modeling/run_accuracy.sh [BUILD_DIR] [extra xdeep_modeling_accuracy args...]
# PyPI is not reachable from this VM, so Extra-P 4.2.5's source comes from a
# snapshot of github.com/extra-p/extrap (by default where the search tool's
# fetch puts it), unpacked into BUILD_DIR/extrap-src (ignored, never
# committed), and runs under Debian's python3 with Debian's packages
# (python3-numpy python3-scipy python3-marshmallow python3-tqdm
# python3-packaging python3-sklearn). Results land in BUILD_DIR/modeling-accuracy.
# Takes ~1-1.5 min on the 2-core VM (Extra-P ~20-30 s, xdeep ~40 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
shift || true
bin=$build/bench/modeling/xdeep_modeling_accuracy
[[ -x $bin ]] || { echo "build it first: cmake --build $build --target xdeep_modeling_accuracy" >&2; exit 1; }
out=$build/modeling-accuracy
mkdir -p "$out"
# Where Extra-P comes from, first found: EXTRAP_SOURCE (a folder holding the
# `extrap` package); a snapshot git directory (EXTRAP_SNAPSHOT); else pip in a
# virtual environment (needs PyPI, which this VM cannot reach).
python=/usr/bin/python3
source_dir=${EXTRAP_SOURCE:-}
snapshot=${EXTRAP_SNAPSHOT:-}
if [[ -z $source_dir && -n $snapshot && -d $snapshot ]]; then
  source_dir=$build/extrap-src
  rm -rf "$source_dir" && mkdir -p "$source_dir"
  git --git-dir="$snapshot" archive HEAD extrap | tar -x -C "$source_dir"
  echo "Extra-P from $snapshot at $(git --git-dir="$snapshot" log -1 --format='%h %s')"
elif [[ -z $source_dir ]]; then
  venv=$build/extrap-venv
  if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv" && "$venv/bin/pip" install -q 'extrap==4.2.5' || {
      rm -rf "$venv"
      echo "no Extra-P: pip could not install extrap==4.2.5 and there is no snapshot;" \
           "set EXTRAP_SOURCE to a folder holding the extrap package" >&2
      exit 1
    }
  fi
  python=$venv/bin/python
  source_dir=$venv  # nothing to add to sys.path: the package is installed
  echo "Extra-P from PyPI: $("$python" -c 'import extrap; print(extrap.__version__)')"
fi
if ! "$python" -c 'import numpy, marshmallow, tqdm, packaging' 2>/dev/null; then
  echo "Extra-P needs Debian's python3-numpy python3-scipy python3-marshmallow python3-tqdm" \
       "python3-packaging python3-sklearn (apt-get install them)" >&2
  exit 1
fi
"$bin" --cases-out "$out/cases.json"
"$python" "$root/bench/modeling/extrap_models.py" "$source_dir" "$out/cases.json" "$out/extrap.json"
"$bin" --extrap "$out/extrap.json" --csv "$out/results.csv" "$@"
