#!/usr/bin/env bash
# One device call: xdeep-probe vs PyTorch on 1 and 2 GPUs (issue 5, items 4, 6, 7).
# Expects the carried binary in $XDEEP_CARRY (default build-profiler/carry; made by
# bench/profiler/pack_carry.sh BUILD_DIR) and writes 6 files under $OUT (the device
# returns at most 8).
# Every step has a `timeout`, so the call ends. PARTS picks parts (default all:
# tests,compute,collectives,allreduce,hang,gemm); GEMM_ARGS overrides the GEMM pairing's
# shapes, dtypes, rounds and timing.
set -u
PARTS=,${PARTS:-tests,compute,collectives,allreduce,hang,gemm},
part() { [[ $PARTS == *,$1,* ]]; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/xdeep-out}
mkdir -p "$OUT" /tmp/xr
carry=${XDEEP_CARRY:-build-profiler/carry}
probe=$carry/xdeep-probe
here=bench/profiler
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib
log=$OUT/log.txt
# (no bare `wait` below: bash would also wait for this tee and deadlock)
source bench/relative_paths.sh  # the log and files name paths relative to the checkout and $OUT
trap 'relative_paths_in "$OUT"' EXIT
relative_log "$log"
echo "== $(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,compute_mode --format=csv
nvcc --version | tail -2
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
ldd $probe | grep -E "not found|cublasLt|nccl"
$probe --help > /dev/null || { echo "xdeep-probe does not start"; ldd $probe; exit 1; }
el() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
t() { local s=$EPOCHREALTIME; "$@"; local rc=$?; echo "[time] $(el $s) s rc=$rc: $*"; return $rc; }

if part tests; then
echo "== GPU unit tests"
t timeout 60 $carry/profiler_gpu_probes_test
fi
if part compute; then
echo "== compute set, one workload, bf16 (item 7)"
t timeout 120 $probe compute --suite gpu --shapes $here/shapes_gpt_h4096.json --out $OUT/compute_bf16.json
fi
if part collectives; then
echo "== collectives, 1 GPU"
t timeout 90 env RANK=0 WORLD_SIZE=1 $probe collectives --out /tmp/coll_1gpu.json
fi
# 2 GPUs. The whole set once with the host's NCCL (item 7, what a site measures); then
# the gated all-reduce comparison in three alternating rounds, probe then torch, the probe
# on the NCCL torch bundles so the pair differs in method, not NCCL release.
tnccl=$(dirname "$(find $tlib -name 'libnccl.so.2' 2>/dev/null | head -1)")
two() {  # two(lib_dir, dest, port, args...): one 2-rank probe run
  local pre=$1 dest=$2 port=$3; shift 3
  LD_LIBRARY_PATH=$pre:$LD_LIBRARY_PATH RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 $probe collectives "$@" > /tmp/rank1.txt 2>&1 &
  local r1=$!
  LD_LIBRARY_PATH=$pre:$LD_LIBRARY_PATH RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 120 $probe collectives "$@" --out $dest
  echo "rank0 rc=$?"; wait $r1; echo "rank1 rc=$?"; cat /tmp/rank1.txt
  grep -o '"nccl": "[^"]*"' $dest
}
if part collectives; then
echo "== collectives, 2 GPUs, host NCCL (item 7: <= 60 s)"
s=$EPOCHREALTIME; two "" $OUT/coll_2gpu.json 29611; echo "[time] $(el $s) s: 2-GPU collective set (host NCCL)"
fi
if part allreduce; then
port=29612
for round in a b c; do
  echo "== all-reduce, 2 GPUs, probe on torch's NCCL, round $round"
  t two "$tnccl" /tmp/xr/coll_ar_$round.json $port --ops all_reduce
  echo "== torch.distributed.all_reduce, 2 GPUs, round $round"
  t timeout 100 torchrun --nproc_per_node=2 --master_port=$((port + 10)) $here/compare_torch.py allreduce --out /tmp/xr/torch_allreduce_$round.json
  port=$((port + 1))
done
# The all-reduce rounds as one file (the device returns at most 8).
python3 -c "import json,sys; json.dump({f.split('/')[-1]: json.load(open(f)) for f in sys.argv[1:]}, open('$OUT/allreduce_rounds.json','w'), indent=1)" /tmp/xr/*.json
fi
if part hang; then
echo "== never hang: rank 1 never starts (init-timeout 5 s)"
t timeout 30 env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29633 $probe collectives --init-timeout 5 --ops all_reduce --max-bytes 1M
echo "== never hang: rank 1 killed mid-run (op-time-limit 8 s)"
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29644 $probe collectives --ops all_reduce --min-bytes 1G --samples 100000 --op-time-limit 8 >/dev/null 2>&1 &
victim=$!
( sleep 6; kill -9 $victim ) &
killer=$!
t timeout 60 env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29644 $probe collectives --ops all_reduce --min-bytes 1G --samples 100000 --op-time-limit 8 --init-timeout 20 --time-limit 40
wait $victim $killer
fi
# Last: it saves after every round and dtype, so a call cut short keeps what it has.
if part gemm; then
echo "== GEMM: probe and torch.matmul measured the same way, interleaved (item 6)"
# shellcheck disable=SC2086 # GEMM_ARGS is a list of options
t timeout 540 python3 $here/compare_torch.py paired --probe $probe --out $OUT/paired_gemm.json \
  ${GEMM_ARGS:---shapes $here/shapes_gpt_h4096.json --dtypes bf16,fp16,tf32,fp32 --rounds 2 --settle-ms 100 --warm-up-ms 300 --samples 40}
fi
echo "== comparison"
summary=()
[ -e $OUT/paired_gemm.json ] && summary+=(--paired $OUT/paired_gemm.json)
ls /tmp/xr/torch_allreduce_[abc].json > /dev/null 2>&1 &&
  summary+=(--collectives /tmp/xr/coll_ar_[abc].json --torch-allreduce /tmp/xr/torch_allreduce_[abc].json)
if [ -e $OUT/coll_2gpu.json ] && part allreduce; then
  echo "-- host NCCL, one round (not gated)"
  python3 $here/compare_torch.py summarize --collectives $OUT/coll_2gpu.json --torch-allreduce /tmp/xr/torch_allreduce_[abc].json
fi
python3 $here/compare_torch.py summarize "${summary[@]}" --out $OUT/summary.json
echo "summary rc=$?"
ls -la $OUT
