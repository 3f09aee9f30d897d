#!/usr/bin/env python3
"""What the host pays per block, per Linear and per layer, and how it meets the GPU's time (issue 19, item 6).

  python3 bench/validate/host_depth_check.py --out DIR [--steps 30] [--warmup 5] [--ranks 2]
                                             [--budget-s 110] [--cpu] [--sections lm,resnet,crossover,tp]

The framework probe (profiler/framework_probe.py) times one tiny GPT (4 blocks of 4 Linears)
and ResNet-50 at batch 1, and the step-time model carries their host cost per kernel to
every network. Run 12 (bench/validate/README.md, h19r's section) showed where that does not
carry: TP=2 of Llama-style blocks (7 split Linears, RMSNorm, rotary, SiLU x mul), the CNN at
depth (ResNet-200), and the combination of host and GPU time near their crossover. This
check measures each on the machine itself, bf16 autocast and batch 1 like the probe:

* lm: forward + backward wall time and kernels of the probe's GPT block, a Llama-style block
  with q, k, v, o, gate, up, down as 7 Linears (HF's RMSNorm and rotary ops), the same block
  with q/k/v and gate/up fused (4 Linears) and, where transformers imports, LlamaForCausalLM
  from_config, each at 2, 4 and 8 blocks: on one rank, plain and under TP over a one-rank
  mesh (DTensor's dispatch alone). The slope over the block count is the cost of a block;
  the 7- and 4-Linear Llama blocks differ by 3 split Linears only.
* tp: the same models on --ranks ranks, plain and split by parallelize_module with the plan of
  library_suite.py (q, k, v, gate, up column-wise; o, down row-wise) and of the probe (qkv, fc1
  / proj, fc2); the slowest rank's pass per turn is what a synchronous step sees.
* resnet: a bottleneck ResNet built like the probe's ResNet-50 at depths 50, 101, 152, 200,
  and the libraries' (torchvision resnet18/34/50/101/152, timm resnet200) where they import,
  channels_last, 224 px, batch 1: host cost per kernel at depth.
* crossover: ResNet-50, ResNet-200 and timm's ViT-S/8 from micro-batch 1 to 128 (ViT 32):
  the wall time of forward + backward, the host's time to issue it (until the call returns,
  before the synchronisation), the GPU's busy time of forward and of backward
  (torch.profiler) and their kernel counts: how the step combines host and GPU time where
  they are close.

Passes of one group take turns (the host's speed switches between levels within seconds;
framework_probe.alternating_times). Writes DIR/host_depth_world1.json and
DIR/host_depth_world{N}.json (rank 0, after each section: a run cut short keeps what it
measured), prints a summary. --cpu is a smoke run (gloo, 64 px images, smaller sweeps; no
TP in a PyTorch without torch.distributed.tensor; nothing of it is a measurement).
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "profiler"))
import framework_probe  # noqa: E402 - the probe's GPT and Llama-style blocks, TP plans, kernel counting, timing

# The probe's GPT shape (framework_probe.GPT_SHAPE) less its layer count.
LM = {k: v for k, v in framework_probe.GPT_SHAPE.items() if k != "layers"}
LAYER_COUNTS = (2, 4, 8)
# Bottleneck blocks per stage at each depth (He et al. 2016, table 1; ResNet-200: He et al. 2016b).
RESNET_STAGES = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3), 200: (3, 24, 36, 3)}
LIBRARY_CNNS = ("tv:resnet18", "tv:resnet34", "tv:resnet50", "tv:resnet101", "tv:resnet152",
                "timm:resnet200")
CROSSOVER = {"tv:resnet50": (1, 16, 32, 64, 128), "timm:resnet200": (1, 16, 32, 64, 128),
             "timm:vit_small_patch8_224": (1, 4, 8, 16, 32)}
CROSSOVER_CPU = {"own:resnet50": (1, 2)}
T0 = time.perf_counter()  # per process (spawned ranks import this module afresh)


def late(args):
    """Whether the whole check's budget (--budget-s from the start of main) is spent."""
    return time.time() > args.deadline


