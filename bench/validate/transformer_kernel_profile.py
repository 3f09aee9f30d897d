#!/usr/bin/env python3
"""Where a transformer's training step spends its GPU and host time, by kind of kernel (issue 19, item 6).

  OUT=DIR [CONFIGS=timm-vit-s8:32,timm-vit-s8:256,...] [DEADLINE_S=200] python3 bench/validate/transformer_kernel_profile.py

Each configuration is the library suite's single-GPU step of that model (library_suite.py's
own build, optimizer, batch and loss: timm ViTs NCHW with foreach AdamW, transformers'
decoders with fused AdamW, bf16 autocast), timed with CUDA events (median of 10 steps
after 5 warm-up steps) beside the host's time to issue one step (the Python call's wall
time before the synchronise: the launch-bound floor), then one step under torch.profiler:
each kernel's GPU time summed by kind (GEMMs, flash attention forward / backward,
LayerNorm forward / backward, activation forward / backward, residual adds and gradient
sums, casts and copies, bias-gradient reductions, softmax and loss, the optimizer,
everything else), the count of kernels per kind, and the framework's ops by input shape.
Written after held-out run 11 (timm ViT-S/8 over-predicted by 15-30 % at micro-batch
32-256 on 2x H100 and 2x H200 where the model charged 60 % of its GPU time to
memory-bound elementwise work). Writes $OUT/transformer_kernel_profile.json and prints a
summary per configuration.
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_profile  # noqa: E402 (after the path insert)

KINDS = [  # (kind, pattern over the lower-cased kernel name), first match wins
    ("nccl", r"nccl"),
    ("attn_bwd", r"bprop|flash.*bwd|fmha.*bwd|flash_bwd|attention.*backward|sdpa.*bwd|dot_product.*bwd|bwd.*flash"),
    ("attn_fwd", r"flash|fmha|attention|sdpa|dot_product"),
    ("optimizer", r"multi_tensor_apply|fused_adam|adam"),
    ("layer_norm_bwd", r"layer_norm_grad|gammabeta|layernorm.*backward|layer_norm_backward|cuComputeGradGammaBeta|"
                       r"cucomputepartgradgammabeta|cucomputegradinput"),
    ("layer_norm_fwd", r"layer_norm|layernorm|rms_norm|rmsnorm"),
    ("gemm", r"gemm|nvjet|xmma|cutlass|cublas|sm90_|sm80_|splitk"),
    ("softmax_loss", r"softmax|nll_loss|cross_entropy"),
    ("act_bwd", r"gelu_backward|gelubackward|silu_backward|silubackward|tanh_backward|threshold"),
    ("act_fwd", r"gelu|silu|tanh|relu"),
    ("dropout", r"dropout|fused_dropout|philox|bernoulli"),
    ("reduce", r"reduce_kernel|reduce"),
    ("add", r"add|sum"),
    ("mul", r"mul|div"),
    ("cast_copy", r"copy|cast|memcpy|memset|fill|cat|index"),
]


def kind_of(name):
    return kernel_profile.kind_of(KINDS, name)


def one(torch, suite, name, mb, device):
    model = suite.build(name, device)
    opt = suite.optimizer_for(name, model.parameters())
    x, y = suite.batch_for(name, mb, device)

    def step():
        loss = suite.loss_of(name, model, x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    times, host = kernel_profile.timed_steps(torch, step)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    kinds, kernels = kernel_profile.kernels_by_kind(torch, prof, KINDS, 200)
    # The framework's ops by input shape, with the GPU time of the kernels under them:
    # which LayerNorm, cast, add or attention call takes the time, at which size.
    ops = kernel_profile.ops_by_input_shape(torch, prof, 240)
    busy = sum(v[0] for v in kinds.values())
    entry = {"model": name, "micro_batch": mb, "step_median_s": statistics.median(times),
             "step_min_s": min(times), "host_issue_median_s": statistics.median(host),
             "gpu_busy_s": busy, "kernels_per_step": sum(v[1] for v in kinds.values()),
             "kinds": {k: {"s": v[0], "kernels": v[1]} for k, v in sorted(kinds.items())},
             "params": sum(p.numel() for p in model.parameters()),
             "top_kernels": kernels[:80], "ops": ops[:400]}
    del model, opt, x, y
    torch.cuda.empty_cache()
    return entry


def main():
    import torch
    import library_suite as suite
    out = os.environ.get("OUT", ".")
    configs = os.environ.get(
        "CONFIGS", "timm-vit-s8:32,timm-vit-s8:256,timm-vit-s8:1,timm-deit-s:256,timm-vit-b8:64,"
                   "hf-pythia-1b:16,hf-olmo-1b:16,hf-gpt2:16,hf-bert-base:16,timm-vit-l32:256").split(",")
    deadline = time.time() + float(os.environ.get("DEADLINE_S", "200"))
    device = torch.device("cuda")
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "entries": []}
    try:
        import timm
        import transformers
        report["timm"], report["transformers"] = timm.__version__, transformers.__version__
    except ImportError:
        pass
    for cfg in configs:
        name, mb = cfg.rsplit(":", 1)
        if time.time() > deadline:
            print(f"deadline: {name} mb{mb} skipped", flush=True)
            continue
        try:
            e = one(torch, suite, name, int(mb), device)
        except Exception as err:  # one model's failure (OOM, no timm) leaves the others
            print(f"{name} mb{mb}: {type(err).__name__}: {err}", flush=True)
            torch.cuda.empty_cache()
            continue
        report["entries"].append(e)
        parts = "  ".join(f"{k} {v['s'] * 1e3:.2f}/{v['kernels']}" for k, v in e["kinds"].items())
        print(f"{name} mb{mb}: step {e['step_median_s'] * 1e3:.1f} ms, host issue {e['host_issue_median_s'] * 1e3:.1f} ms,"
              f" GPU busy {e['gpu_busy_s'] * 1e3:.1f} ms, {e['kernels_per_step']} kernels (ms/count): {parts}",
              flush=True)
        with open(os.path.join(out, "transformer_kernel_profile.json"), "w") as f:
            json.dump(report, f, indent=1)
    return 0 if report["entries"] else 1


if __name__ == "__main__":
    sys.exit(main())
