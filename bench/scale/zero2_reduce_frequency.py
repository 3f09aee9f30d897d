#!/usr/bin/env python3
"""A stage's fp32 gradient reduce-scatter after every micro-batch against once a step,
on two GPUs, beside a backward of a set length: the one term behind the tuner's
Llama 3 405B picks (bench/scale/README.md, "Session 22 (h25g)").

The tuner charges Meta's published layout (tp 8 x pp 16, v 8, FSDP sharding
gradients, Megatron's engine) a reduce-scatter of the rank's whole stage
gradients in fp32 after every micro-batch (ZeRO-2 keeps no whole buffer to
accumulate into), beside that micro-batch's backward, the last bucket and
whatever outlasts the backward waiting: 110 ms of a 277 ms reduce-scatter
beside a 166 ms backward, 3.5 s of a 13.7 s step at 8,192 GPUs. Its pick keeps
whole fp32 gradients (ZeRO-1, tp 4 x cp 4: half the parameters a GPU) and
reduces them once a step. grad_sync_overlap.py measured the same with FSDP2's
unit order; this script measures it without a framework, the way Megatron's
bucketed reduction issues it, so the tuner's rule (tuner/grad_sync_overlap.h,
ExposedReduction: max(last bucket, reduce-scatter - backward)) is tested on its
own terms, and adds the two other readings of what Meta did:

  compute       forward + backward matmuls, MICRO micro-batches, no reduction
  per_step      BUCKETS fp32 buckets reduce-scattered beside the last
                micro-batch's backward only (the pick's way: whole gradients)
  per_round     the same after every ROUND-th micro-batch (a schedule that runs
                ROUND micro-batches of a chunk back to back and accumulates
                between them: fewer, not no, reductions)
  per_mb        after every micro-batch beside its backward; the backward's
                end waits for them (the tuner's rule, DeepSpeed's ZeRO-2)
  per_mb_async  after every micro-batch, left running beside the next
                micro-batch's forward and backward; a bucket's next backward
                piece waits for its previous reduce-scatter (buffers are
                reused), the step's end waits for all (Meta: FSDP "reducing
                gradients asynchronously", sec. 3.3.2)

The backward is BUCKETS pieces of bf16 matmuls; after each piece its bucket's
reduce-scatter is issued on a second stream. Its length is set from the
reduce-scatter measured alone: backward = reduce-scatter / RATIO (default
1.67, the tuner's 277 / 166 ms for Meta's 8K layout), the forward half the
backward. Gradients: GRAD_GB gigabytes of fp32 a rank (default 12.8: Meta's
stage, 3.19 G parameters at tp 8 x pp 16), reduce-scattered over both ranks
into a shard that per_mb / per_round add into an fp32 accumulator.

Prints and writes $OUT/zero2_reduce_frequency.json: median step of each mode,
the reduce-scatter alone (whole and in buckets), the backward alone, and per
micro-batch the cost per_mb adds beyond compute against the tuner's rule with
the measured figures. The tuner's own figure for the same bytes on two H200s:

  python3 bench/scale/zero2_reduce_frequency.py --model build/bench/scale/tp_overhead_model JSON

(runs `tp_overhead_model --profile h200-sxm --reduce-scatter BYTES --backward S
--bucket BYTES`; no GPU).

Command (2 GPUs of one host, ~1 min; DEADLINE_S stops it between modes):
  OUT=$OUT torchrun --nproc-per-node 2 bench/scale/zero2_reduce_frequency.py
Knobs (environment): GRAD_GB (12.8), BUCKETS (16), MICRO (16), ROUND (4),
RATIO (1.67), STEPS (5, after one warm-up), DIM (4096, the matmuls' size),
DEADLINE_S (150).
"""
import json
import os
import subprocess
import sys
import time

GRAD_GB = float(os.environ.get("GRAD_GB", "12.8"))
BUCKETS = int(os.environ.get("BUCKETS", "16"))
MICRO = int(os.environ.get("MICRO", "16"))
ROUND = int(os.environ.get("ROUND", "4"))
RATIO = float(os.environ.get("RATIO", "1.67"))
STEPS = int(os.environ.get("STEPS", "5"))
DIM = int(os.environ.get("DIM", "4096"))
DEADLINE_S = float(os.environ.get("DEADLINE_S", "150"))
START = time.time()


