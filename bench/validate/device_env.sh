# Sourced by this folder's device scripts after `carry` and `OUT` are set:
# the carried binaries' libraries and the CUDA libraries of the machine's
# torch on the library path, everything printed also kept in $OUT/log.txt
# with paths relative to the repository root and $OUT (../relative_paths.sh;
# the scripts run relative_paths_in on the files they leave), and `stamp` for
# lines that say when they happened.
mkdir -p "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/../relative_paths.sh"
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib
relative_log "$OUT/log.txt"
T0=$SECONDS
stamp() { echo "[t=$((SECONDS - T0)) s] $*"; }