def agreed_late(torch, args, world):
    """late() as rank 0 sees it, on every rank: ranks that split a model must all run it."""
    if world == 1:
        return late(args)
    said = [late(args)]
    torch.distributed.broadcast_object_list(said, src=0)
    return said[0]


def sdpa_fallback(torch):
    """PyTorch < 2.0 (the CPU smoke run's): causal attention in plain ops."""
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        return

    def sdpa(q, k, v, is_causal=False):
        s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if is_causal:
            n = q.shape[-2]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return s.softmax(-1) @ v

    torch.nn.functional.scaled_dot_product_attention = sdpa


def resnet_class(torch):
    """The probe's ResNet-50 (framework_probe.resnet50_class: torchvision's v1.5 bottleneck)
    at any depth of RESNET_STAGES."""
    nn = torch.nn
    probe = framework_probe.resnet50_class(torch)

    class ResNet(probe):
        def __init__(self, depth, classes):
            super().__init__(classes)
            stages, inplanes = [], 64
            block = type(self.layer1[0])
            for planes, blocks, stride in zip((64, 128, 256, 512), RESNET_STAGES[depth], (1, 2, 2, 2)):
                stage = []
                for i in range(blocks):
                    stage.append(block(inplanes, planes, stride if i == 0 else 1))
                    inplanes = planes * 4
                stages.append(nn.Sequential(*stage))
            self.layer1, self.layer2, self.layer3, self.layer4 = stages

    return ResNet


def library_model(torch, name):
    """torchvision / timm model by "tv:NAME" / "timm:NAME"; None where the library does not import."""
    lib, model = name.split(":", 1)
    try:
        if lib == "tv":
            import torchvision
            return getattr(torchvision.models, model)(num_classes=1000)
        import timm
        return timm.create_model(model, num_classes=1000)
    except ImportError:
        return None


def hf_llama(torch, layers):
    """transformers' LlamaForCausalLM from_config at the probe's GPT size (GQA: 2 KV heads,
    tied head as MobileLLM); None where transformers does not import."""
    try:
        import transformers
    except ImportError:
        return None
    cfg = transformers.LlamaConfig(vocab_size=LM["vocab"], hidden_size=LM["hidden"],
                                   intermediate_size=LM["ffn"], num_hidden_layers=layers,
                                   num_attention_heads=LM["heads"], num_key_value_heads=LM["heads"] // 2,
                                   max_position_embeddings=LM["seq"], tie_word_embeddings=True)
    return transformers.LlamaForCausalLM(cfg)


TP_PLANS = {  # the probe's for its GPT and its Llama-style block (library_suite.py's plan for Llama blocks)
    "gpt": framework_probe.TP_PLANS["gpt"],
    "llama7": framework_probe.TP_PLANS["llama"],
    "llama4": {"qkv": "col", "gate_up": "col", "o": "row", "down": "row"},
    "hf_llama": {"self_attn.q_proj": "col", "self_attn.k_proj": "col", "self_attn.v_proj": "col",
                 "self_attn.o_proj": "row", "mlp.gate_proj": "col", "mlp.up_proj": "col",
                 "mlp.down_proj": "row"},
}


def lm_model(torch, variant, layers):
    if variant == "gpt":
        _, gpt = framework_probe.gpt_classes(torch)
        return gpt(layers, *(LM[k] for k in ("hidden", "heads", "ffn", "seq", "vocab")))
    if variant == "hf_llama":
        return hf_llama(torch, layers)
    return framework_probe.llama_classes(torch)(layers, variant == "llama4",
                                *(LM[k] for k in ("hidden", "heads", "ffn", "seq", "vocab")))


def tensor_parallel(torch, variant, model, device):
    """The model's blocks split by parallelize_module over every rank (a one-rank mesh on one)."""
    blocks = model.model.layers if variant == "hf_llama" else model.blocks
    framework_probe.split_blocks(torch, blocks, TP_PLANS[variant], device)
    return model


