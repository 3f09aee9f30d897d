#!/usr/bin/env bash
# One device call: xdeep-probe vs PyTorch on 1 and 2 GPUs (issue 5, items 4, 6, 7).
# Expects the carried binary in $XDEEP_CARRY (default build-profiler/carry; made by
# bench/profiler/pack_carry.sh BUILD_DIR) and writes at most 8 files under $OUT.
# Every step has a `timeout`, so the call ends.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/xdeep-out}
mkdir -p "$OUT"
carry=${XDEEP_CARRY:-build-profiler/carry}
probe=$carry/xdeep-probe
here=bench/profiler
tlib=$(python3 -c 'import os,nvidia; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}:$tlib/cu13/lib:$tlib/cublas/lib
log=$OUT/log.txt
# (no bare `wait` below: bash would also wait for this tee and deadlock)
exec > >(tee "$log") 2>&1
echo "== $(date -u +%FT%TZ) $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
nvcc --version | tail -2
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
ldd $probe | grep -E "not found|cublasLt|nccl"
$probe --help > /dev/null || { echo "xdeep-probe does not start"; ldd $probe; exit 1; }
el() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
t() { local s=$EPOCHREALTIME; "$@"; local rc=$?; echo "[time] $(el $s) s rc=$rc: $*"; return $rc; }

echo "== GPU unit tests"
t timeout 60 $carry/profiler_gpu_probes_test
echo "== compute set, one workload, bf16 (item 7)"
t timeout 120 $probe compute --suite gpu --shapes $here/shapes_gpt_h4096.json --out $OUT/compute_bf16.json
# Three rounds each, interleaved (probe, torch, probe, torch, ...): the summary keeps
# each side's best round per shape, so clock drift between rounds (the same kernel
# varied by up to 15 % between rounds in run 2) does not decide a ratio.
for round in a b c; do
  echo "== compute set, all dtypes, round $round"
  t timeout 200 $probe compute --suite gpu --shapes $here/shapes_gpt_h4096.json --dtypes bf16,fp16,tf32,fp32 --time-limit 190 --out $OUT/compute_$round.json
  echo "== torch.matmul at the same shapes, round $round"
  t timeout 150 python3 $here/compare_torch.py gemm --report $OUT/compute_$round.json --out $OUT/torch_gemm_$round.json
done
$probe merge $OUT/compute_[abc].json --out $OUT/compute_1gpu.json && rm -f $OUT/compute_[abc].json
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); [a['gemm'].extend(json.load(open(f))['gemm']) for f in sys.argv[2:-1]]; json.dump(a,open(sys.argv[-1],'w'),indent=2)" \
  $OUT/torch_gemm_[abc].json $OUT/torch_gemm.json && rm -f $OUT/torch_gemm_[abc].json
echo "== --algos 4: interleaved candidate timing (log only)"
t timeout 60 $probe --verbose compute --suite gpu --gemm 8192x8192x8192 --gemm 16384x4096x8192 --algos 4 --out /tmp/algos4.json
echo "== collectives, 1 GPU"
t timeout 90 env RANK=0 WORLD_SIZE=1 $probe collectives --out $OUT/coll_1gpu.json
# The 2-GPU set twice: with the host's NCCL (what a site measures), then with the
# NCCL that torch bundles, so the gated comparison with torch.distributed measures
# the probe's method, not two NCCL releases (host 2.28.3, torch 2.28.9 in run 2).
tnccl=$(dirname "$(find $tlib -name 'libnccl.so.2' 2>/dev/null | head -1)")
for lib in host torch; do
  echo "== collectives, 2 GPUs, $lib NCCL (item 7: <= 60 s)"
  if [ $lib = torch ]; then pre=$tnccl; dest=$OUT/coll_2gpu.json; else pre=; dest=/tmp/coll_2gpu_host.json; fi
  s=$EPOCHREALTIME
  LD_LIBRARY_PATH=$pre:$LD_LIBRARY_PATH RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29611 timeout 120 $probe collectives > /tmp/rank1.txt 2>&1 &
  r1=$!
  LD_LIBRARY_PATH=$pre:$LD_LIBRARY_PATH RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29611 timeout 120 $probe collectives --out $dest
  echo "rank0 rc=$?"; wait $r1; echo "rank1 rc=$?"; cat /tmp/rank1.txt
  echo "[time] $(el $s) s: 2-GPU collective set ($lib NCCL)"
  grep -o '"nccl": "[^"]*"' $dest
done
echo "== torch.distributed.all_reduce, 2 GPUs"
t timeout 150 torchrun --nproc_per_node=2 --master_port=29622 $here/compare_torch.py allreduce --out $OUT/torch_allreduce.json
echo "== never hang: rank 1 never starts (init-timeout 5 s)"
t timeout 30 env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29633 $probe collectives --init-timeout 5 --ops all_reduce --max-bytes 1M
echo "== never hang: rank 1 killed mid-run (op-time-limit 8 s)"
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29644 $probe collectives --ops all_reduce --min-bytes 1G --samples 100000 --op-time-limit 8 >/dev/null 2>&1 &
victim=$!
( sleep 6; kill -9 $victim ) &
killer=$!
t timeout 60 env RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29644 $probe collectives --ops all_reduce --min-bytes 1G --samples 100000 --op-time-limit 8 --init-timeout 20 --time-limit 40
wait $victim $killer
echo "== comparison (host NCCL, not gated here)"
python3 $here/compare_torch.py summarize --collectives /tmp/coll_2gpu_host.json --torch-allreduce $OUT/torch_allreduce.json
echo "== comparison"
python3 $here/compare_torch.py summarize --compute $OUT/compute_1gpu.json --torch-gemm $OUT/torch_gemm.json \
  --collectives $OUT/coll_2gpu.json --torch-allreduce $OUT/torch_allreduce.json --out $OUT/summary.json
ls -la $OUT
