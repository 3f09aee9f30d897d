#!/usr/bin/env python3
"""MT-NLG's layout against the tuner's pick, on two GPUs: micro-batch 2 or 1
through DeepSpeed's pipeline schedule.

The tuner's pick for MT-NLG's rows with the run's software (bench/scale/
README.md, "The tuner's pick") runs micro-batch 1 where MT-NLG ran 2, and
predicts it faster by its smaller pipeline bubble: a step is (m + p - 1)
micro-batch times, and at the same samples a micro-batch of 1 takes half as
long as one of 2 less nothing (the model has no fixed cost per micro-batch
but the 16-bit accumulation pass, tuner/pipeline_engine.h). Whether both
hold is what this script measures, with one stage per GPU:

  * DeepSpeed's TrainSchedule (deepspeed/runtime/pipe/schedule.py, e2fdd25):
    stage s runs micro-batch i's forward at step 2i + s and its backward at
    step 2i + 2p - 1 - s; a forward step receives its input and then sends
    the previous backward's input gradient, a backward step sends the
    previous forward's output and then receives its gradient, each with a
    blocking dist.send / dist.recv (p2p.py), the compute after them;
  * each stage is LAYERS blocks of one tensor-parallel rank of MT-NLG 530B
    (hidden 20480, 128 heads, ffn 81920, at tp 8: 16 heads, ffn 10240, the
    hidden whole: no sequence parallelism in 2021), bf16, Megatron's math
    attention (scores materialised, causal mask, softmax, dropout 0.1),
    every block checkpointed (full recomputation, reentrant as in 2021);
    the tensor-parallel all-reduces are not run (the tuner charges them
    apart); the last stage adds the output layer's rank slice (vocab 51200 /
    8) and the cross-entropy in fp32, as GPTModelPipe's last stage;
  * the activation crosses whole (MT-NLG sends 1 / tp of it over a
    network link and all-gathers it over NVLink; here ~1 ms over NVLink);
  * gradient accumulation two ways: "inplace" (autograd adds each
    micro-batch's 16-bit gradients into .grad, the public DeepSpeed of 2021
    with fp16) and "fp32" (after every backward main.add_(p.grad), fp32
    buffers, as Megatron's bf16 path: megatron/arguments.py forces fp32
    accumulation for bf16).

For SAMPLES samples a step per pipeline it times the step at micro-batch 2
(m = SAMPLES / 2) and 1 (m = SAMPLES), each accumulation, and one stage's
forward + backward of one micro-batch alone at each size (T1, T2), and
prints the measured steps against (m + p - 1) x max over stages of T, the
tuner's form. What the pick needs: T1 / T2 near 0.5 and the step following
that form; a fixed cost per micro-batch shows as T1 / T2 above 0.5.

Command (2 GPUs of one host, 32 s on 2x H100 with the defaults; DEADLINE_S stops it
between phases):
  OUT=$OUT torchrun --nproc-per-node 2 bench/scale/pipeline_microbatch.py
Writes $OUT/pipeline_microbatch.json. Without CUDA (or with PIPELINE_CPU=1)
it runs on the CPU with gloo at a tiny shape (HIDDEN, HEADS, TP, FFN, SEQ,
VOCAB). `--check` (ctest bench.scale.pipeline_microbatch) runs that with 2
and 3 stages, one process each, without dropout, and checks that every run
completes and that one step's accumulated gradients on every stage equal
those of the same micro-batches run through the stages one after another in
one process: a transfer out of DeepSpeed's order deadlocks or mixes
micro-batches up.
"""
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

CUDA = torch.cuda.is_available() and os.environ.get("PIPELINE_CPU") != "1"
HIDDEN = int(os.environ.get("HIDDEN", "20480" if CUDA else "64"))
HEADS = int(os.environ.get("HEADS", "128" if CUDA else "8"))
TP = int(os.environ.get("TP", "8" if CUDA else "2"))
FFN = int(os.environ.get("FFN", str(4 * HIDDEN)))
SEQ = int(os.environ.get("SEQ", "2048" if CUDA else "32"))
VOCAB = int(os.environ.get("VOCAB", "51200" if CUDA else "256"))
LAYERS = int(os.environ.get("LAYERS", "3"))
SAMPLES = [int(s) for s in os.environ.get("SAMPLES", "16,4").split(",")]
STEPS = int(os.environ.get("STEPS", "3"))
REPS = int(os.environ.get("REPS", "5"))
DEADLINE_S = float(os.environ.get("DEADLINE_S", "110"))
DROPOUT = float(os.environ.get("DROPOUT", "0.1"))
DTYPE = torch.bfloat16 if CUDA else torch.float32
START = time.time()