class Pass:
    """A model's forward + backward under bf16 autocast (gradients set to None after each,
    as a training step's zero_grad), with its forward and backward also callable apart."""

    def __init__(self, torch, device, model, inputs, target, hf=False):
        self.torch, self.device, self.model, self.x, self.y, self.hf = torch, device, model, inputs, target, hf

    def forward(self):
        torch = self.torch
        with torch.autocast(self.device.type, dtype=torch.bfloat16):
            if self.hf:
                return self.model(input_ids=self.x, labels=self.y).loss
            out = self.model(self.x)
            return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), self.y.reshape(-1))

    def __call__(self):
        self.forward().backward()

    def reset(self):
        self.model.zero_grad(set_to_none=True)


def sync_of(torch, device):
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


def turns(torch, device, passes, warmup, steps):
    """Each pass's wall times and issue times (until the call returned, before the
    synchronisation), the passes taking turns."""
    sync = sync_of(torch, device)
    wall = {k: [] for k in passes}
    issue = {k: [] for k in passes}
    for i in range(warmup + steps):
        for kind, p in passes.items():
            sync()
            t0 = time.perf_counter()
            p()
            t1 = time.perf_counter()
            sync()
            t2 = time.perf_counter()
            p.reset()
            if i >= warmup:
                wall[kind].append(t2 - t0)
                issue[kind].append(t1 - t0)
    return wall, issue


def profiled(torch, device, fn):
    """framework_probe.kernel_profile of fn: (kernels, GPU busy s, elementwise s)."""
    return framework_probe.kernel_profile(torch, fn, device)


def entry(times, kernels=None, busy=None, issue=None):
    e = framework_probe.timing_fields(times)
    if kernels is not None:
        e["kernels"] = kernels
        e["us_per_kernel"] = e["median_s"] / max(kernels, 1) * 1e6
    if busy is not None:
        e["gpu_busy_s"] = busy
    if issue is not None:
        e["issue_median_s"] = statistics.median(issue)
    return e


def slope(xs, ys):
    """Least-squares slope and intercept of ys over xs."""
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return b, my - b * mx


def has_tp(torch):
    try:
        import torch.distributed.tensor.parallel  # noqa: F401
        from torch.distributed.device_mesh import init_device_mesh  # noqa: F401
        return True
    except ImportError:
        return False


def lm_section(torch, args, device, world, rank, gen):
    """Per variant: plain and TP passes at each block count, taking turns; on several ranks
    the slowest rank's time per turn too."""
    out, tp_ok = {}, has_tp(torch) and torch.distributed.is_initialized()
    variants = ["gpt", "llama7", "llama4", "hf_llama"]
    for variant in variants:
        if agreed_late(torch, args, world):
            out[variant] = {"skipped": "budget"}
            continue
        passes, built = {}, {}
        for layers in LAYER_COUNTS:
            torch.manual_seed(1234)
            model = lm_model(torch, variant, layers)
            if model is None:
                break
            tok = torch.randint(0, LM["vocab"], (LM["batch"], LM["seq"]), device=device, generator=gen)
            hf = variant == "hf_llama"
            passes[f"plain_{layers}"] = Pass(torch, device, model.to(device), tok, tok, hf)
            if tp_ok:
                try:
                    m = tensor_parallel(torch, variant, lm_model(torch, variant, layers).to(device), device)
                    p = Pass(torch, device, m, tok, tok, hf)
                    p()
                    p.reset()
                    passes[f"tp_{layers}"] = p
                except Exception as e:  # noqa: BLE001 - a plan this PyTorch cannot run is reported
                    built["tp_error"] = f"{type(e).__name__}: {e}"
        if not passes:
            out[variant] = {"skipped": "does not import"}
            continue
        wall, issue = turns(torch, device, passes, args.warmup, args.steps)
        if world > 1:
            everyone = [None] * world
            torch.distributed.all_gather_object(everyone, wall)
            slowest = {k: [max(t) for t in zip(*(w[k] for w in everyone))] for k in wall}
        res = dict(built)
        for kind, p in passes.items():
            kernels, busy, _ = profiled(torch, device, lambda p=p: (p(), p.reset()))
            res[kind] = entry(wall[kind], kernels, busy, issue[kind])
            if world > 1:
                res[kind]["slowest_rank_median_s"] = statistics.median(slowest[kind])
        for kind in ("plain", "tp"):
            pts = [(n, res[f"{kind}_{n}"]) for n in LAYER_COUNTS if f"{kind}_{n}" in res]
            if len(pts) >= 2:
                ms, c = slope([n for n, _ in pts], [e["median_s"] for _, e in pts])
                ks, kc = slope([n for n, _ in pts], [e["kernels"] for _, e in pts])
                res[f"{kind}_per_block_s"], res[f"{kind}_fixed_s"] = ms, c
                res[f"{kind}_kernels_per_block"], res[f"{kind}_kernels_fixed"] = ks, kc
                if world > 1:
                    res[f"{kind}_slowest_per_block_s"] = slope(
                        [n for n, _ in pts], [e["slowest_rank_median_s"] for _, e in pts])[0]
        res["split_linears_per_block"] = len(TP_PLANS[variant])
        out[variant] = res
        del passes
    return out


