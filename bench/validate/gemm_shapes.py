#!/usr/bin/env python3
"""Training-like GEMM shapes the probe never ran, and their cuBLAS times (issue 19, item 1).

  gemm_shapes.py generate --seed 19 --count 360 --out shapes.json [--exclude REPORT...]
      Random layer shapes of transformers and CNNs as training runs them: a layer
      (tokens or output pixels x in -> out) in one of its three passes (forward, dgrad,
      wgrad, stored as nn.Linear holds them), at bf16, fp16 or tf32. Hidden sizes,
      FFN ratios, vocabularies, channel counts, sequence lengths and micro-batches are
      drawn from what public models use, aligned and not (vocabularies 50257, 32001,
      30522, channel counts 147 or 27 of a first convolution, odd hidden sizes).
  gemm_shapes.py time --shapes shapes.json --out timed.json [--deadline-s S]
      torch.matmul (cuBLAS) at every shape, timed as xdeep-probe times a GEMM
      (bench/profiler/compare_torch.py torch_like_probe: warm-up, back-to-back batches
      of ~2 ms between CUDA events behind a hold, the median of the samples).
  gemm_shapes.py fitset --out fit_shapes.json [--random-layers 20 --max-flops 1e12 --seed 4
                        --exclude SHAPES...]
      The probe's shapes file (xdeep.gemm_shapes/1) of the fit: the validation
      workloads' layers (GPT-style 125M-1.3B at micro-batch 1 and 16) and random
      training-like layers drawn as `generate` draws them (none of whose passes is in
      the excluded files), at bf16, fp16 and tf32; xdeep-probe adds its anchor layers
      (profiler/suites.cc ModelAnchorGemms). A fit to GPT layers alone learns one
      corner of the shapes training runs: on the 2026-11-27 H100 check (240 shapes)
      its 95th percentile was 33 %, 30 % with a third of the fit points drawn at random.

  gemm_shapes.py pool --seed S --count 2000 --exclude CHECK... --out pool.json
  gemm_shapes.py fitset --by-kernel pool_algos.json --per-class 2 --out fit_shapes.json
      A fit set chosen by kernel instead of by layer: `pool` draws shapes as `generate`
      does (each at its own precision, as an xdeep-probe shapes file), `xdeep-probe
      compute --suite gemm-heuristic --shapes pool.json` names each one's kernel
      (nothing timed, ~1 ms a shape), and `fitset --by-kernel` keeps up to --per-class
      shapes of every kernel class (precision, algorithm, tile, split or not), spread
      over the class's FLOPs -- so every class the model's per-class residual is used on
      has fit points behind it (gemm_model_calibration.md, "What seed 6607 says").

  gemm_shapes.py probeshapes --shapes shapes.json --out probe_shapes.json
      The same shapes as an xdeep-probe shapes file (xdeep.gemm_shapes/1 `gemms`, each
      with its pass), for `xdeep-probe compute --suite gemm-heuristic`: the kernel
      cuBLASLt's heuristic picks for each, nothing timed (the model then times that
      kernel's tile grid: tuner/gemm_kernel_table.h).

  gemm_shapes.py repeat A.json B.json
      How far two timings of the same shapes (check results or probe reports) lie apart:
      median and 95th percentile of |B/A - 1| over the shapes both hold. The floor under
      any model's error: the H100 checks of one shape set 20 minutes apart differ by
      about 1 % (median) and 4-5 % (95th percentile).

The model (tuner/gemm_model.cc) is fitted to the probe's report only; the timed
shapes are its check (`xdeep_validate gemm-check`).
"""
import argparse
import json
import os
import random
import statistics
import sys
import time

# Sizes public models use (GPT-2, GPT-NeoX, Llama 1-3, Mistral, BERT, T5, OPT, Falcon,
# ViT), a few odd ones, and vocabularies aligned or not.
HIDDEN = [512, 768, 1024, 1280, 1536, 1600, 2048, 2560, 3072, 4096, 5120, 1000, 1e3 + 1,
          1026, 1540, 2052, 640, 896, 1152, 1792, 2304, 3584]
