#!/usr/bin/env python3
"""What a library model's training step keeps on the GPU, tensor by tensor (h24m, session 24; issue 19 item 6).

  python3 bench/validate/memory_census.py --out census.json \
      [--models hf-pythia-70m,hf-tiny-starcoder-py,...] [--micro-batches 1,4]

The memory model counts, per token and block, the tensors autograd saves for backward, and per
logit the loss's tensors. Run 16's small language models were over-predicted (Pythia-70M +11..+28 %
growing with the micro-batch) and some Llama-class / ViT rows under-predicted; this measures what
the step really keeps, on the very models library_suite.py trains (its build(), batch_for(),
loss_of() and optimizer; bf16 autocast, SDPA, the library's default dropout), so each term of the
model can be checked against a measurement, not fitted:

* saved tensors: every tensor autograd saves in the forward pass (torch.autograd.graph.
  saved_tensors_hooks, identity pack), counted once per storage, parameters left out, grouped by
  the innermost module that ran when it was saved (block indices folded: "layers.*.mlp"), by
  dtype; tensors of a parameter's shape in 16 bits are autocast's weight copies;
* the step's memory at its phases (torch.cuda.memory_allocated / max_memory_allocated, relative
  to the allocation before the forward pass, i.e. weights and optimizer state): held after the
  forward pass, the forward peak, the backward peak, and the backward peak split at the gradient
  of the head's input and of every block's output (tensor hooks), so the loss and head's part of
  the peak is read apart from the blocks';
* two micro-batches per model, so per-sample figures are differences (constants cancel).

Writes one JSON object (meta, runs); prints a summary per configuration. One GPU; about two
minutes for the default models on an H200.
"""
import argparse
import datetime
import json
import os
import re
import sys
import time
from collections import defaultdict

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_suite as ls  # noqa: E402  (its build / batch / loss / optimizer, unchanged)

DEFAULT_MODELS = ("hf-pythia-70m,hf-tiny-starcoder-py,hf-gpt2,hf-cerebras-gpt-111m,hf-opt-125m,hf-smollm2-360m,"
                  "hf-sheared-llama-1.3b,hf-pythia-410m,hf-distilbert-base,timm-deit3-m16,tv-vgg16")


def fold(name):
    """A module path with block indices folded ("gpt_neox.layers.3.mlp" -> "gpt_neox.layers.*.mlp")."""
    return re.sub(r"\.\d+(?=\.|$)", ".*", name) or "<top>"


class Census:
    """Saved tensors of one forward pass, by module, dtype and shape."""

    def __init__(self, model):
        self.stack = ["<top>"]
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.param_shapes = {tuple(p.shape) for p in model.parameters()}
        self.seen = set()
        self.rows = defaultdict(lambda: [0, 0])  # (module, kind, dtype, shape) -> [bytes, count]
        self.handles = []
        for name, mod in model.named_modules():
            self.handles.append(mod.register_forward_pre_hook(self._enter(fold(name))))
            self.handles.append(mod.register_forward_hook(self._leave))

    def _enter(self, name):
        def hook(_mod, _args):
            self.stack.append(name)
        return hook

    def _leave(self, _mod, _args, _out):
        if len(self.stack) > 1:
            self.stack.pop()

    def pack(self, t):
        if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
            return t
        try:
            st = t.untyped_storage()
            ptr, nbytes = st.data_ptr(), st.nbytes()
        except (RuntimeError, NotImplementedError):
            return t
        if ptr in self.params or ptr in self.seen or nbytes == 0:
            return t
        self.seen.add(ptr)
        kind = "weight_copy" if (t.dtype in (torch.bfloat16, torch.float16) and
                                 tuple(t.shape) in self.param_shapes and t.dim() >= 2) else "activation"
        row = self.rows[(self.stack[-1], kind, str(t.dtype).replace("torch.", ""), tuple(t.shape))]
        row[0] += nbytes
        row[1] += 1
        return t

    def close(self):
        for h in self.handles:
            h.remove()

    def table(self):
        return [dict(module=m, kind=k, dtype=d, shape=list(s), bytes=b, count=c)
                for (m, k, d, s), (b, c) in sorted(self.rows.items(), key=lambda kv: -kv[1][0])]


def head_module(model):
    for attr in ("lm_head", "embed_out", "vocab_projector", "head", "fc", "classifier"):
        m = getattr(model, attr, None)
        if isinstance(m, torch.nn.Module):
            return m
    if hasattr(model, "cls"):  # BERT's MLM head
        return model.cls
    return None


class BackwardMarks:
    """Memory at the gradient of the head's input and of each block's output in backward: the
    peak since the previous mark (reset after each), and what is held at the mark."""

    def __init__(self, model, device):
        self.device = device
        self.marks = []
        self.handles = []
        self.armed = False
        head = head_module(model)
        if head is not None:
            self.handles.append(head.register_forward_hook(self._on_input("head input")))
        for i, blk in enumerate(ls.blocks(model)):
            self.handles.append(blk.register_forward_hook(self._on_output(f"block {i} output")))

    def _mark(self, label):
        def hook(grad):
            if self.armed:
                self.marks.append(dict(at=label, peak=torch.cuda.max_memory_allocated(self.device),
                                       held=torch.cuda.memory_allocated(self.device)))
                torch.cuda.reset_peak_memory_stats(self.device)
            return None
        return hook

    def _first_tensor(self, x):
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
            return x[0]
        if hasattr(x, "last_hidden_state"):
            return x.last_hidden_state
        return None

    def _on_input(self, label):
        def hook(_mod, args, _out):
            t = self._first_tensor(args)
            if t is not None and t.requires_grad:
                t.register_hook(self._mark(label))
        return hook

    def _on_output(self, label):
        def hook(_mod, _args, out):
            t = self._first_tensor(out)
            if t is not None and t.requires_grad:
                t.register_hook(self._mark(label))
        return hook

    def close(self):
        for h in self.handles:
            h.remove()