def image_batch(torch, device, mb, px, gen, channels_last):
    x = torch.randn(mb, 3, px, px, device=device, generator=gen)
    return (x.to(memory_format=torch.channels_last) if channels_last else x,
            torch.randint(0, 1000, (mb,), device=device, generator=gen))


def resnet_section(torch, args, device, gen):
    """Batch-1 passes of the probe's bottleneck net at each depth and of the libraries' CNNs,
    taking turns."""
    px = 64 if args.cpu else 224
    depths = (50, 101) if args.cpu else tuple(RESNET_STAGES)
    models = {f"own:resnet{d}": resnet_class(torch)(d, 1000) for d in depths}
    for name in ((), LIBRARY_CNNS)[not args.cpu]:
        m = library_model(torch, name)
        if m is not None:
            models[name] = m
    passes = {}
    for name, m in models.items():
        x, y = image_batch(torch, device, 1, px, gen, True)
        passes[name] = Pass(torch, device, m.to(device, memory_format=torch.channels_last), x, y)
    wall, issue = turns(torch, device, passes, args.warmup, args.steps)
    out = {"image": px, "batch": 1}
    for name, p in passes.items():
        kernels, busy, _ = profiled(torch, device, lambda p=p: (p(), p.reset()))
        out[name] = entry(wall[name], kernels, busy, issue[name])
        out[name]["parameter_tensors"] = sum(1 for _ in p.model.parameters())
        out[name]["convs"] = sum(1 for m in p.model.modules() if isinstance(m, torch.nn.Conv2d))
    own = [(d, out[f"own:resnet{d}"]) for d in depths]
    out["own_per_conv_s"], out["own_fixed_s"] = slope([e["convs"] for _, e in own], [e["median_s"] for _, e in own])
    out["own_kernels_per_conv"] = slope([e["convs"] for _, e in own], [e["kernels"] for _, e in own])[0]
    return out