def check_deadline(phase):
    spent = time.time() - START
    if spent > DEADLINE_S:
        raise SystemExit(
            f"zero2_reduce_frequency: {spent:.0f} s spent before {phase}, over DEADLINE_S="
            f"{DEADLINE_S:.0f}; lower STEPS or MICRO, or raise DEADLINE_S"
        )


def nccl_version(torch):
    v = torch.cuda.nccl.version()
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def run_device():
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    numel = int(GRAD_GB * 1e9 / 4) // (BUCKETS * world) * BUCKETS * world
    bucket = numel // BUCKETS
    grads = torch.ones(numel, device="cuda", dtype=torch.float32)
    shard = torch.zeros(numel // world, device="cuda", dtype=torch.float32)
    acc = torch.zeros_like(shard)
    gbuckets = list(grads.view(BUCKETS, bucket).unbind(0))
    sbuckets = list(shard.view(BUCKETS, bucket // world).unbind(0))
    abuckets = list(acc.view(BUCKETS, bucket // world).unbind(0))
    a = torch.randn(DIM, DIM, device="cuda", dtype=torch.bfloat16)
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()

    def timed(fn, reps):
        times = []
        for _ in range(reps + 1):
            torch.cuda.synchronize()
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        rest = sorted(times[1:])
        return rest[len(rest) // 2]

    def matmuls(n):
        for _ in range(n):
            a @ a

    # Reduce-scatter alone: one call over the whole buffer, and bucket by bucket.
    check_deadline("reduce_scatter_alone")
    rs_whole = timed(lambda: dist.reduce_scatter_tensor(shard, grads), 3)
    rs_buckets = timed(
        lambda: [dist.reduce_scatter_tensor(sbuckets[k], gbuckets[k]) for k in range(BUCKETS)], 3
    )
    # One matmul's time sets the backward: rs_buckets / RATIO, in BUCKETS pieces.
    one = timed(lambda: matmuls(50), 3) / 50
    per_piece = max(1, round(rs_buckets / RATIO / BUCKETS / one))
    fwd_n = max(1, BUCKETS * per_piece // 2)
    backward_alone = timed(lambda: matmuls(BUCKETS * per_piece), 3)

    done = [torch.cuda.Event() for _ in range(BUCKETS)]
    issued = [False] * BUCKETS

    def micro_batch(reduce, wait_at_end, add):
        matmuls(fwd_n)
        for k in range(BUCKETS):
            if issued[k]:
                main.wait_event(done[k])  # the bucket is written again only once reduced
                issued[k] = False
            matmuls(per_piece)
            if reduce:
                ready = torch.cuda.Event()
                ready.record(main)
                with torch.cuda.stream(side):
                    side.wait_event(ready)
                    dist.reduce_scatter_tensor(sbuckets[k], gbuckets[k])
                    if add:
                        abuckets[k].add_(sbuckets[k])
                    done[k].record(side)
                issued[k] = True
        if reduce and wait_at_end:
            for k in range(BUCKETS):
                main.wait_event(done[k])
                issued[k] = False

    def step(reduce_on, wait_at_end=True, add=True):
        def run():
            for i in range(MICRO):
                micro_batch(reduce_on(i), wait_at_end, add)
            for k in range(BUCKETS):
                if issued[k]:
                    main.wait_event(done[k])
                    issued[k] = False

        return run

    modes = {
        "compute": step(lambda i: False),
        "per_step": step(lambda i: i == MICRO - 1, add=False),
        "per_round": step(lambda i: i % ROUND == ROUND - 1),
        "per_mb": step(lambda i: True),
        "per_mb_async": step(lambda i: True, wait_at_end=False),
    }
    steps = {}
    for name, fn in modes.items():
        check_deadline(name)
        steps[name] = timed(fn, STEPS)
    compute = steps["compute"]
    per_mb_cost = (steps["per_mb"] - compute) / MICRO
    last = rs_buckets / BUCKETS
    result = {
        "world": world,
        "grad_bytes_fp32": 4 * numel,
        "buckets": BUCKETS,
        "bucket_bytes": 4 * bucket,
        "micro_batches": MICRO,
        "round": ROUND,
        "ratio_asked": RATIO,
        "matmul_dim": DIM,
        "matmul_s": one,
        "forward_matmuls": fwd_n,
        "backward_matmuls": BUCKETS * per_piece,
        "backward_alone_s": backward_alone,
        "reduce_scatter_whole_s": rs_whole,
        "reduce_scatter_buckets_s": rs_buckets,
        "step_s": steps,
        "cost_per_micro_batch_s": {
            k: (v - compute) / MICRO for k, v in steps.items() if k != "compute"
        },
        "per_step_cost_s": steps["per_step"] - compute,
        "tuner_rule_measured_inputs_s": max(last, rs_buckets - backward_alone),
        "per_mb_cost_per_micro_batch_s": per_mb_cost,
        "torch": torch.__version__,
        "nccl": nccl_version(torch),
        "device": torch.cuda.get_device_name(),
        "nccl_env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
        "seconds": time.time() - START,
    }
    if rank == 0:
        print(json.dumps(result, indent=1))
        out = os.environ.get("OUT")
        if out:
            with open(os.path.join(out, "zero2_reduce_frequency.json"), "w") as f:
                json.dump(result, f, indent=1)
    dist.destroy_process_group()


def run_model(tool, path):
    """The tuner's figures for the run in `path`, printed beside the measurement."""
    with open(path) as f:
        r = json.load(f)
    out = subprocess.run(
        [tool, "--profile", "h200-sxm", "--reduce-scatter", str(r["grad_bytes_fp32"]),
         "--backward", str(r["backward_alone_s"]), "--bucket", str(r["bucket_bytes"])],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    rs_model, last_model, exposed_model = (float(x) for x in out)
    m = r["micro_batches"]
    print(f"two ranks, {r['grad_bytes_fp32'] / 1e9:.2f} GB of fp32 gradients in {r['buckets']} "
          f"buckets, {m} micro-batches, backward {1e3 * r['backward_alone_s']:.1f} ms "
          f"({r['device']}, NCCL {r['nccl']})")
    net = r.get("nccl_env", {}).get("NCCL_P2P_DISABLE") == "1"
    where = ("NVLink pair: not this run's socket path, so only the rule with the measured "
             "figures applies" if net else "NVLink pair")
    print(f"reduce-scatter alone: measured {1e3 * r['reduce_scatter_buckets_s']:.1f} ms in buckets "
          f"({1e3 * r['reduce_scatter_whole_s']:.1f} whole), tuner h200-sxm {1e3 * rs_model:.1f} ms "
          f"({where})")
    rs = r["reduce_scatter_buckets_s"]
    print("cost beyond compute as a share of the reduce-scatter alone, a micro-batch (per_round / "
          "per_step: a reduction): " + ", ".join(
              f"{k} {v * (m if k == 'per_step' else (r['round'] if k == 'per_round' else 1)) / rs:.2f}"
              for k, v in r["cost_per_micro_batch_s"].items()) +
          f"; the rule {r['tuner_rule_measured_inputs_s'] / rs:.2f}")
    print("cost beyond compute, ms a micro-batch (per_step: the once-a-step reduction spread):")
    for k, v in r["cost_per_micro_batch_s"].items():
        print(f"  {k:13s} {1e3 * v:8.2f}")
    print(f"tuner's rule, max(last bucket, rs - backward): with the measured rs "
          f"{1e3 * r['tuner_rule_measured_inputs_s']:.2f} ms, with its own rs "
          f"{1e3 * exposed_model:.2f} ms")
    saved = r["step_s"]["per_mb"] - r["step_s"]["per_step"]
    rule = r["tuner_rule_measured_inputs_s"]
    own = "" if net else (f", with its own rs {1e3 * (m - 1) * exposed_model:.1f} ms")
    print(f"a step: per_mb - per_step = {1e3 * saved:.1f} ms measured; the tuner's rule (m - 1) x "
          f"exposed, with the measured rs {1e3 * (m - 1) * rule:.1f} ms{own}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--model":
        run_model(sys.argv[2], sys.argv[3])
    else:
        run_device()
