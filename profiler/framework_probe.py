#!/usr/bin/env python3
"""Host time an eager framework (PyTorch) spends per kernel, for xdeep's step-time model.

  python3 framework_probe.py --out framework.json [--steps 100] [--warmup 10] [--device 0]
                             [--ranks N] [--cpu]

At small micro-batches a model trains only as fast as the host issues its kernels
(Python, dispatcher, autograd, the launch), and that speed differs from machine to
machine by tens of percent (bench/validate/README.md), and from one kind of network
to another. This probe trains, at batch 1, where the GPU idles between kernels, a tiny
GPT with the op mix of xdeep's GPT workloads (token and position embeddings,
LayerNorm, bias-free Linear, causal scaled-dot-product attention, GELU, residual
adds, a tied output head, cross-entropy) and ResNet-50 on 224-pixel images (bf16
autocast, AdamW), and times forward + backward of each. It writes an
xdeep.probe_report/1 file with a `framework` entry per network: its shape, the median
wall time, the kernels launched (torch.profiler, one more pass) and the median wall time
of the same pass under DistributedDataParallel and under FSDP2 (DDP's reducer copies
gradients and broadcasts buffers, FSDP2 gathers and reshards) and, for the GPT, with its
blocks split by tensor parallelism (beside it a Llama-style decoder of its shape, plain and
split: data the tuner does not read), the passes taking turns, and the host time of
the AdamW step after each; with `--library-decoders` on one rank, where transformers is importable,
its GPT-2, Llama and GPTNeoX decoders of the GPT's shape taking turns with the GPT's pass (`hf_*` fields, with their
kernels and forward nn.Module calls: data the tuner does not read); and one entry of a GPT at a training size with the GPU time
of its elementwise kernels (memory-bound, where the others are host-bound). `--ranks N`
runs the passes on N GPUs at once, as multi-GPU training does (entries with `ranks` and
the ranks' `straggle`). The tuner divides the time by its own kernel count for that
network (tuner/hardware_profile.cc), so the figure is in the step-time model's units;
`xdeep-probe merge` joins the file to the GPU's other reports.
"""
import argparse
import contextlib
import copy
import datetime
import json
import os
import socket
import statistics
import sys
import tempfile
import time

# The tiny models: every kernel runs in a few microseconds on a current GPU.
GPT_SHAPE = {"layers": 4, "hidden": 128, "heads": 4, "ffn": 512, "seq": 128, "vocab": 1024, "batch": 1}
# ResNet-50 at the size xdeep's CNN workloads train: at batch 1 its GPU time is a third
# of the host's on an H200, and the launch path is the training's own (at 64 pixels the
# probe read ~13 % above ResNet-50 training on the same 1x H200, 07:43-07:51,
# pruned from bench/validate/data at a797375; the tuner ignores an entry busy >= 50 %).
RESNET_SHAPE = {"depth": 50, "image": 224, "classes": 1000, "batch": 1}
# On the CPU (smoke runs; the tuner ignores CPU entries) the same network at a size a
# loaded 2-core host runs in seconds: at 224 pixels one rank took over 4 minutes there.
RESNET_SHAPE_CPU = {"depth": 50, "image": 64, "classes": 1000, "batch": 1}
# A GPT at the size xdeep's GPT workloads train (hidden 1024, seq 1024, GPT-2's
# vocabulary), where its norms, activations, casts and loss are bound by memory, not by
# the host: their GPU time (`elementwise_s`) against the bytes the tuner counts for them
# is the bandwidth eager elementwise kernels reach on this GPU. They do not follow the
# device's copy bandwidth: from 2x H200 to 2x H100 (copy 4063 -> 2868 GB/s) training's
# elementwise time grew 1.2x, not 1.4x (bench/validate/data/calibration/2026-11-26_h100x2_heldout4).
ELEMENTWISE_SHAPE = {"layers": 4, "hidden": 1024, "heads": 16, "ffn": 4096, "seq": 1024,
                     "vocab": 50257, "batch": 4}
# On the CPU (smoke runs; the tuner ignores CPU entries) a size that runs in seconds.
ELEMENTWISE_SHAPE_CPU = {"layers": 2, "hidden": 256, "heads": 4, "ffn": 1024, "seq": 128,
                         "vocab": 1024, "batch": 1}


def kernel_category(name):
    """What a CUDA kernel does, from its name (cuBLAS / CUTLASS GEMMs, fused
    attention, NCCL, the foreach optimizer, memory copies and sets, everything else
    elementwise)."""
    n = name.lower()
    if "nccl" in n:
        return "nccl"
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if ("gemm" in n or "nvjet" in n or "xmma" in n or "cutlass" in n or "cublas" in n
            or "sm90_" in n or "sm80_" in n or "conv" in n or "implicit" in n or "winograd" in n):
        return "gemm_conv"
    if "multi_tensor_apply" in n:
        return "optimizer"
    if "memcpy" in n or "memset" in n:
        return "memcpy"
    return "elementwise"