def crossover_section(torch, args, device, gen):
    """Forward + backward across the micro-batches where host and GPU time cross: wall
    (one synchronisation at the end, as a step), issue time, wall of forward and backward
    each synchronised, and the GPU's busy time and kernels of each (torch.profiler)."""
    sync = sync_of(torch, device)
    sweep = CROSSOVER_CPU if args.cpu else CROSSOVER
    px = 64 if args.cpu else 224
    out = {"image": px}
    for name, mbs in sweep.items():
        if late(args):
            out[name] = {"skipped": "budget"}
            continue
        cnn = "vit" not in name
        m = resnet_class(torch)(50, 1000) if name.startswith("own:") else library_model(torch, name)
        if m is None:
            out[name] = {"skipped": "does not import"}
            continue
        m = m.to(device, memory_format=torch.channels_last) if cnn else m.to(device)
        rows = {}
        for mb in mbs:
            if late(args):
                rows[str(mb)] = {"skipped": "budget"}
                continue
            x, y = image_batch(torch, device, mb, px, gen, cnn)
            p = Pass(torch, device, m, x, y)
            steps = max(3, args.steps // 3)
            try:
                wall, issue = turns(torch, device, {"fb": p}, max(2, args.warmup // 2), steps)
                split = {"fwd": [], "bwd": []}
                for _ in range(steps):
                    sync()
                    t0 = time.perf_counter()
                    loss = p.forward()
                    sync()
                    t1 = time.perf_counter()
                    loss.backward()
                    sync()
                    split["fwd"].append(t1 - t0)
                    split["bwd"].append(time.perf_counter() - t1)
                    p.reset()
                held = {}
                kf, bf, _ = profiled(torch, device, lambda: held.setdefault("loss", p.forward()))
                kb, bb, _ = profiled(torch, device, lambda: held.pop("loss").backward())
                p.reset()
            except RuntimeError as e:  # out of memory ends this model's sweep
                rows[str(mb)] = {"error": f"{type(e).__name__}: {str(e)[:120]}"}
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                break
            rows[str(mb)] = dict(entry(wall["fb"], kf + kb, bf + bb, issue["fb"]),
                                 fwd_median_s=statistics.median(split["fwd"]),
                                 bwd_median_s=statistics.median(split["bwd"]),
                                 fwd_kernels=kf, bwd_kernels=kb, fwd_gpu_busy_s=bf, bwd_gpu_busy_s=bb)
            del p, x, y
        out[name] = rows
        del m
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return out


def write(path, report):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=2)
    os.replace(tmp, path)


def run(rank, world, args, folder):
    import torch
    sdpa_fallback(torch)
    device = torch.device("cpu") if args.cpu else torch.device("cuda", rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                         init_method=f"file://{folder}/store{world}", rank=rank,
                                         world_size=world, timeout=datetime.timedelta(seconds=90))
    gen = torch.Generator(device=device)
    gen.manual_seed(4321)
    path = os.path.join(args.out, f"host_depth_world{world}.json")
    report = {"schema": "xdeep.host_depth_check/1", "host": socket.gethostname(), "ranks": world,
              "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "torch": torch.__version__, "device": device.type, "lm_shape": LM,
              "layer_counts": list(LAYER_COUNTS), "steps": args.steps, "warmup": args.warmup}
    if device.type == "cuda":
        report["gpu"] = torch.cuda.get_device_name(device)
    sections = set(args.sections.split(","))
    # The CNN sections first: the LM blocks' one-rank passes are what the TP world's are less its meetings.
    todo = ([("resnet", lambda: resnet_section(torch, args, device, gen))] if "resnet" in sections else []) + \
           ([("crossover", lambda: crossover_section(torch, args, device, gen))] if "crossover" in sections else []) + \
           ([("lm", lambda: lm_section(torch, args, device, 1, rank, gen))] if "lm" in sections else [])
    if world > 1:
        todo = [("tp", lambda: lm_section(torch, args, device, world, rank, gen))] if "tp" in sections else []
    for name, fn in todo:
        t = time.perf_counter()
        if agreed_late(torch, args, world):
            report[name] = {"skipped": "budget"}
        else:
            report[name] = fn()
            report[name]["elapsed_s"] = time.perf_counter() - t
        if rank == 0:
            report["elapsed_s"] = time.perf_counter() - T0
            write(path, report)
    torch.distributed.destroy_process_group()
    if rank == 0:
        summary(report)


def spawned(rank, world, args, folder):
    run(rank, world, args, folder)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # framework_probe.spawned_rank: no group torn down object by object


def summary(r):
    w = r["ranks"]
    for section in ("lm", "tp"):
        for variant, res in r.get(section, {}).items():
            if not isinstance(res, dict) or "plain_per_block_s" not in res:
                continue
            line = (f"[{w} rank(s)] {variant}: plain {res['plain_per_block_s'] * 1e3:.3f} ms / "
                    f"{res['plain_kernels_per_block']:.0f} kernels a block")
            if "tp_per_block_s" in res:
                line += (f"; TP {res['tp_per_block_s'] * 1e3:.3f} ms / {res['tp_kernels_per_block']:.0f} kernels a "
                         f"block ({res['split_linears_per_block']} split Linears)")
            if "tp_slowest_per_block_s" in res:
                line += f", slowest rank {res['tp_slowest_per_block_s'] * 1e3:.3f} ms"
            print("host_depth_check: " + line)
    rs = r.get("resnet", {})
    for name, e in rs.items():
        if isinstance(e, dict) and "median_s" in e:
            print(f"host_depth_check: {name} batch 1: {e['median_s'] * 1e3:.2f} ms, {e['kernels']} kernels "
                  f"({e['us_per_kernel']:.1f} us each), {e['convs']} convs, GPU busy {e['gpu_busy_s'] * 1e3:.2f} ms")
    if "own_per_conv_s" in rs:
        print(f"host_depth_check: own bottleneck nets: {rs['own_per_conv_s'] * 1e6:.1f} us and "
              f"{rs['own_kernels_per_conv']:.1f} kernels a conv, fixed {rs['own_fixed_s'] * 1e3:.2f} ms")
    for name, rows in r.get("crossover", {}).items():
        if not isinstance(rows, dict):
            continue
        for mb, e in rows.items():
            if isinstance(e, dict) and "median_s" in e:
                print(f"host_depth_check: {name} mb {mb}: wall {e['median_s'] * 1e3:.2f} ms, issue "
                      f"{e['issue_median_s'] * 1e3:.2f}, GPU busy fwd {e['fwd_gpu_busy_s'] * 1e3:.2f} + bwd "
                      f"{e['bwd_gpu_busy_s'] * 1e3:.2f} ms; fwd {e['fwd_median_s'] * 1e3:.2f} / bwd "
                      f"{e['bwd_median_s'] * 1e3:.2f} ms synchronised apart")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for host_depth_world*.json")
    ap.add_argument("--steps", type=int, default=30, help="timed passes per pass kind")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=2, help="ranks of the TP part (one GPU each); 1: none")
    ap.add_argument("--budget-s", type=float, default=110,
                    help="sections (and models) not begun by then are skipped")
    ap.add_argument("--sections", default="lm,resnet,crossover,tp")
    ap.add_argument("--cpu", action="store_true", help="smoke run on the CPU (gloo)")
    args = ap.parse_args()
    if args.steps < 3 or args.warmup < 1:
        ap.error("--steps must be at least 3 and --warmup at least 1")
    os.makedirs(args.out, exist_ok=True)
    args.deadline = time.time() + args.budget_s
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory(prefix="xdeep-host-depth.") as folder:
        # One fresh process per world: CUDA cannot be forked, and no world's state leaks into the next.
        # TP first (the part the framework probe cannot tell at all), within half the budget: its
        # passes run 10-170 ms each (2x H100, 02:02 UTC: 72 s at --steps 30 left the CNN sections none).
        if args.ranks > 1 and "tp" in args.sections.split(","):
            tp_args = argparse.Namespace(**vars(args))
            tp_args.deadline = time.time() + 0.45 * args.budget_s
            tp_args.steps = max(3, args.steps * 2 // 3)
            mp.spawn(spawned, args=(args.ranks, tp_args, folder), nprocs=args.ranks)
        mp.spawn(spawned, args=(1, args, folder), nprocs=1)
    print(f"host_depth_check: {time.perf_counter() - T0:.1f} s in all; reports in {args.out}")


if __name__ == "__main__":
    main()
