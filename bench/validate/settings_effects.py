#!/usr/bin/env python3
"""What each training setting does to step time and peak memory, measured.

Standalone PyTorch (no xdeep imports): on one GPU, a small GPT block stack and
torchvision's ResNet-50 train for a few steps under bf16 autocast, once with
PyTorch 2.x's defaults and once per setting toggled away from them. Prints one
JSON object (schema xdeep.settings_effects/1): per model, per run, the median
step time, the optimizer step's time alone, torch.cuda.max_memory_allocated,
and both as ratios to the same model's default run. The tuner's tests compare
the direction and rough size of its predicted effects against this
(tests/tuner/training_settings_test.cc, docs/workload.md).

    python3 bench/validate/settings_effects.py > settings_effects.json

Takes under a minute on an H100 (torch.compile's first compile is most of it;
--deadline-s skips the runs that would not finish in time, saying so).
Settings (workload file key = value; the default first):
  optimizer_impl   foreach | fused | for-loop       AdamW(foreach=None) picks foreach on CUDA
  attention        sdpa | flash | efficient | math | eager   sdpa = F.scaled_dot_product_attention,
                   backend chosen by PyTorch; eager = softmax(q k^T) v in Python
  linear_bias      true | false                     nn.Linear(bias=True)
  tied_embeddings  false | true                     head.weight = embedding.weight
  activation_checkpointing  false | true            torch.utils.checkpoint per block
  compile          false | true                     torch.compile per block (regional)
  fsdp_param_dtype fp32 | bf16                      FSDP2 MixedPrecisionPolicy(param_dtype), one rank
  memory_format    contiguous | channels_last       ResNet-50 model and input
"""

import argparse
import contextlib
import gc
import json
import math
import os
import socket
import statistics
import sys
import time

T0 = time.perf_counter()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.utils.checkpoint  # noqa: E402


# ----------------------------------------------------------------- the GPT

class Block(nn.Module):
    def __init__(self, hidden, heads, ffn, bias, attention):
        super().__init__()
        self.heads, self.attention = heads, attention
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden, bias=bias)
        self.proj = nn.Linear(hidden, hidden, bias=bias)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn, bias=bias)
        self.fc2 = nn.Linear(ffn, hidden, bias=bias)

    def attend(self, q, k, v):
        if self.attention == "eager":
            s = q.shape[-2]
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
            mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
            return F.softmax(scores, dim=-1) @ v  # autocast runs softmax in fp32
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        y = self.attend(q, k, v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, seq, vocab, bias, attention, tied, checkpoint):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, ffn, bias, attention) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        if tied:
            self.head.weight = self.tok.weight
        self.checkpoint = checkpoint

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(b, x, use_reentrant=False)
            else:
                x = b(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))


# ----------------------------------------------------------------- one run

def sdpa_context(attention):
    """The SDPA backend pinned for flash / efficient / math; PyTorch's choice otherwise."""
    if attention not in ("flash", "efficient", "math"):
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel({"flash": SDPBackend.FLASH_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION,
                        "math": SDPBackend.MATH}[attention])


def optimizer_for(params, impl):
    kw = {"fused": {"fused": True}, "for-loop": {"foreach": False}}.get(impl, {})
    return torch.optim.AdamW(params, lr=1e-4, **kw)


def init_one_rank_group():
    """FSDP2 needs a process group; one rank over NCCL on this GPU."""
    import torch.distributed as dist
    if dist.is_initialized():
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1",
                      LOCAL_RANK="0")
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", rank=0, world_size=1)


def fully_shard_blocks(model, param_dtype):
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:  # PyTorch < 2.6
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
    init_one_rank_group()
    mp = (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
          if param_dtype == "bf16" else MixedPrecisionPolicy())
    for b in getattr(model, "blocks", []):
        fully_shard(b, mp_policy=mp)
    fully_shard(model, mp_policy=mp)