def sync():
    if CUDA:
        torch.cuda.synchronize()


class Block(nn.Module):
    """One tensor-parallel rank's share of a GPT block (Megatron, 2021)."""

    def __init__(self, **on):
        super().__init__()
        self.heads = HEADS // TP
        self.head_dim = HIDDEN // HEADS
        width = self.heads * self.head_dim
        self.ln1 = nn.LayerNorm(HIDDEN, **on)
        self.qkv = nn.Linear(HIDDEN, 3 * width, **on)
        self.proj = nn.Linear(width, HIDDEN, **on)
        self.ln2 = nn.LayerNorm(HIDDEN, **on)
        self.fc1 = nn.Linear(HIDDEN, FFN // TP, **on)
        self.fc2 = nn.Linear(FFN // TP, HIDDEN, **on)

    def forward(self, x, mask):
        s, b, _ = x.shape
        qkv = self.qkv(self.ln1(x)).view(s, b * self.heads, 3 * self.head_dim)
        q, k, v = qkv.transpose(0, 1).split(self.head_dim, dim=-1)
        scores = torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(self.head_dim))
        probs = F.dropout(torch.softmax(scores.masked_fill(mask, -10000.0), dim=-1), DROPOUT)
        ctx = torch.bmm(probs, v).transpose(0, 1).reshape(s, b, -1)
        x = x + F.dropout(self.proj(ctx), DROPOUT)
        return x + F.dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))), DROPOUT)


