#!/usr/bin/env python3
"""library_suite.py's TP / PP protocol without a GPU (h26t, session 26): a stand-in torch module
(no kernels, no collectives) and a stand-in model whose step logs its micro-batch, so that the order
of the steps and the records run_model writes can be checked.

* tp and pp (--rounds 3, the default): every micro-batch's warm-up first, in the order given, then
  the micro-batches take turns, each turn at least --steps steps; each record has its rounds, its
  warm-up times and the median of all its turns; its peak is its warm-up steps' after the first (a
  larger micro-batch's leftovers not yet resident), the turns' peak kept apart;
* out of memory in a warm-up ends the sweep there, the smaller micro-batches still measured;
* --rounds 0, and ddp / fsdp / single: one micro-batch after the other, as runs 1-18 measured them;
* a model past its time budget writes "time budget" records; the records are saved after every round.

  python3 bench/validate/library_suite_rounds_test.py
"""
import os
import sys
import tempfile
import types

FAKE_TORCH = '''
import types
class OutOfMemoryError(RuntimeError):
    pass
class _T:
    def __init__(self, v):
        self.v = v[0] if isinstance(v, list) else v
    def item(self):
        return self.v
def tensor(v, device=None):
    return _T(v)
def device(*a, **k):
    return types.SimpleNamespace(type="cuda")
def manual_seed(s):
    pass
class _Cuda:
    peak = 0
    def synchronize(self, d=None):
        pass
    def memory_allocated(self, d=None):
        return 100
    def reset_peak_memory_stats(self, d=None):
        self.peak = 0
    def max_memory_allocated(self, d=None):
        return self.peak
    def empty_cache(self):
        pass
cuda = _Cuda()
nn = types.SimpleNamespace(Module=object)
bfloat16 = "bf16"
from . import distributed
'''
FAKE_DIST = '''
class ReduceOp:
    MAX = "max"
    MIN = "min"
def all_reduce(t, op=None):
    pass
'''

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def main():
    tmp = tempfile.mkdtemp()
    os.makedirs(os.path.join(tmp, "torch", "distributed"))
    open(os.path.join(tmp, "torch", "__init__.py"), "w").write(FAKE_TORCH)
    open(os.path.join(tmp, "torch", "distributed", "__init__.py"), "w").write(FAKE_DIST)
    sys.path.insert(0, tmp)
    sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import library_suite as suite

    calls = []
    oom_at = [16]
    kept = {}  # what a micro-batch's step leaves allocated after it (a PP schedule's last outputs)

    def step(mb):
        calls.append(mb)
        if mb >= oom_at[0]:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate")
        torch.cuda.peak = max(torch.cuda.peak, mb * 1000 + sum(kept.values()))
        kept[mb] = mb * 100

    class Loss:
        def __init__(self, mb):
            self.mb = mb

        def backward(self):
            step(self.mb)

    class Opt:
        def __init__(self, *a):
            pass

        def step(self):
            pass

        def zero_grad(self, set_to_none=True):
            pass

    suite.build = lambda name, device: "model"
    suite.wrap = lambda name, model, mode, rank, world: types.SimpleNamespace(train=lambda: None,
                                                                               parameters=lambda: [])
    suite.Optimizers = Opt
    suite.batch_for = lambda name, mb, device: (mb, mb)
    suite.loss_of = lambda name, model, x, y: Loss(x)

    saves = []  # the timed steps of each record at each save()

    def run(mode, mbs, rounds=None, model_seconds=100.0):
        args = types.SimpleNamespace(mode=mode, micro_batches=mbs, model_seconds=model_seconds, deadline_s=0,
                                     reserve_s=0, warmup=2, steps=3, min_seconds=0.0)
        if rounds is not None:
            args.rounds = rounds
        calls.clear()
        saves.clear()
        recs = []
        suite.run_model("hf-llama2c-15m", args, 0, 1, None, recs,
                        lambda: saves.append([len(r.get("step_times_s", [])) for r in recs]))
        return recs, list(calls)

    recs, order = run("tp", [1, 8, 16, 32])
    want = [1, 1, 8, 8, 16] + ([1] * 3 + [8] * 3) * 3
    check(order == want, f"tp: warm-ups in order, out of memory at 16, then 3 rounds of turns ({order})")
    by = {r["micro_batch"]: r for r in recs}
    check(sorted(by) == [1, 8, 16], "tp: records for 1, 8 and the out-of-memory 16; none for 32")
    check(by[16].get("oom") is True and "error" in by[16], "tp: 16 recorded out of memory")
    check(all(by[mb].get("rounds") == 3 and len(by[mb]["step_times_s"]) == 9 for mb in (1, 8)),
          "tp: 9 timed steps in 3 rounds each")
    check(all(len(by[mb]["warmup_times_s"]) == 2 for mb in (1, 8)), "tp: warm-up times kept")
    check(by[1]["peak_allocated_bytes"] == 1100 and by[8]["peak_allocated_bytes"] == 8900,
          "tp: each micro-batch's peak from its warm-up steps after the first, the larger ones not yet resident "
          f"({by[1]['peak_allocated_bytes']}, {by[8]['peak_allocated_bytes']})")
    check(by[1]["peak_turns_bytes"] == 1900 and by[8]["peak_turns_bytes"] == 8900,
          "tp: the turns' peaks kept apart (micro-batch 1's with 8's leftovers)")
    check(all(by[mb]["tp"] == 1 and by[mb]["grad_accum"] == 1 for mb in (1, 8)), "tp: record fields as before")
    check(saves[:3] == [[3, 3, 0], [6, 6, 0], [9, 9, 0]] and len(recs) == 3,
          f"tp: the records saved after every round, each round's in place of the last ({saves})")

    oom_at[0] = 10 ** 9
    kept.clear()
    recs, order = run("tp", [1, 8], rounds=0)
    check(order == [1, 1, 1, 1, 1, 8, 8, 8, 8, 8], f"tp --rounds 0: one after the other ({order})")
    check(all("rounds" not in r for r in recs), "tp --rounds 0: runs 1-18's records")

    recs, order = run("ddp", [1, 8])
    check(order == [1, 1, 1, 1, 1, 8, 8, 8, 8, 8], f"ddp: one after the other ({order})")

    recs, order = run("tp", [1, 8], model_seconds=-1)
    check(order == [] and [r.get("skipped") for r in recs] == ["time budget"] * 2,
          "tp past its time budget: no step, 'time budget' records")

    calls.clear()
    got = suite.measure_rounds("x", [1, 8], step, None, 2, 1, 0.0, 1, 3, lambda: len(calls) >= 6)
    check(got[1]["rounds"] == 1 and got[8]["rounds"] == 1,
          "measure_rounds: late() stops after a whole round, never inside one")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