def measure(build, batch, settings, device, steps, min_seconds):
    """Median step time, the optimizer step alone, and peak allocated bytes of one setting."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    model = build(settings).to(device)
    if settings.get("memory_format") == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    if settings.get("fsdp_param_dtype"):
        fully_shard_blocks(model, settings["fsdp_param_dtype"])
    if settings.get("compile"):
        for b in (model.blocks if hasattr(model, "blocks") else [model]):
            b.compile()
    opt = optimizer_for(model.parameters(), settings.get("optimizer_impl", "foreach"))
    gen = torch.Generator(device=device)
    gen.manual_seed(1234)
    inputs = batch(gen)
    if settings.get("memory_format") == "channels_last":
        inputs = (inputs[0].contiguous(memory_format=torch.channels_last),) + inputs[1:]
    autocast = torch.autocast(device.type, dtype=torch.bfloat16)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def forward_backward():
        with sdpa_context(settings.get("attention")):
            with autocast:
                loss = model(*inputs)
            loss.backward()

    def step():
        forward_backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):  # warm-up: optimizer state, cuBLAS handles, compiled graphs
        step()
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times, opt_times = [], []
    while len(times) < steps or (sum(times) < min_seconds and len(times) < 200):
        t = time.perf_counter()
        forward_backward()
        sync()
        t_opt = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        end = time.perf_counter()
        times.append(end - t)
        opt_times.append(end - t_opt)
    # The same steps unsynchronised between backward and the optimizer, as
    # training runs them: the step time reported.
    sync()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    free_running = (time.perf_counter() - t) / steps
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    out = {"step_s": free_running, "step_s_synced_median": statistics.median(times),
           "optimizer_s": statistics.median(opt_times), "peak_allocated_bytes": peak,
           "steps": steps + len(times)}
    del model, opt, inputs
    return out


def run_model(name, build, batch, variants, device, args, deadline):
    results = {}
    base = None
    for label, settings, cost_s in variants:
        left = deadline - (time.perf_counter() - T0)
        if left < cost_s:
            results[label] = {"settings": settings,
                              "skipped": f"{left:.0f} s left of --deadline-s, needs ~{cost_s} s"}
            continue
        t = time.perf_counter()
        try:
            r = measure(build, batch, settings, device, args.steps, args.min_seconds)
        except Exception as e:  # one setting failing (unsupported backend, OOM) is a result too
            r = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
        r["settings"] = settings
        r["wall_s"] = time.perf_counter() - t
        if label == "default":
            base = r
        if base and "step_s" in r and "step_s" in base:
            r["time_ratio"] = r["step_s"] / base["step_s"]
            r["optimizer_ratio"] = r["optimizer_s"] / base["optimizer_s"]
            if base["peak_allocated_bytes"] > 0:
                r["memory_ratio"] = r["peak_allocated_bytes"] / base["peak_allocated_bytes"]
        results[label] = r
        print(f"{name} {label}: " + json.dumps({k: v for k, v in r.items() if k != "settings"}),
              file=sys.stderr)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--min-seconds", type=float, default=0.2, help="timed steps span at least this")
    ap.add_argument("--deadline-s", type=float, default=58, help="skip runs that would end later")
    ap.add_argument("--tiny", action="store_true", help="toy sizes, to check the script on a CPU")
    ap.add_argument("--gpt-micro-batch", type=int, default=8)
    ap.add_argument("--resnet-micro-batch", type=int, default=64)
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        if device.index is None:  # set_device needs an index: "cuda" is the current GPU
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)

    # GPT: 4 blocks of GPT-2 medium's width (hidden 1024, 16 heads, ffn 4096),
    # sequence 1024, vocabulary 50304; micro-batch 8 (8192 tokens a step).
    shape = dict(layers=4, hidden=1024, heads=16, ffn=4096, seq=1024, vocab=50304)
    if args.tiny:
        shape = dict(layers=2, hidden=64, heads=4, ffn=256, seq=64, vocab=512)
    mb = args.gpt_micro_batch if not args.tiny else 2

    def build_gpt(s):
        return Gpt(shape["layers"], shape["hidden"], shape["heads"], shape["ffn"], shape["seq"],
                   shape["vocab"], bias=s.get("linear_bias", True),
                   attention=s.get("attention", "sdpa"), tied=s.get("tied_embeddings", False),
                   checkpoint=s.get("activation_checkpointing", False))

    def gpt_batch(gen):
        x = torch.randint(0, shape["vocab"], (mb, shape["seq"]), device=device, generator=gen)
        y = torch.randint(0, shape["vocab"], (mb, shape["seq"]), device=device, generator=gen)
        return x, y

    # (label, settings, seconds it may need): the defaults first.
    gpt_variants = [
        ("default", {}, 3),
        ("optimizer_impl=fused", {"optimizer_impl": "fused"}, 3),
        ("optimizer_impl=for-loop", {"optimizer_impl": "for-loop"}, 3),
        ("attention=flash", {"attention": "flash"}, 3),
        ("attention=efficient", {"attention": "efficient"}, 3),
        ("attention=math", {"attention": "math"}, 3),
        ("attention=eager", {"attention": "eager"}, 3),
        ("linear_bias=false", {"linear_bias": False}, 3),
        ("tied_embeddings=true", {"tied_embeddings": True}, 3),
        ("activation_checkpointing=true", {"activation_checkpointing": True}, 3),
    ]
    # FSDP2 on one rank: no collective to wait for, so what shows is the
    # gathered parameters' dtype (memory, casts), not the all-gather bytes.
    fsdp_variants = [
        ("fsdp_param_dtype=fp32", {"fsdp_param_dtype": "fp32"}, 4),
        ("fsdp_param_dtype=bf16", {"fsdp_param_dtype": "bf16"}, 4),
    ]

    try:
        import torchvision
        resnet = torchvision.models.resnet50
        resnet_source = f"torchvision {torchvision.__version__}"
    except Exception as e:  # not installed, or built for another torch
        resnet, resnet_source = None, f"torchvision unavailable: {type(e).__name__}: {e}"
    rmb = args.resnet_micro_batch if not args.tiny else 2
    image = 224 if not args.tiny else 64

    def resnet_batch(gen):
        x = torch.randn(rmb, 3, image, image, device=device, generator=gen)
        y = torch.randint(0, 1000, (rmb,), device=device, generator=gen)
        return x, y

    class Classifier(nn.Module):  # the loss inside forward, as the GPT's
        def __init__(self):
            super().__init__()
            self.net = resnet()

        def forward(self, x, y):
            return F.cross_entropy(self.net(x), y)

    resnet_variants = [
        ("default", {}, 4),
        ("memory_format=channels_last", {"memory_format": "channels_last"}, 4),
        ("optimizer_impl=fused", {"optimizer_impl": "fused"}, 4),
        ("optimizer_impl=for-loop", {"optimizer_impl": "for-loop"}, 4),
    ]

    deadline = args.deadline_s
    out = {
        "schema": "xdeep.settings_effects/1",
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "precision": "bf16 autocast, fp32 parameters, AdamW(lr=1e-4)",
        "gpt": {"shape": shape, "micro_batch": mb, "tokens_per_step": mb * shape["seq"]},
        "resnet50": {"source": resnet_source, "micro_batch": rmb, "image_size": image},
    }
    try:
        # A first run nobody reads: CUDA's and cuBLAS's start-up would land on the default.
        run_model("warm-up", build_gpt, gpt_batch, [("default", {}, 3)], device, args, deadline)
        gpt = run_model("gpt", build_gpt, gpt_batch, gpt_variants, device, args, deadline - 30)
        out["gpt"]["runs"] = gpt
        if resnet is not None:
            out["resnet50"]["runs"] = run_model("resnet50", lambda s: Classifier(), resnet_batch,
                                                resnet_variants, device, args, deadline - 22)
        fsdp = run_model("gpt", build_gpt, gpt_batch, [("default", {}, 3)] + fsdp_variants, device,
                         args, deadline - 18)
        for label, _, _ in fsdp_variants:
            gpt[label] = fsdp[label]
        # torch.compile last (its first compile is the slowest run here), against
        # the default measured just before it: the host's speed drifts over minutes.
        compiled = run_model("gpt", build_gpt, gpt_batch,
                             [("default", {}, 3), ("compile=true", {"compile": True}, 20)],
                             device, args, deadline)
        gpt["compile=true"] = compiled["compile=true"]
        gpt["compile=true"]["baseline_rerun_step_s"] = compiled["default"].get("step_s")
    except Exception as e:  # what ran so far is still a result
        out["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    out["elapsed_s"] = time.perf_counter() - T0
    print(json.dumps(out, indent=1))
    try:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass


if __name__ == "__main__":
    main()