def gpt_classes(torch):
    """The GPT-style decoder (also what bench/memory_validation trains, so the probe's op
    mix is the validated one): Gpt(layers, hidden, heads, ffn, seq, vocab), tied head."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, h, heads, ffn):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h, bias=False)
            self.proj = nn.Linear(h, h, bias=False)
            self.fc1 = nn.Linear(h, ffn, bias=False)
            self.fc2 = nn.Linear(ffn, h, bias=False)

        def forward(self, x):
            b, s, h = x.shape
            # -1 heads: under tensor parallelism a rank holds heads / tp of them.
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, -1, h // self.heads).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, s, -1))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class Gpt(nn.Module):
        recompute = False  # full activation recomputation of every block

        def __init__(self, layers, hidden, heads, ffn, seq, vocab):
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(seq, hidden)
            self.blocks = nn.ModuleList(Block(hidden, heads, ffn) for _ in range(layers))
            self.ln_f = nn.LayerNorm(hidden)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                if self.recompute:
                    x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
                else:
                    x = blk(x)
            return F.linear(self.ln_f(x), self.tok.weight)  # tied output projection

    return Block, Gpt


def llama_classes(torch):
    """A Llama-style decoder in transformers' ops (LlamaRMSNorm, rotate_half rotary, SiLU x
    mul, bias-free Linears, tied head like MobileLLM): Llama(layers, fused, ...). fused: q/k/v
    as one Linear and gate/up as one (4 Linears a block, where Llama has 7)."""
    nn, F = torch.nn, torch.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, h, eps=1e-6):
            super().__init__()
            self.weight, self.eps = nn.Parameter(torch.ones(h)), eps

        def forward(self, x):
            dtype = x.dtype
            x = x.float()
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * x.to(dtype)

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def rope(x, cos, sin):
        return x * cos + rotate_half(x) * sin

    class Block(nn.Module):
        def __init__(self, h, heads, ffn, fused):
            super().__init__()
            self.hd, self.fused = h // heads, fused
            self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
            if fused:
                self.qkv, self.gate_up = nn.Linear(h, 3 * h, bias=False), nn.Linear(h, 2 * ffn, bias=False)
            else:
                self.q, self.k, self.v = (nn.Linear(h, h, bias=False) for _ in range(3))
                self.gate, self.up = nn.Linear(h, ffn, bias=False), nn.Linear(h, ffn, bias=False)
            self.o, self.down = nn.Linear(h, h, bias=False), nn.Linear(ffn, h, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            y = self.n1(x)
            if self.fused:  # -1 heads: under TP a rank holds heads / tp of them
                q, k, v = self.qkv(y).view(b, s, 3, -1, self.hd).permute(2, 0, 3, 1, 4)
            else:
                q, k, v = (p(y).view(b, s, -1, self.hd).transpose(1, 2) for p in (self.q, self.k, self.v))
            a = F.scaled_dot_product_attention(rope(q, cos, sin), rope(k, cos, sin), v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
            y = self.n2(x)
            g, u = self.gate_up(y).chunk(2, -1) if self.fused else (self.gate(y), self.up(y))
            return x + self.down(F.silu(g) * u)

    class Llama(nn.Module):
        def __init__(self, layers, fused, hidden, heads, ffn, seq, vocab):
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.blocks = nn.ModuleList(Block(hidden, heads, ffn, fused) for _ in range(layers))
            self.norm = RMSNorm(hidden)
            inv = 1.0 / 10000 ** (torch.arange(0, hidden // heads, 2).float() / (hidden // heads))
            self.register_buffer("inv_freq", inv, persistent=False)

        def forward(self, idx):
            x = self.tok(idx)
            # transformers computes cos / sin once per forward (LlamaRotaryEmbedding)
            f = torch.arange(idx.shape[1], device=idx.device).float()[:, None] * self.inv_freq[None]
            emb = torch.cat((f, f), dim=-1)
            cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
            for blk in self.blocks:
                x = blk(x, cos, sin)
            return F.linear(self.norm(x), self.tok.weight)

    return Llama


def resnet50_class(torch):
    """ResNet-50 as torchvision builds it (v1.5: stride in the 3x3 conv; bias-free convs,
    BatchNorm, in-place ReLU), without needing torchvision."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, inplanes, planes, stride):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(planes * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or inplanes != planes * 4:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                                                nn.BatchNorm2d(planes * 4))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            out += x if self.downsample is None else self.downsample(x)
            return self.relu(out)

    class ResNet50(nn.Module):
        def __init__(self, classes):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1, self.relu = nn.BatchNorm2d(64), nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            stages, inplanes = [], 64
            for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                stage = []
                for i in range(blocks):
                    stage.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
                    inplanes = planes * 4
                stages.append(nn.Sequential(*stage))
            self.layer1, self.layer2, self.layer3, self.layer4 = stages
            self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(2048, classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet50


def kernel_profile(torch, fn, device):
    """Kernels (memory copies and sets included: each costs a launch), their GPU time and
    that of the elementwise ones, in one call of fn, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    count, busy_s, elementwise_s = 0, 0.0, 0.0
    if device.type == "cuda":
        for evt in device_kernels(torch, prof.key_averages()):
            s = device_seconds(evt)
            busy_s += s
            if kernel_category(evt.key) == "elementwise":
                elementwise_s += s
            count += evt.count
        return count, busy_s, elementwise_s
    for evt in prof.key_averages():  # CPU smoke run: ops that did work stand in for kernels
        if evt.key.startswith("aten::") and evt.self_cpu_time_total > 0:
            count += evt.count
    return count, busy_s, elementwise_s


def category_seconds(torch, fn, device):
    """GPU seconds of one call of fn by kernel_category, from torch.profiler (CUDA only)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize(device)
    out = {}
    for evt in device_kernels(torch, prof.key_averages()):
        cat = kernel_category(evt.key)
        out[cat] = out.get(cat, 0.0) + device_seconds(evt)
    return out


def loss_seconds(torch, device, shape):
    """GPU seconds of the elementwise kernels of the GPT's loss alone (bf16 autocast
    cross-entropy over its batch x seq x vocab logits, forward and backward: the fp32 cast,
    log-softmax, NLL and their backward), as the GPT's pass runs them: the part of
    `elementwise_s` that is not the blocks'. At the probe's shape the loss moves about half
    of the bytes the tuner counts for that pass (bench/validate/README.md, h20k)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(99)
    n, v = shape["batch"] * shape["seq"], shape["vocab"]
    logits = torch.randn(n, v, device=device, dtype=torch.bfloat16, generator=gen).requires_grad_()
    target = torch.randint(0, v, (n,), device=device, generator=gen)

    def fn():
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(logits, target)
        torch.autograd.grad(loss, logits)  # no accumulation into a .grad: the pass has none

    fn()
    torch.cuda.synchronize(device)
    return category_seconds(torch, fn, device).get("elementwise", 0.0)


def device_kernels(torch, events):
    """The kernels (memory copies and sets included) among a torch.profiler run's events:
    its CUDA events less the record_function ranges it also puts on the device timeline
    (DistributedDataParallel.forward, Optimizer.step#AdamW.step, nccl:all_reduce), which
    span kernels counted already: with them GPT-350M's profiled step read 2.9x its
    elementwise GPU time on one GPU and 4.8x under DDP
    (bench/validate/data/checks/2026-11-26_h100x2_lanes_check)."""
    return [evt for evt in events
            if getattr(evt, "device_type", None) == torch.autograd.DeviceType.CUDA
            and not getattr(evt, "is_user_annotation", False)]


def device_seconds(evt):
    """An event's own GPU time, in seconds (the field's name before PyTorch 2.4 too)."""
    us = getattr(evt, "self_device_time_total", None)
    return (us if us is not None else getattr(evt, "self_cuda_time_total", 0)) * 1e-6


def gpt_and_batch(torch, gpt, shape, device, gen):
    """A GPT of `shape` and a batch of random tokens and targets for it."""
    tokens = (shape["batch"], shape["seq"])
    return (gpt(*(shape[k] for k in ("layers", "hidden", "heads", "ffn", "seq", "vocab"))),
            torch.randint(0, shape["vocab"], tokens, device=device, generator=gen),
            torch.randint(0, shape["vocab"], tokens, device=device, generator=gen))


def llama_of(torch, shape):
    """The Llama-style decoder (llama_classes) of `shape`, plain (no Llama 4 variant)."""
    return llama_classes(torch)(shape["layers"], False,
                                *(shape[k] for k in ("hidden", "heads", "ffn", "seq", "vocab")))


def probe_decoders(torch, device):
    """The probe's tiny GPT and Llama-style decoder of GPT_SHAPE (on the CPU) and the GPT's
    tokens and targets on `device`, seeded as measure() seeds them: for the checks that time
    the probe's passes beside other models (bench/validate/host_*_check.py)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(1234)
    _, gpt = gpt_classes(torch)
    model, inputs, target = gpt_and_batch(torch, gpt, GPT_SHAPE, device, gen)
    return model, llama_of(torch, GPT_SHAPE), inputs, target


def timing_fields(times):
    """Pass times as a report's timing fields."""
    times = sorted(times)
    median = statistics.median(times)
    return dict(median_s=median, min_s=times[0], p95_s=times[min(len(times) - 1, int(0.95 * len(times)))],
                spread=(times[-1] - times[0]) / median, iterations=len(times))


def elementwise_entry(torch, args, device, gpt):
    """The memory-bound GPT's forward + backward: wall times of a few passes, then one
    under torch.profiler for its kernels and the GPU time of the elementwise ones."""
    shape = ELEMENTWISE_SHAPE if device.type == "cuda" else ELEMENTWISE_SHAPE_CPU
    gen = torch.Generator(device=device)
    gen.manual_seed(4321)
    forward_backward, step = training_pass(torch, device, *gpt_and_batch(torch, gpt, shape, device, gen))
    times = alternating_times(torch, argparse.Namespace(warmup=3, steps=5), device,
                              {"plain": (forward_backward, step)})[0]["plain"]
    kernels, busy_s, elementwise_s = kernel_profile(torch, forward_backward, device)
    entry = dict(name="torch", version=torch.__version__, device=device.type, ranks=1, model="gpt",
                 **shape, **timing_fields(times), kernels=kernels,
                 gpu_busy_fraction=min(1.0, busy_s / statistics.median(times)))
    if elementwise_s > 0:
        entry["elementwise_s"] = elementwise_s
    if device.type == "cuda":
        # The attention kernels' and the loss's shares of the pass, so the blocks' own
        # elementwise rate and attention's rate can be told from the loss's (xdeep-probe merge
        # keeps both; the tuner does not read them: bench/validate/README.md, h21k).
        try:
            attention_s = category_seconds(torch, forward_backward, device).get("attention", 0.0)
            if attention_s > 0:
                entry["attention_s"] = attention_s
            loss_s = loss_seconds(torch, device, shape)
            if loss_s > 0:
                entry["loss_s"] = loss_s
            # The same tokens' loss over a 32000-word vocabulary (Llama 2's, Mistral's): training's
            # log-softmax took half the time per logit at 30522 words as at 50257 on one H200
            # (probably its rows' re-reads served from L2; bench/validate/README.md, h21k). Data for the loss's
            # rate by vocabulary; the tuner does not read it yet.
            small_s = loss_seconds(torch, device, dict(shape, vocab=32000))
            if small_s > 0:
                entry["loss_vocab32000_s"] = small_s
        except (RuntimeError, ValueError, TypeError) as e:  # an extra figure: never the entry's loss
            print(f"framework_probe: no loss / attention split ({type(e).__name__}: {e})", file=sys.stderr)
    return entry


def measure(args, rank, world, folder):
    """This rank's passes; on rank 0 the report's entries, GPU and versions (None on the
    others)."""
    import torch
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        sys.exit(f"framework_probe: PyTorch {torch.__version__} has no scaled_dot_product_attention; "
                 "the probe needs PyTorch 2.0 or later")
    if not args.cpu and not torch.cuda.is_available():
        sys.exit("framework_probe: PyTorch sees no CUDA GPU here (CPU-only build, or no GPU "
                 "allocated); run it in a GPU job, or pass --cpu for a smoke run")
    device = torch.device("cpu") if args.cpu else torch.device("cuda", args.device + rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(1234)
    _, gpt = gpt_classes(torch)
    r = RESNET_SHAPE if device.type == "cuda" else RESNET_SHAPE_CPU
    networks = [
        ("gpt", GPT_SHAPE, *gpt_and_batch(torch, gpt, GPT_SHAPE, device, gen)),
        ("resnet", r, resnet50_class(torch)(r["classes"]),
         torch.randn(r["batch"], 3, r["image"], r["image"], device=device, generator=gen),
         torch.randint(0, r["classes"], (r["batch"],), device=device, generator=gen)),
    ]
    if args.main_cpu is not None:
        os.sched_setaffinity(0, {args.main_cpu})  # Linux: 0 is the calling thread
    with process_group(torch, device, rank, world, folder) as formed:
        wraps = wrappers(torch, device) if formed else {}
        timed, ended = [], {}
        for name, shape, model, inputs, target in networks:
            passes = {"plain": training_pass(torch, device, model, inputs, target)}
            for kind, wrap in wraps.items():
                if kind == "tp" and name != "gpt":
                    continue  # tensor parallelism is probed on the GPT only
                tried = tried_pass(torch, device, kind, lambda: wrap(name, copy.deepcopy(model)),
                                   inputs, target)
                if tried:
                    passes[kind] = tried
            times, step_host = alternating_times(torch, args, device, passes)
            straggle = ranks_straggle(torch, times["plain"]) if world > 1 else None
            llama = None
            if name == "gpt" and "tp" in passes:
                llama = llama_passes(torch, device, shape, wraps["tp"], inputs, target)
                # Right after the GPT's turns, the two taking turns with each other, for a fifth
                # of the turns: a Llama block under TP took 19 ms on 2x H200 (the GPT's 8;
                # bench/validate/data/checks/2026-11-28_h200x2_host_depth_tp), so ~2.5 s in all
                # there (an estimate from those slopes) where the GPT's turns' pace would add 12.
                few = argparse.Namespace(warmup=max(1, args.warmup // 5), steps=max(3, args.steps // 5))
                try:
                    llama = (llama, alternating_times(torch, few, device, llama)[0]) if llama else None
                except (RuntimeError, ValueError, TypeError) as e:  # an extra figure: the entry as without it
                    print(f"framework_probe: no Llama TP figure ({type(e).__name__}: {e})", file=sys.stderr)
                    llama = None
            timed.append((name, shape, passes, times, step_host, straggle, llama))
            ended[name] = time.perf_counter()
        # The GPT's plain pass once more, in a second window after the other networks' turns
        # (~10 s later on an H200): the host's speed switches between levels within seconds and
        # drifts 1.3x over a minute (bench/validate/data/checks/2026-11-28_h200x1_host_drift), so
        # one window reads the host of its moment. Data for a reading from several windows
        # (bench/validate/README.md, "h24h, session 24"); the tuner does not read it yet.
        late = None
        for name, _, passes, *_ in timed:
            if name == "gpt":
                start = time.perf_counter()
                late = (alternating_times(torch, args, device, {"plain": passes["plain"]})[0]["plain"],
                        start - ended["gpt"])
        # transformers' decoders of the GPT's shape taking turns with its plain pass (one rank:
        # single-GPU training's host), data the tuner does not read yet (library_turns).
        library = ({}, {})
        if world == 1 and args.library_decoders:
            for name, _, passes, *_ in timed:
                if name == "gpt":
                    library = library_turns(torch, args, device, passes["plain"], networks[0][3])
    if rank > 0:
        UNTIL_EXIT.append(timed)
        return None
    # Kernel counts last: no network is timed after the profiler has run in the process.
    entries = []
    for name, shape, passes, times, step_host, straggle, llama in timed:
        kernels, busy_s, _ = kernel_profile(torch, passes["plain"][0], device)
        entries.append(dict(name="torch", version=torch.__version__, device=device.type, ranks=world,
                            model=name, **shape, **timing_fields(times["plain"]), kernels=kernels,
                            gpu_busy_fraction=min(1.0, busy_s / statistics.median(times["plain"])),
                            step_host_s=statistics.median(step_host["plain"])))
        for kind in passes.keys() - {"plain"}:
            entries[-1][f"{kind}_median_s"] = statistics.median(times[kind])
        if "fsdp" in passes:  # DDP's step is the plain one's: its parameters are plain tensors
            entries[-1]["fsdp_step_host_s"] = statistics.median(step_host["fsdp"])
        if "tp" in passes:
            entries[-1]["tp_step_host_s"] = statistics.median(step_host["tp"])
            entries[-1]["tp_linears"] = TP_LINEARS_PER_BLOCK * shape["layers"]
        if llama:
            for kind in ("llama", "llama_tp"):
                entries[-1][f"{kind}_median_s"] = statistics.median(llama[1][kind])
            entries[-1]["llama_tp_linears"] = len(TP_PLANS["llama"]) * shape["layers"]
        if straggle:
            entries[-1]["straggle"] = straggle
        if name == "gpt" and late:
            entries[-1].update({f"late_{k}": v for k, v in timing_fields(late[0]).items()
                                if k in ("median_s", "min_s", "p95_s")})
            entries[-1]["late_after_s"] = late[1]
        if name == "gpt" and library[1]:
            try:
                entries[-1].update(library_fields(torch, device, *library))
            except Exception as e:  # noqa: BLE001 - an extra figure: the entry as without it
                print(f"framework_probe: no transformers fields ({type(e).__name__}: {e})", file=sys.stderr)
    del networks, timed
    if world == 1:
        entries.append(elementwise_entry(torch, args, device, gpt))
    gpu = None
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        gpu = {"name": p.name, "count": torch.cuda.device_count(), "memory_bytes": p.total_memory,
               "sm_count": p.multi_processor_count, "compute_capability": f"{p.major}.{p.minor}"}
    versions = {"torch": torch.__version__}
    if library[1]:
        versions["transformers"] = library[1]["version"]
    if torch.version.cuda:
        versions["cuda_runtime"] = torch.version.cuda
    return entries, gpu, versions


def fully_shard_as_trained(torch, model, cnn):
    """FSDP2 as xdeep's workloads train under it (bench/memory_validation too): a unit per
    transformer block or ResNet stage, and the root; bf16 parameters for transformers,
    fp32 for a CNN (BatchNorm cannot take bf16 parameters beside fp32 running stats)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    mp = (MixedPrecisionPolicy() if cnn else
          MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))
    units = [model.layer1, model.layer2, model.layer3, model.layer4] if cnn else model.blocks
    for unit in units:
        fully_shard(unit, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    return model


@contextlib.contextmanager
def process_group(torch, device, rank, world, folder):
    """The probe's process group (NCCL on GPUs, Gloo on the CPU; a file store in `folder`,
    private to this probe: no port to pick); yields whether it formed. Where PyTorch
    cannot form it, says why on stderr: the tuner then keeps its built-in figures."""
    dist = torch.distributed
    try:
        if not dist.is_available():
            raise RuntimeError("this PyTorch is built without torch.distributed")
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                init_method=f"file://{folder}/store", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
    except (RuntimeError, ValueError, OSError) as e:
        print(f"framework_probe: no DDP or FSDP pass ({type(e).__name__}: {e}); the report has "
              "no ddp_median_s and the tuner keeps its built-in DDP figure", file=sys.stderr)
        yield False
        return
    try:
        yield True
    finally:
        dist.destroy_process_group()


def ranks_straggle(torch, plain):
    """How far the slowest rank's plain pass trails the ranks' mean, over the passes all
    ranks ran in the same turn (the wrapped passes between turns keep them in step): the
    wait a synchronous step sees from its hosts' pass-to-pass spread. Summed over the
    turns as `xdeep_validate compare` measures training's."""
    everyone = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(everyone, plain)
    turns = list(zip(*everyone))
    return sum(max(t) for t in turns) / sum(statistics.mean(t) for t in turns)


def wrappers(torch, device):
    """{"ddp": wrap, "fsdp": wrap} (FSDP2 where this PyTorch has it), each wrap(network
    name, model) returning the wrapped model, for a process group already formed."""
    ids = [device] if device.type == "cuda" else None
    out = {"ddp": lambda name, model: torch.nn.parallel.DistributedDataParallel(
        model.to(device), device_ids=ids)}
    try:
        import torch.distributed.fsdp  # noqa: F401 - only whether it imports
        out["fsdp"] = lambda name, model: fully_shard_as_trained(torch, model.to(device), name == "resnet")
    except Exception as e:  # noqa: BLE001 - an FSDP2 that does not import (old PyTorch) is skipped
        print(f"framework_probe: no FSDP pass ({type(e).__name__}: {e}); FSDP2 needs "
              "PyTorch 2.6 or later", file=sys.stderr)
    try:
        import torch.distributed.tensor.parallel  # noqa: F401 - only whether it imports
        out["tp"] = lambda name, model: tensor_parallel_as_trained(torch, model.to(device), device, name)
    except Exception as e:  # noqa: BLE001 - no DTensor tensor parallelism in this PyTorch
        print(f"framework_probe: no TP pass ({type(e).__name__}: {e})", file=sys.stderr)
    return out


# The Linear layers of a block that tensor parallelism splits, by network, Megatron-style:
# column-parallel into attention and the MLP, row-parallel out of them. The Llama-style
# block's is bench/validate/library_suite.py's plan for transformers' Llama blocks.
TP_PLANS = {
    "gpt": {"qkv": "col", "fc1": "col", "proj": "row", "fc2": "row"},
    "llama": {"q": "col", "k": "col", "v": "col", "o": "row", "gate": "col", "up": "col", "down": "row"},
}
TP_LINEARS_PER_BLOCK = len(TP_PLANS["gpt"])


def split_blocks(torch, blocks, plan, device):
    """Each block split by parallelize_module over every rank (a one-rank mesh on one),
    plan naming each split Linear "col" (ColwiseParallel) or "row" (RowwiseParallel)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh(device.type, (torch.distributed.get_world_size(),))
    styles = {k: ColwiseParallel() if v == "col" else RowwiseParallel() for k, v in plan.items()}
    for block in blocks:
        parallelize_module(block, mesh, styles)


def tensor_parallel_as_trained(torch, model, device, network="gpt"):
    """The decoder's blocks split as torch.distributed.tensor.parallel splits them
    (TP_PLANS[network]) over all ranks: every split Linear is a DTensor op whose host
    dispatch (sharding propagation, redistribution, the wrapping and unwrapping hooks) a
    plain pass does not pay. Decoders only: a CNN has no tensor parallelism here."""
    if network not in TP_PLANS or not hasattr(model, "blocks"):
        raise ValueError("tensor parallelism is probed on the decoders only")
    split_blocks(torch, model.blocks, TP_PLANS[network], device)
    return model


def llama_passes(torch, device, shape, wrap, inputs, target):
    """A Llama-style decoder (llama_classes, 7 Linears a block) of the tiny GPT's shape, its
    pass plain ("llama") and with its blocks split by TP_PLANS["llama"] ("llama_tp"), on the
    GPT's tokens: what a Llama block costs under TP, which the GPT's figure does not tell (a
    transformers Llama block cost ~1.65x the GPT's under TP, bench/validate/data/checks/
    2026-11-28_h200x2_host_depth_tp). {} and why on stderr where either cannot run: the
    entry is then as without it."""
    try:
        build = lambda: llama_of(torch, shape)  # noqa: E731
        plain = tried_pass(torch, device, "Llama", build, inputs, target)
        split = plain and tried_pass(torch, device, "Llama TP", lambda: wrap("llama", build()), inputs, target)
    except Exception as e:  # noqa: BLE001 - an extra figure: never the entry's others
        print(f"framework_probe: no Llama TP pass ({type(e).__name__}: {e})", file=sys.stderr)
        return {}
    return {"llama": plain, "llama_tp": split} if plain and split else {}


# transformers' decoder classes of the GPT's shape, as bench/validate/library_suite.py builds
# them (from_config, random weights, SDPA attention, the config's dropout): GPT2LMHeadModel (the
# GPT-2 class: GPT-2, Cerebras-GPT, GPT-SW3), LlamaForCausalLM and GPTNeoXForCausalLM (Pythia).
LIBRARY_DECODERS = ("gpt2", "llama", "gpt_neox")


def library_decoder(kind, shape):
    """A transformers decoder of `kind` (LIBRARY_DECODERS) with the probe GPT's shape, on the CPU."""
    import transformers
    s = shape
    if kind == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_layer=s["layers"], n_embd=s["hidden"], n_head=s["heads"], n_inner=s["ffn"],
            n_positions=s["seq"], vocab_size=s["vocab"]))
    cfg = dict(num_hidden_layers=s["layers"], hidden_size=s["hidden"], num_attention_heads=s["heads"],
               intermediate_size=s["ffn"], max_position_embeddings=s["seq"], vocab_size=s["vocab"])
    if kind == "llama":
        return transformers.LlamaForCausalLM(transformers.LlamaConfig(
            num_key_value_heads=s["heads"], tie_word_embeddings=True, **cfg))
    return transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(**cfg))