class Stage(nn.Module):
    def __init__(self, last, device):
        super().__init__()
        on = {"device": device, "dtype": DTYPE}  # built on the GPU: ~2 G parameters a stage
        self.blocks = nn.ModuleList(Block(**on) for _ in range(LAYERS))
        self.last = last
        if last:
            self.ln_f = nn.LayerNorm(HIDDEN, **on)
            self.head = nn.Linear(HIDDEN, VOCAB // TP, bias=False, **on)
        self.register_buffer(
            "mask", torch.ones(SEQ, SEQ, dtype=torch.bool, device=device).triu(1),
            persistent=False)

    def forward(self, x, labels=None):
        for block in self.blocks:
            x = checkpoint(block, x, self.mask, use_reentrant=True)
        if not self.last:
            return x
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


class Accumulator:
    """Gradient accumulation: autograd's in-place add, or fp32 main grads."""

    def __init__(self, params, mode):
        self.params, self.mode = params, mode
        self.main = [torch.zeros_like(p, dtype=torch.float32) for p in params] \
            if mode == "fp32" else []

    def after_backward(self):
        if self.mode == "fp32":
            for p, m in zip(self.params, self.main):
                m.add_(p.grad)
                p.grad = None

    def end_step(self):
        for p in self.params:
            p.grad = None
        for m in self.main:
            m.zero_()


def seeded(seed, device):
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def micro_batch(i, mb, device):
    """Micro-batch i's input (the embedding's output) and labels, the same in every run."""
    x = torch.randn(SEQ, mb, HIDDEN, dtype=DTYPE, device=device, generator=seeded(i, device))
    labels = torch.randint(VOCAB // TP, (SEQ, mb), device=device,
                           generator=seeded(10000 + i, device))
    return x.requires_grad_(), labels


def run_step(stage, acc, rank, world, mb, m, device, clear=True):
    """One step of DeepSpeed's TrainSchedule for this stage."""
    first, last = rank == 0, rank == world - 1
    shape = (SEQ, mb, HIDDEN)
    inputs, outputs, prev = {}, {}, -1
    for t in range(2 * (m + world - 1)):
        forward = (t - rank) % 2 == 0
        i = (t - rank) // 2 if forward else (t - 2 * world + 1 + rank) // 2
        valid, prev_valid = 0 <= i < m, 0 <= prev < m
        if forward:
            if valid and not first:
                buf = torch.empty(shape, dtype=DTYPE, device=device)
                dist.recv(buf, rank - 1)
                inputs[i] = buf.requires_grad_()
            if prev_valid and not first:
                dist.send(inputs.pop(prev).grad.contiguous(), rank - 1)
        else:
            if prev_valid and not last:
                dist.send(outputs[prev].detach(), rank + 1)
            if valid and not last:
                grad = torch.empty(shape, dtype=DTYPE, device=device)
                dist.recv(grad, rank + 1)
        if valid and forward:
            x, labels = micro_batch(i, mb, device) if first or last else (None, None)
            if first:  # the embedding's output, which requires grad
                inputs[i] = x
            outputs[i] = stage(inputs[i], labels if last else None)
        elif valid:
            out = outputs.pop(i)
            if last:
                out.backward()
            else:
                torch.autograd.backward(out, grad)
            acc.after_backward()
            if first:
                inputs.pop(i)
        prev = i
    if clear:
        acc.end_step()


def time_micro_batch(stage, mb, device):
    """One micro-batch's forward + backward on this stage alone (T)."""
    x = torch.randn(SEQ, mb, HIDDEN, dtype=DTYPE, device=device, requires_grad=True)
    labels = torch.randint(VOCAB // TP, (SEQ, mb), device=device) if stage.last else None
    dy = torch.randn(SEQ, mb, HIDDEN, dtype=DTYPE, device=device)
    times = []
    for rep in range(REPS + 1):
        sync()
        t0 = time.time()
        out = stage(x, labels)
        if stage.last:
            out.backward()
        else:
            torch.autograd.backward(out, dy)
        sync()
        if rep:
            times.append(time.time() - t0)
    for p in stage.parameters():
        p.grad = None
    return sum(times) / len(times)


def main():
    dist.init_process_group("nccl" if CUDA else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if CUDA \
        else torch.device("cpu")
    if CUDA:
        torch.cuda.set_device(device)
    torch.manual_seed(1234 + rank)
    stage = Stage(last=rank == world - 1, device=device)
    params = [p for p in stage.parameters()]
    result = {"device": torch.cuda.get_device_name(device) if CUDA else "cpu",
              "torch": torch.__version__, "stages": world, "layers_per_stage": LAYERS,
              "hidden": HIDDEN, "heads": HEADS, "tp": TP, "ffn": FFN, "seq": SEQ,
              "vocab": VOCAB, "params_per_stage": [], "micro_batch_s": {}, "runs": []}
    counts = [torch.tensor([float(sum(p.numel() for p in params))], device=device)
              for _ in range(world)]
    dist.all_gather(counts, counts[rank])
    result["params_per_stage"] = [int(c.item()) for c in counts]

    # T per stage at each micro-batch size; the slowest stage paces 1F1B.
    for mb in (1, 2):
        t = torch.tensor([time_micro_batch(stage, mb, device)], device=device)
        ts = [torch.zeros_like(t) for _ in range(world)]
        dist.all_gather(ts, t)
        result["micro_batch_s"][str(mb)] = [x.item() for x in ts]
    t1 = max(result["micro_batch_s"]["1"])
    t2 = max(result["micro_batch_s"]["2"])
    if rank == 0:
        print(f"one micro-batch's forward + backward, slowest stage: mb1 {t1 * 1e3:.1f} ms, "
              f"mb2 {t2 * 1e3:.1f} ms, T1 / T2 = {t1 / t2:.3f} (0.5: no fixed cost per "
              f"micro-batch)", flush=True)

    for samples in SAMPLES:
        for accumulation in ("inplace", "fp32"):
            acc = Accumulator(params, accumulation)
            for mb in (2, 1):
                if time.time() - START > DEADLINE_S:
                    break
                m = samples // mb
                steps = []
                for step in range(STEPS + 1):
                    sync()
                    dist.barrier()
                    t0 = time.time()
                    run_step(stage, acc, rank, world, mb, m, device)
                    sync()
                    took = torch.tensor([time.time() - t0], device=device)
                    dist.all_reduce(took, op=dist.ReduceOp.MAX)
                    if step:
                        steps.append(took.item())
                step_s = sum(steps) / len(steps)
                form = (m + world - 1) * (t1 if mb == 1 else t2)
                run = {"samples": samples, "accumulation": accumulation, "micro_batch": mb,
                       "micro_batches": m, "step_s": steps, "mean_step_s": step_s,
                       "form_s": form, "per_micro_batch_time_s": step_s / (m + world - 1)}
                result["runs"].append(run)
                if rank == 0:
                    print(f"samples {samples:3d} {accumulation:7s} mb{mb} m {m:3d}: step "
                          f"{step_s:.3f} s, (m + p - 1) x T {form:.3f} s "
                          f"({(step_s / form - 1) * 100:+.1f} %), per micro-batch time "
                          f"{step_s / (m + world - 1) * 1e3:.1f} ms", flush=True)
            del acc

    if rank == 0:
        for samples in SAMPLES:
            for accumulation in ("inplace", "fp32"):
                pair = {r["micro_batch"]: r["mean_step_s"] for r in result["runs"]
                        if r["samples"] == samples and r["accumulation"] == accumulation}
                if 1 in pair and 2 in pair:
                    m2 = samples // 2
                    form = (samples + world - 1) * t1 / ((m2 + world - 1) * t2)
                    print(f"samples {samples:3d} {accumulation:7s}: mb1 step / mb2 step "
                          f"measured {pair[1] / pair[2]:.3f}, form with measured T "
                          f"{form:.3f}, form with T1 = T2 / 2 "
                          f"{(samples + world - 1) / 2 / (m2 + world - 1):.3f}", flush=True)
        result["seconds"] = time.time() - START
        out = os.environ.get("OUT", ".")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "pipeline_microbatch.json"), "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {os.path.join(out, 'pipeline_microbatch.json')} "
              f"({result['seconds']:.0f} s)", flush=True)
    if os.environ.get("PIPELINE_DUMP") == "1":  # --check: one step's gradients, kept
        run_step(stage, Accumulator(params, "inplace"), rank, world, 2, 2, device, clear=False)
        torch.save([p.grad for p in params],
                   os.path.join(os.environ.get("OUT", "."), f"grads_{rank}.pt"))
    dist.destroy_process_group()


def reference(world, out):
    """The dumped step's gradients with the stages run one after another."""
    device = torch.device("cpu")
    stages = []
    for rank in range(world):
        torch.manual_seed(1234 + rank)
        stages.append(Stage(last=rank == world - 1, device=device))
    for i in range(2):
        x, labels = micro_batch(i, 2, device)
        for rank, stage in enumerate(stages):
            x = stage(x, labels if rank == world - 1 else None)
        x.backward()
    worst = 0.0
    for rank, stage in enumerate(stages):
        got = torch.load(os.path.join(out, f"grads_{rank}.pt"))
        want = [p.grad for p in stage.parameters()]
        assert len(got) == len(want), (rank, len(got), len(want))
        for g, w in zip(got, want):
            worst = max(worst, ((g - w).abs().max() / w.abs().max().clamp_min(1e-12)).item())
    print(f"{world} stages: gradients against one process, worst relative difference {worst:.2e}")
    assert worst < 1e-4, worst


def check():
    """The schedule on the CPU with 2 and 3 stages: completes, reports each run."""
    for world in (2, 3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with tempfile.TemporaryDirectory() as out:
            procs = []
            tiny = dict(os.environ, PIPELINE_CPU="1", OUT=out, SAMPLES="4", STEPS="1", REPS="1",
                        DROPOUT="0", PIPELINE_DUMP="1", HIDDEN="32", HEADS="4", TP="2", SEQ="16",
                        VOCAB="64")
            for rank in range(world):
                env = dict(tiny, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                           MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
                procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                              text=True))
            for rank, p in enumerate(procs):
                try:
                    log, _ = p.communicate(timeout=90)
                except subprocess.TimeoutExpired:
                    for q in procs:
                        q.kill()
                    sys.exit(f"{world} stages: rank {rank} did not finish in 90 s (deadlock?)")
                if p.returncode != 0:
                    sys.exit(f"{world} stages: rank {rank} exited {p.returncode}:\n{log}")
            with open(os.path.join(out, "pipeline_microbatch.json")) as f:
                result = json.load(f)
            ref = subprocess.run([sys.executable, os.path.abspath(__file__), "--reference",
                                  str(world), out], env=tiny, capture_output=True, text=True)
            if ref.returncode != 0:
                sys.exit(f"{world} stages: gradients differ from one process's:\n"
                         f"{ref.stdout}{ref.stderr}")
            print(ref.stdout.strip())
        runs = {(r["accumulation"], r["micro_batch"]): r for r in result["runs"]}
        assert set(runs) == {(a, mb) for a in ("inplace", "fp32") for mb in (1, 2)}, runs
        for (_, mb), r in runs.items():
            assert r["micro_batches"] == 4 // mb and r["mean_step_s"] > 0, r
        assert result["stages"] == world and len(result["params_per_stage"]) == world
        # The last stage holds the output layer's slice besides its blocks.
        assert result["params_per_stage"][-1] > result["params_per_stage"][0], result
        print(f"{world} stages: {len(runs)} runs completed")
    print("ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        check()
    elif sys.argv[1:2] == ["--reference"]:
        reference(int(sys.argv[2]), sys.argv[3])
    else:
        main()
