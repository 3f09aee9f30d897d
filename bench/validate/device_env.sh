# Sourced by this folder's device scripts after `carry` and `OUT` are set:
# the carried binaries' libraries and the CUDA libraries of the machine's
# torch on the library path, everything printed also kept in $OUT/log.txt,
# and `stamp` for lines that say when they happened.
mkdir -p "$OUT"
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib
exec > >(tee "$OUT/log.txt") 2>&1
T0=$SECONDS
stamp() { echo "[t=$((SECONDS - T0)) s] $*"; }