def library_pass(torch, device, model, inputs):
    """A transformers decoder's training pass as library_suite.py runs it: the loss from the
    model's own labels (bf16 autocast), fused AdamW (the Trainer's default) where the device
    has it."""
    model = model.to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.0,
                            **({"fused": True} if device.type == "cuda" else {}))

    def forward_backward():
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(input_ids=inputs, labels=inputs).loss
        loss.backward()

    def step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    return forward_backward, step


def library_turns(torch, args, device, gpt_pass, inputs):
    """The probe GPT's plain pass taking turns with transformers' decoders of its shape
    (LIBRARY_DECODERS; half the GPT's turns): what a transformers decoder's Python costs the
    host beside the bare PyTorch GPT, read in the same window, so the ratio is the host's of
    one moment. transformers' decoders ran 1.07-1.5x the step-time model's ratio to the GPT's
    pass, by host (bench/validate/README.md, "h25h, session 25"; forward ~61 us an nn.Module
    call beside ~15 us a launch on one H200): data for a host reading of library code, which
    the tuner does not read yet. ({}, {}) and why on stderr where transformers is missing or
    a decoder cannot run."""
    try:
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"framework_probe: no transformers decoders ({e})", file=sys.stderr)
        return {}, {}
    passes = {"gpt": gpt_pass}
    for kind in LIBRARY_DECODERS:
        try:
            passes[kind] = library_pass(torch, device, library_decoder(kind, GPT_SHAPE), inputs)
            passes[kind][0]()
            passes[kind][1]()
        except Exception as e:  # noqa: BLE001 - an extra figure: never the entry's others
            print(f"framework_probe: no transformers {kind} pass ({type(e).__name__}: {e})", file=sys.stderr)
            passes.pop(kind, None)
    if len(passes) == 1:
        return {}, {}
    half = argparse.Namespace(warmup=max(1, args.warmup // 2), steps=max(3, args.steps // 2))
    try:
        times, step_host = alternating_times(torch, half, device, passes)
    except Exception as e:  # noqa: BLE001
        print(f"framework_probe: no transformers decoders' turns ({type(e).__name__}: {e})", file=sys.stderr)
        return {}, {}
    return passes, dict(times=times, step_host=step_host, version=transformers.__version__)


def forward_module_calls(torch, fn):
    """nn.Module calls in one call of fn (a global forward pre-hook, removed after it)."""
    count = [0]

    def hook(module, inputs):
        count[0] += 1

    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        fn()
    finally:
        handle.remove()
    return count[0]


def library_fields(torch, device, passes, turns):
    """The gpt entry's fields of library_turns: per decoder its median pass, fused step's host
    time, kernels and forward module calls; the GPT's median in the same turns and its module
    calls. Counted after all timing (the profiler and the hook run once each)."""
    out = {"hf_gpt_median_s": statistics.median(turns["times"]["gpt"]),
           "module_calls": forward_module_calls(torch, passes["gpt"][0])}
    for kind in LIBRARY_DECODERS:
        if kind not in passes:
            continue
        out[f"hf_{kind}_median_s"] = statistics.median(turns["times"][kind])
        out[f"hf_{kind}_min_s"] = min(turns["times"][kind])
        out[f"hf_{kind}_step_host_s"] = statistics.median(turns["step_host"][kind])
        try:
            out[f"hf_{kind}_kernels"] = kernel_profile(torch, passes[kind][0], device)[0]
            out[f"hf_{kind}_module_calls"] = forward_module_calls(torch, passes[kind][0])
        except Exception as e:  # noqa: BLE001
            print(f"framework_probe: no transformers {kind} counts ({type(e).__name__}: {e})", file=sys.stderr)
    return out


def tried_pass(torch, device, kind, build, inputs, target):
    """A wrapped model's pass, run once untimed; None and why on stderr where this PyTorch
    cannot run it, so that the other passes are still timed."""
    try:
        forward_backward, step = training_pass(torch, device, build(), inputs, target)
        forward_backward()
        step()
        return forward_backward, step
    except (RuntimeError, ValueError, TypeError, AssertionError, AttributeError) as e:
        print(f"framework_probe: no {kind} pass ({type(e).__name__}: {e})", file=sys.stderr)
        return None


def training_pass(torch, device, model, inputs, target):
    """The model's forward + backward (bf16 autocast) and the AdamW step that follows it
    (untimed: the tuner times the optimizer apart)."""
    model = model.to(device)
    # One AdamW per kind of parameter: a foreach step takes plain tensors or DTensors
    # (tensor parallelism's split weights), not both in one call.
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # a PyTorch without DTensor has no tensor parallelism either
        DTensor = ()
    params = list(model.parameters())
    groups = [[p for p in params if isinstance(p, DTensor)],
              [p for p in params if not isinstance(p, DTensor)]]
    opts = [torch.optim.AdamW(g, lr=1e-4) for g in groups if g]

    def forward_backward():
        with torch.autocast(device.type, dtype=torch.bfloat16):
            out = model(inputs)
            loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
        loss.backward()

    def step():
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)

    return forward_backward, step


def alternating_times(torch, args, device, passes):
    """Each pass's forward + backward wall times, in order, by kind, the passes taking turns:
    the host's speed switches between levels within seconds (bench/validate/data/checks/
    2026-11-26_h100x1_host_check_pinned), so passes timed one after the other could see
    different levels and their difference would be the host's, not the wrapper's. Also,
    by kind, the host time of each optimizer step (AdamW's step and zero_grad, from an
    idle GPU to the call's return, not waiting for its kernels): a launch-bound step
    pays it in full, and over FSDP's sharded parameters it is several times a plain one."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    times = {kind: [] for kind in passes}
    step_host = {kind: [] for kind in passes}
    for i in range(args.warmup + args.steps):
        for kind, (forward_backward, step) in passes.items():
            sync()
            t0 = time.perf_counter()
            forward_backward()
            sync()
            t1 = time.perf_counter()
            step()
            if i >= args.warmup:
                times[kind].append(t1 - t0)
                step_host[kind].append(time.perf_counter() - t1)
    return times, step_host


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="report file (JSON), written atomically")
    # ~5 ms a GPT pass on an H200 host: 100 passes span half a second.
    ap.add_argument("--steps", type=int, default=100, help="timed forward + backward passes")
    ap.add_argument("--warmup", type=int, default=10, help="untimed passes first")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index")
    ap.add_argument("--main-cpu", type=int, default=None,
                    help="time with the main thread alone on this CPU (CUDA's threads keep the "
                         "process's CPUs): whether the host's speed follows the core")
    ap.add_argument("--cpu", action="store_true",
                    help="smoke run on the CPU (no GPU needed; the tuner ignores its figure)")
    ap.add_argument("--ranks", type=int, default=1,
                    help="run the passes on this many ranks, one process per GPU from --device "
                         "on, as multi-GPU training runs: each rank's host issues its own kernels "
                         "and FSDP's per-unit collectives wait for the other ranks (the tuner "
                         "takes FSDP's host cost from such entries; the memory-bound GPT is "
                         "timed with one rank only)")
    # ~22 s more on an H200 host (59.7 s against 35-38): off in the daemon's probe, whose tuner
    # does not read these fields yet; validation runs (bench/validate/run_library.sh) ask for them.
    ap.add_argument("--library-decoders", action="store_true",
                    help="on one rank, also time transformers' GPT-2, Llama and GPTNeoX decoders of "
                         "the GPT's shape taking turns with its pass (hf_* fields; needs transformers)")
    args = ap.parse_args()
    if args.ranks < 1:
        ap.error("--ranks must be at least 1")
    if args.ranks > 1 and args.main_cpu is not None:
        ap.error("--main-cpu pins one process's main thread; it does not go with --ranks")
    if args.steps < 3 or args.warmup < 1:
        ap.error("--steps must be at least 3 and --warmup at least 1")
    if args.main_cpu is not None and args.main_cpu not in os.sched_getaffinity(0):
        ap.error(f"--main-cpu {args.main_cpu} is not one of this process's CPUs "
                 f"{sorted(os.sched_getaffinity(0))}")
    with tempfile.TemporaryDirectory(prefix="xdeep-framework-probe.") as folder:
        try:
            if args.ranks == 1:
                run_rank(0, args, folder)
            else:
                spawn_ranks(args, folder)
        except ImportError as e:
            sys.exit(f"framework_probe: PyTorch is not importable here ({e}); run it with the "
                     "Python environment the jobs use")


def spawn_ranks(args, folder):
    """--ranks N: N fresh processes (CUDA cannot be forked), rank 0 writing the report;
    one line on what failed, where one rank did."""
    import torch
    import torch.multiprocessing as mp
    if not args.cpu and args.device + args.ranks > torch.cuda.device_count():
        sys.exit(f"framework_probe: --ranks {args.ranks} from --device {args.device} needs "
                 f"{args.device + args.ranks} GPUs; PyTorch sees {torch.cuda.device_count()}")
    try:
        mp.spawn(spawned_rank, args=(args, folder), nprocs=args.ranks)
    except mp.ProcessRaisedException as e:
        last = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        sys.exit(f"framework_probe: a rank failed ({last}); no report written")
    except mp.ProcessExitedException as e:
        sys.exit(f"framework_probe: a rank exited ({e}); no report written")


# A rank's wrapped models, kept until its process ends: freeing the last holder of a Gloo
# process group (DDP's reducer) just after a collective deadlocked PyTorch 1.13 (the
# group's destructor waits for its worker, which waits for the GIL to free the
# collective's tensors), and the rank only has to exit.
UNTIL_EXIT = []


def spawned_rank(rank, args, folder):
    """A spawned rank: its measurement, then an immediate exit (nothing it holds is freed
    one by one: UNTIL_EXIT)."""
    run_rank(rank, args, folder)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_rank(rank, args, folder):
    """One rank's measurement; rank 0 writes the report."""
    t0 = time.perf_counter()
    measured = measure(args, rank, args.ranks, folder)
    if measured is None:
        return
    entries, gpu, versions = measured
    report = {
        "schema": "xdeep.probe_report/1",
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "versions": versions,
        "nodes": 1, "ranks": args.ranks, "gpus_per_node": gpu["count"] if gpu else 0,
        "elapsed_s": time.perf_counter() - t0,
        "gemm": [], "attention": [], "bandwidth": [], "collectives": [],
        "framework": entries, "errors": [],
    }
    if gpu:
        report["gpu"] = gpu
    tmp = f"{args.out}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=2)
    os.replace(tmp, args.out)
    for e in entries:
        if e["model"] == "gpt" and e["hidden"] != GPT_SHAPE["hidden"]:
            print(f"framework_probe: torch {e['version']}: forward + backward of a {e['layers']}-layer GPT "
                  f"(hidden {e['hidden']}, seq {e['seq']}, batch {e['batch']}) in {e['median_s'] * 1e3:.2f} ms, "
                  f"elementwise kernels {e.get('elementwise_s', 0) * 1e3:.2f} ms of it"
                  + (f" (the loss alone {e['loss_s'] * 1e3:.2f} ms)" if "loss_s" in e else "")
                  + (f", attention {e['attention_s'] * 1e3:.2f} ms" if "attention_s" in e else ""))
            continue
        what = f"{e['layers']}-layer GPT" if e["model"] == "gpt" else f"ResNet-{e['depth']} at {e['image']} px"
        on = f" on each of {e['ranks']} ranks" if e["ranks"] > 1 else ""
        print(f"framework_probe: torch {e['version']}: forward + backward of a {what}, batch {e['batch']}{on}, "
              f"in {e['median_s'] * 1e3:.2f} ms, {e['kernels']} kernels, "
              f"{e['median_s'] / max(e['kernels'], 1) * 1e6:.1f} us each, GPU busy {e['gpu_busy_fraction']:.0%}"
              + "".join(f"; {e[f'{kind}_median_s'] * 1e3:.2f} ms under {kind.upper()}"
                        for kind in ("ddp", "fsdp", "tp") if f"{kind}_median_s" in e)
              + (f"; a Llama-style decoder of its shape {e['llama_median_s'] * 1e3:.2f} ms, "
                 f"{e['llama_tp_median_s'] * 1e3:.2f} ms under TP" if "llama_tp_median_s" in e else "")
              + "".join(f"; transformers' {kind} of its shape {e[f'hf_{kind}_median_s'] * 1e3:.2f} ms "
                        f"({e[f'hf_{kind}_median_s'] / e['hf_gpt_median_s']:.2f}x the GPT's turns)"
                        for kind in LIBRARY_DECODERS if f"hf_{kind}_median_s" in e)
              + (f"; slowest rank {e['straggle']:.3f}x the mean" if "straggle" in e else "")
              + "; optimizer step's host time " + ", ".join(
                  f"{e[f'{kind}step_host_s'] * 1e3:.2f} ms{label}"
                  for kind, label in (("", ""), ("fsdp_", " under FSDP"))
                  if f"{kind}step_host_s" in e))


if __name__ == "__main__":
    main()
