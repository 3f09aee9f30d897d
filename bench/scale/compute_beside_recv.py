#!/usr/bin/env python3
"""How much slower does compute run while an NCCL receive kernel waits beside it, and does that
depend on NCCL's channel count? (issue 25 item 2, session 22 h25g; bench/scale/README.md,
"Session 22 (h25g)")

sm_contention_check.py found that interleaving's measured excess on 2x H200 follows the share of
the step in which receive kernels are resident, but barely moves when NCCL_MAX_NCHANNELS=4 cuts
the SMs they hold from 16-32 to 4: not the SM share. A mechanism that would not depend on the
channel count: kernels whose grid is the GPU's SM count (persistent GEMMs) or a few waves of it
run a late CTA or an extra partial wave when any SM is taken, whatever the number. This script
measures it directly on two GPUs of one host: rank 1 posts a receive (torch irecv of an
activation-sized tensor; NCCL launches its receive kernel, which spins until the data comes) and
runs a block's matmuls on its compute stream while rank 0 holds the send back until they are
done; against the same matmuls with no receive pending. Shapes: one GPT block's four GEMMs of
the 22B shape (sequence 2048, hidden 6144, MLP 4h; forward) and a square 4096 one; bf16.

Prints and writes $OUT/compute_beside_recv.json: per shape the matmuls' time alone and beside a
waiting receive (CUDA events, median of REPS), and their ratio, with NCCL_MAX_NCHANNELS as set.
Run it at NCCL's default and at 4 and 1 channels: a ratio that stays with fewer channels is the
wave / persistent-kernel effect, one that falls with them is the SM share.

Command (2 GPUs of one host, ~20 s a run):
  for c in default 4 1; do mkdir -p $OUT/$c; ( [ $c = default ] || export NCCL_MAX_NCHANNELS=$c;
    OUT=$OUT/$c timeout 90 torchrun --nproc-per-node 2 bench/scale/compute_beside_recv.py ); done
Knobs: REPS (15), ITERS (10 matmul rounds a timing), RECV_MB (25.2).
"""
import json
import os
import time

REPS = int(os.environ.get("REPS", "15"))
ITERS = int(os.environ.get("ITERS", "10"))
RECV_MB = float(os.environ.get("RECV_MB", "25.2"))


def main():
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank = dist.get_rank()
    on = {"device": "cuda", "dtype": torch.bfloat16}
    s, h = 2048, 6144
    shapes = {
        "block_22b": [(s, h, 3 * h), (s, h, h), (s, h, 4 * h), (s, 4 * h, h)],
        "square_4096": [(4096, 4096, 4096)],
    }
    tensors = {
        name: [(torch.randn(m, k, **on), torch.randn(k, n, **on)) for m, k, n in dims]
        for name, dims in shapes.items()
    }
    buf = torch.empty(int(RECV_MB * 1e6 / 2), **on)
    # The pair's communicator is created on the first send / receive: once, outside the timing.
    if rank == 0:
        dist.send(buf, 1)
    else:
        dist.recv(buf, 0)
    torch.cuda.synchronize()

    def run(name):
        for _ in range(ITERS):
            for a, b in tensors[name]:
                a @ b

    def timed(name):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(name)
        end.record()
        return start, end

    result = {"nccl_max_nchannels": os.environ.get("NCCL_MAX_NCHANNELS", "default"), "shapes": {}}
    for name in shapes:
        run(name)  # cuBLAS warm-up
        torch.cuda.synchronize()
        alone, beside = [], []
        for _ in range(REPS):
            # Alone: nothing pending on rank 1.
            dist.barrier()
            if rank == 1:
                start, end = timed(name)
                torch.cuda.synchronize()
                alone.append(start.elapsed_time(end) / 1e3)
            # Beside: rank 1's receive kernel waits while its matmuls run; rank 0 sends later.
            dist.barrier()
            torch.cuda.synchronize()
            if rank == 0:
                time.sleep(0.2)  # longer than the matmuls (~30 ms): the receive waits throughout
                dist.send(buf, 1)
            else:
                work = dist.irecv(buf, 0)
                start, end = timed(name)
                end.synchronize()
                beside.append(start.elapsed_time(end) / 1e3)
                work.wait()
            torch.cuda.synchronize()
        if rank == 1:
            a = sorted(alone)[len(alone) // 2]
            b = sorted(beside)[len(beside) // 2]
            result["shapes"][name] = {"alone_s": a, "beside_recv_s": b, "ratio": b / a,
                                      "alone_all_s": alone, "beside_all_s": beside}
            print(f"{name:12s} alone {1e3 * a:8.2f} ms  beside a waiting receive {1e3 * b:8.2f} ms"
                  f"  ratio {b / a:.3f}  (NCCL_MAX_NCHANNELS={result['nccl_max_nchannels']})")
    if rank == 1:
        result.update({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "reps": REPS, "iters": ITERS, "recv_bytes": buf.numel() * 2})
        out = os.environ.get("OUT")
        if out:
            with open(os.path.join(out, "compute_beside_recv.json"), "w") as f:
                json.dump(result, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