def one(name, model, opt, mb, device):
    x, y = ls.batch_for(name, mb, device)

    def step():
        ls.loss_of(name, model, x, y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):  # optimizer state exists, autocast and allocator warm
        step()
    torch.cuda.synchronize(device)
    base = torch.cuda.memory_allocated(device)
    census = Census(model)
    marks = BackwardMarks(model, device)
    torch.cuda.reset_peak_memory_stats(device)
    with torch.autograd.graph.saved_tensors_hooks(census.pack, lambda t: t):
        loss = ls.loss_of(name, model, x, y)
    torch.cuda.synchronize(device)
    held_fwd = torch.cuda.memory_allocated(device)
    peak_fwd = torch.cuda.max_memory_allocated(device)
    census.close()
    torch.cuda.reset_peak_memory_stats(device)
    marks.armed = True
    loss.backward()
    torch.cuda.synchronize(device)
    marks.armed = False
    marks.close()
    tail_peak = torch.cuda.max_memory_allocated(device)
    held_bwd = torch.cuda.memory_allocated(device)
    del loss
    torch.cuda.reset_peak_memory_stats(device)
    opt.step()
    torch.cuda.synchronize(device)
    peak_opt = torch.cuda.max_memory_allocated(device)
    opt.zero_grad(set_to_none=True)
    rel = lambda v: int(v - base)  # noqa: E731
    peak_bwd = max([tail_peak] + [m["peak"] for m in marks.marks])
    saved = census.table()
    return dict(model=name, micro_batch=mb, base_bytes=int(base), held_after_forward=rel(held_fwd),
                peak_forward=rel(peak_fwd), peak_backward=rel(peak_bwd),
                held_after_backward=rel(held_bwd), peak_optimizer=rel(peak_opt),
                saved_bytes=sum(r["bytes"] for r in saved),
                saved_activation_bytes=sum(r["bytes"] for r in saved if r["kind"] == "activation"),
                backward_marks=[dict(at=m["at"], peak=rel(m["peak"]), held=rel(m["held"]))
                                for m in marks.marks] + [dict(at="end", peak=rel(tail_peak), held=rel(held_bwd))],
                saved=saved)


def summary(r):
    g = 2 ** 20
    print(f"{r['model']} mb{r['micro_batch']}: base {r['base_bytes'] / g:.0f} MiB; over it: held after fwd "
          f"{r['held_after_forward'] / g:.1f}, fwd peak {r['peak_forward'] / g:.1f}, bwd peak "
          f"{r['peak_backward'] / g:.1f}, opt peak {r['peak_optimizer'] / g:.1f}; saved {r['saved_bytes'] / g:.1f} "
          f"(activations {r['saved_activation_bytes'] / g:.1f}) MiB", flush=True)
    by = defaultdict(int)
    for s in r["saved"]:
        by[(s["module"], s["kind"], s["dtype"])] += s["bytes"]
    for (m, k, d), b in sorted(by.items(), key=lambda kv: -kv[1])[:14]:
        print(f"    {b / g:9.2f} MiB  {m} {k} {d}")
    first = [m for m in r["backward_marks"]][:3]
    print("    backward: " + ", ".join(f"{m['at']}: peak {m['peak'] / g:.1f} held {m['held'] / g:.1f}" for m in first))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--micro-batches", default="1,4")
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline-s", type=float, default=170, help="start no model after this many seconds")
    args = ap.parse_args()
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    import transformers
    meta = dict(schema="xdeep.memory_census/1", date=datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%dT%H:%M:%SZ"), gpu=torch.cuda.get_device_name(device), torch=torch.__version__,
                transformers=transformers.__version__, command=" ".join(["memory_census.py"] + [os.path.basename(a) if a == args.out else a
                                                              for a in sys.argv[1:]]))
    runs = []
    t0 = time.time()

    def save():
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, runs=runs), f, indent=1)

    for name in args.models.split(","):
        if time.time() - t0 > args.deadline_s:
            runs.append(dict(model=name, skipped="deadline"))
            continue
        try:
            torch.manual_seed(0)
            model = ls.build(name, device)
            model.train()
            opt = ls.Optimizers(name, model.parameters())
            for mb in (int(m) for m in args.micro_batches.split(",")):
                r = one(name, model, opt, mb, device)
                runs.append(r)
                summary(r)
                save()
        except Exception as e:  # noqa: BLE001  (one model's failure must not lose the others)
            runs.append(dict(model=name, error=f"{type(e).__name__}: {e}"[:300]))
            print(f"{name}: {runs[-1]['error']}", flush=True)
        model = opt = None
        torch.cuda.empty_cache()
        save()
    save()


if __name__ == "__main__":
    main()