VOCAB = [50257, 50304, 32000, 32001, 30522, 128256, 49152, 65024, 151936, 51200, 250880]
SEQ = [128, 256, 512, 1024, 2048, 4096]
CNN_CH = [32, 48, 64, 96, 128, 192, 256, 320, 384, 512, 640, 768, 1024, 1280, 2048, 72, 120,
          200, 40, 24]
CNN_HW = [7, 14, 28, 56, 112, 8, 16, 32, 64, 13, 27, 55]
DTYPES = ["bf16"] * 2 + ["fp16", "tf32"]


def transformer_shape(r):
    h = int(r.choice(HIDDEN))
    kind = r.choice(["qkv", "proj", "fc1", "fc2", "gate_up", "head", "qkv_gqa"])
    ffn = r.choice([4 * h, (8 * h // 3 + 255) // 256 * 256, 8 * h // 3, int(3.5 * h)])
    if kind == "qkv":
        i, o = h, 3 * h
    elif kind == "qkv_gqa":
        i, o = h, h + 2 * (h // r.choice([4, 8]))
    elif kind == "proj":
        i, o = h, h
    elif kind == "fc1":
        i, o = h, ffn
    elif kind == "gate_up":
        i, o = h, 2 * ffn
    elif kind == "fc2":
        i, o = ffn, h
    else:
        i, o = h, r.choice(VOCAB)
    seq = r.choice(SEQ)
    mb = r.choice([1, 1, 2, 2, 4, 4, 8, 16, 32])
    tokens = seq * mb
    if kind == "head":  # logits over a whole batch are large: keep the timing short
        tokens = min(tokens, 8192)
    return f"tf.{kind}.h{h}", tokens, i, o


def cnn_shape(r):
    cin, cout = r.choice(CNN_CH), r.choice(CNN_CH)
    ks = r.choice([1, 1, 3, 3, 7])
    hw = r.choice(CNN_HW)
    if r.random() < 0.1:  # a first convolution: 3 input channels
        cin, ks, hw = 3, r.choice([3, 7]), r.choice([112, 56, 32])
    mb = r.choice([1, 2, 4, 8, 16, 32, 64, 128, 256])
    pixels = mb * hw * hw
    if pixels * max(cin * ks * ks, cout) > 2 ** 31 // 4:
        mb = max(1, mb // 8)
        pixels = mb * hw * hw
    return f"cnn.c{cin}x{ks}x{ks}->{cout}", pixels, cin * ks * ks, cout


def passes(tokens, i, o):
    """(m, n, k) per pass, as the probe orients a layer (profiler/shapes.cc LayerGemms)."""
    return {"fwd": (tokens, o, i), "dgrad": (tokens, i, o), "wgrad": (o, i, tokens)}


def excluded_shapes(paths):
    """(m, n, k, dtype) of every GEMM in these probe reports (their `gemm` entries) and
    check-shape files (their `shapes`), in either orientation of m and n: shapes the new
    set must not contain, so that none of it was fitted or checked before."""
    out = set()
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for g in doc.get("gemm", []) + doc.get("shapes", []):
            out.add((g["m"], g["n"], g["k"], g["dtype"]))
            out.add((g["n"], g["m"], g["k"], g["dtype"]))
    return out


def draw(seed, count, exclude):
    """`count` random training-like GEMMs (m, n, k, pass, dtype, layer), none in `exclude`."""
    r = random.Random(seed)
    out, seen = [], excluded_shapes(exclude)
    while len(out) < count:
        layer, tokens, i, o = (transformer_shape if r.random() < 0.6 else cnn_shape)(r)
        pas = r.choice(["fwd", "dgrad", "wgrad"])
        m, n, k = passes(tokens, i, o)[pas]
        dtype = r.choice(DTYPES)
        flops = 2.0 * m * n * k
        if flops > 4e12 or flops < 1e6:  # > ~5 ms at tf32, or nothing to time
            continue
        if (m, n, k, dtype) in seen:
            continue
        seen.add((m, n, k, dtype))
        out.append({"m": m, "n": n, "k": k, "pass": pas, "dtype": dtype, "layer": layer})
    return out


def cmd_generate(args):
    out = draw(args.seed, args.count, args.exclude)
    json.dump({"schema": "xdeep.gemm_check_shapes/1", "seed": args.seed, "shapes": out},
              open(args.out, "w"), indent=1)
    print(f"{len(out)} shapes -> {args.out}")


def cmd_fitset(args):
    if args.by_kernel:
        gemms, classes = by_kernel(args.by_kernel, args.per_class, args.max_gemms, args.exclude)
        json.dump({"schema": "xdeep.gemm_shapes/1", "dtypes": args.dtypes.split(","),
                   "gemms": gemms}, open(args.out, "w"), indent=1)
        print(f"{len(gemms)} GEMMs from {classes} kernel classes -> {args.out}")
        return
    layers = []
    gpt = {"gpt-125m": (768, 12), "gpt-350m": (1024, 16), "gpt-760m": (1536, 16),
           "gpt-1.3b": (2048, 32)}
    for name, (h, _) in gpt.items():
        for mb in [int(x) for x in args.gpt_micro_batches.split(",") if x]:
            t = 1024 * mb
            for lname, i, o in [("qkv", h, 3 * h), ("proj", h, h), ("fc1", h, 4 * h),
                                ("fc2", 4 * h, h), ("head", h, 50257)]:
                layers.append({"name": f"{name}.{lname}.mb{mb}", "tokens": t, "in": i, "out": o})
    # Random layers, none with a pass the check holds, in any precision, up to
    # --max-flops a pass: a fit capped at micro-batch 4's size (8e10) left the model to
    # extrapolate to the check's largest shapes (up to 4e12), and that cost it most
    # (gemm_model_calibration.md, "The fit set's reach"). A pass up to 1e12 runs in a
    # few ms, inside the probe's ~2 ms sampling batches: the probe's time barely grows.
    r = random.Random(args.seed)
    seen = excluded_shapes(args.exclude)
    dtypes = args.dtypes.split(",")
    gpt_layers = len(layers)
    while len(layers) < gpt_layers + args.random_layers:
        layer, tokens, i, o = (transformer_shape if r.random() < 0.6 else cnn_shape)(r)
        if 2.0 * tokens * i * o > args.max_flops or 2.0 * tokens * i * o < 1e6:
            continue
        if any((m, n, k, d) in seen for (m, n, k) in passes(tokens, i, o).values() for d in dtypes):
            continue
        layers.append({"name": f"random.{layer}.t{tokens}", "tokens": tokens, "in": i, "out": o})
    json.dump({"schema": "xdeep.gemm_shapes/1", "dtypes": args.dtypes.split(","), "layers": layers},
              open(args.out, "w"), indent=1)
    print(f"{len(layers)} layers -> {args.out}")


def cmd_time(args):
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "profiler"))
    from compare_torch import Hold, kernel_names, operands, torch_like_probe
    shapes = json.load(open(args.shapes))["shapes"]
    hold = Hold(torch)
    results, skipped = [], []
    t0 = time.time()
    for s in shapes:
        if time.time() - t0 > args.deadline_s:  # keep what was timed: the check of fewer shapes
            print(f"deadline: {len(results)} of {len(shapes)} shapes timed")
            break
        try:
            tflops = torch_like_probe(s["m"], s["n"], s["k"], s["dtype"], 0.0, args.warm_up_ms / 1e3,
                                      args.samples, hold, torch, pas=s["pass"])
        except torch.cuda.OutOfMemoryError:
            # The harness's operands (fp32 before the cast) of a rare drawn shape can outgrow
            # the card (seed 5309's 401408 x 64 x 37632 fp16 asked 56 GiB on an H200): that
            # shape is left out and counted, the others are still timed.
            torch.cuda.empty_cache()
            print(f"out of memory: {s['dtype']} {s['pass']} m={s['m']} n={s['n']} k={s['k']} left out")
            skipped.append(s)
            continue
        e = dict(s)
        e["tflops"] = tflops
        e["median_s"] = 2.0 * s["m"] * s["n"] * s["k"] / tflops / 1e12
        results.append(e)
    # After every timing, so the profiler disturbs none: which kernel cuBLAS ran for
    # each shape (its name carries tile, cluster and split-k), for comparing with what
    # cuBLASLt's heuristic answered (--suite gemm-heuristic). Diagnostics only.
    t1 = time.time()
    for e in results if args.kernels_s > 0 else []:
        if time.time() - t1 > args.kernels_s:
            break
        torch.backends.cuda.matmul.allow_tf32 = e["dtype"] == "tf32"
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(e["dtype"], torch.float32)
        a, b = operands(e["m"], e["n"], e["k"], e["pass"], dt, torch)
        c = torch.empty(e["m"], e["n"], device="cuda", dtype=dt)
        torch.matmul(a, b, out=c)
        e["torch_kernel"] = kernel_names(lambda: torch.matmul(a, b, out=c), torch)
        del a, b, c
    props = torch.cuda.get_device_properties(0)
    meta = {"gpu": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "cublas": torch.backends.cuda.preferred_blas_library().name
            if hasattr(torch.backends.cuda, "preferred_blas_library") else "",
            "seconds": round(time.time() - t0, 1), "hold_short_batches": hold.short,
            "left_out_out_of_memory": len(skipped),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with open(args.out + ".part", "w") as f:
        json.dump({"schema": "xdeep.gemm_check/1", "meta": meta, "gemm": results}, f, indent=1)
    os.replace(args.out + ".part", args.out)
    rates = [e["tflops"] for e in results]
    print(f"{len(results)} GEMMs in {meta['seconds']} s; median {statistics.median(rates):.0f} "
          f"TFLOP/s -> {args.out}")


def cmd_pool(args):
    """A pool of shapes to ask cuBLASLt's heuristic about (nothing timed): each at its own
    precision, so `fitset --by-kernel` can pick fit shapes by the kernel they run."""
    shapes = draw(args.seed, args.count, args.exclude)
    gemms = [{"m": s["m"], "n": s["n"], "k": s["k"], "pass": s["pass"], "dtype": s["dtype"],
              "label": s["layer"]} for s in shapes]
    json.dump({"schema": "xdeep.gemm_shapes/1", "dtypes": sorted({s["dtype"] for s in shapes}),
               "gemms": gemms}, open(args.out, "w"), indent=1)
    print(f"{len(gemms)} pool GEMMs -> {args.out}")


def by_kernel(algos_path, per_class, max_gemms, exclude):
    """Up to `per_class` shapes of every kernel class (precision, algorithm, tile, split or
    not) the heuristic named in a `--suite gemm-heuristic` report, spread over the class's
    FLOPs (smallest, largest, then between), none in `exclude`; at most `max_gemms` in all,
    taken a round at a time, the classes the pool runs most first (the probe's time box
    holds a few hundred GEMMs, and a pool of training-like shapes names ~170 classes per
    600 answers: seed 6607's check)."""
    seen = excluded_shapes(exclude)
    classes = {}
    for g in json.load(open(algos_path)).get("gemm_algos", []):
        if (g["m"], g["n"], g["k"], g["dtype"]) in seen:
            continue
        k = g["kernel"]
        key = (g["dtype"], k["algo"], k["tile_m"], k["tile_n"], k["split_k"] > 1)
        classes.setdefault(key, []).append(g)
    rounds = {}
    for key, members in classes.items():
        members.sort(key=lambda g: g["m"] * g["n"] * g["k"])
        n = len(members)
        picks = sorted({round(i * (n - 1) / max(per_class - 1, 1)) for i in range(min(per_class, n))})
        # Smallest and largest first, then the ones between.
        picks = picks[:1] + picks[-1:] + picks[1:-1] if len(picks) > 1 else picks
        for r, i in enumerate(picks):
            rounds.setdefault(r, []).append((-n, key, members[i]))
    chosen = []
    for r in sorted(rounds):
        for _, key, g in sorted(rounds[r], key=lambda t: (t[0], t[1])):
            if len(chosen) >= max_gemms:
                break
            chosen.append({"m": g["m"], "n": g["n"], "k": g["k"], "pass": g["pass"],
                           "dtype": g["dtype"],
                           "label": f"class.{key[1]}.{key[2]}x{key[3]}{'.split' if key[4] else ''}"})
    return chosen, len(classes)


def cmd_probeshapes(args):
    shapes = json.load(open(args.shapes))["shapes"]
    # Each shape at its own precision only (GemmSpec's dtype), not at every one.
    gemms = [{"m": s["m"], "n": s["n"], "k": s["k"], "pass": s["pass"], "dtype": s["dtype"],
              "label": s.get("layer", "")} for s in shapes]
    dtypes = sorted({s["dtype"] for s in shapes})
    json.dump({"schema": "xdeep.gemm_shapes/1", "dtypes": dtypes, "gemms": gemms},
              open(args.out, "w"), indent=1)
    print(f"{len(gemms)} GEMMs at their own precisions ({', '.join(dtypes)}) -> {args.out}")


def cmd_repeat(args):
    def times(path):
        with open(path) as f:
            doc = json.load(f)
        return {(g["m"], g["n"], g["k"], g["dtype"], g.get("pass", "")): g["median_s"]
                for g in doc.get("gemm", []) if g.get("median_s", 0) > 0}
    a, b = times(args.a), times(args.b)
    errors = sorted(abs(b[s] / a[s] - 1) for s in a if s in b)
    if not errors:
        sys.exit(f"gemm_shapes.py: {args.a} and {args.b} share no timed shape")
    p95 = errors[min(len(errors) - 1, int(0.95 * len(errors)))]
    print(f"{len(errors)} shapes in both: |B/A - 1| median {100 * statistics.median(errors):.1f} %, "
          f"95th percentile {100 * p95:.1f} %")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--seed", type=int, default=19)
    g.add_argument("--exclude", nargs="*", default=[],
                   help="probe reports or shape files whose GEMMs the new set leaves out")
    g.add_argument("--count", type=int, default=360)
    g.add_argument("--out", required=True)
    f = sub.add_parser("fitset")
    f.add_argument("--dtypes", default="bf16,fp16,tf32")
    f.add_argument("--random-layers", type=int, default=20)
    f.add_argument("--gpt-micro-batches", default="1,16",
                   help="micro-batches of the GPT layers (empty: none; their 50257-wide heads at "
                        "16 take a third of the probe's time)")
    f.add_argument("--max-flops", type=float, default=1e12,
                   help="largest FLOPs of a random layer's pass (8e10 before 2026-11-27 08:30)")
    f.add_argument("--seed", type=int, default=4)
    f.add_argument("--exclude", nargs="*", default=[],
                   help="shape files or reports whose GEMMs no random layer may run")
    f.add_argument("--by-kernel", metavar="ALGOS.json",
                   help="instead of layers: up to --per-class shapes of every kernel class in "
                        "this --suite gemm-heuristic report (of a `pool`)")
    f.add_argument("--per-class", type=int, default=2)
    f.add_argument("--max-gemms", type=int, default=300,
                   help="with --by-kernel: at most this many GEMMs (the probe adds its anchors)")
    f.add_argument("--out", required=True)
    o = sub.add_parser("pool")
    o.add_argument("--seed", type=int, required=True)
    o.add_argument("--count", type=int, default=2000)
    o.add_argument("--exclude", nargs="*", default=[])
    o.add_argument("--out", required=True)
    t = sub.add_parser("time")
    t.add_argument("--shapes", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--samples", type=int, default=7)
    t.add_argument("--warm-up-ms", type=float, default=20)
    t.add_argument("--deadline-s", type=float, default=float("inf"),
                   help="time no further shape after this many seconds; write those timed")
    t.add_argument("--kernels-s", type=float, default=0,
                   help="after the timings, up to this many seconds naming the kernel torch "
                        "ran for each shape (torch.profiler; 0: none)")
    q = sub.add_parser("probeshapes")
    q.add_argument("--shapes", required=True)
    q.add_argument("--out", required=True)
    r = sub.add_parser("repeat")
    r.add_argument("a")
    r.add_argument("b")
    args = p.parse_args()
    {"generate": cmd_generate, "fitset": cmd_fitset, "time": cmd_time,
     "probeshapes": cmd_probeshapes, "pool": cmd_pool, "repeat": cmd_repeat}[args.cmd](args)


if __name__ == "__main__":
    main()
