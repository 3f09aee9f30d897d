#!/usr/bin/env python3
"""The fp32 gradient accumulation pass's rate, from the H100 pipeline runs.

bench/scale/pipeline_microbatch.py runs every step twice, with autograd's
in-place 16-bit accumulation (.grad += new grad: read 2 + 2, write 2 bytes a
parameter, from the second micro-batch on) and with Megatron's fp32 one
(main_grad.add_(grad) after every backward: read 2 + 4, write 4; then
main_grad.zero_() once a step, 4 bytes). Each stage pays the difference on
every micro-batch, so for a stage of N parameters (the slowest, the last)

    step_fp32 - step_inplace = (m + p - 1) x + c,
    c = (6 + 4) N / BW   (in place skips its first add; fp32 zeroes its buffer),

with x the fp32 pass less the in-place one. With the in-place pass at the
copy bandwidth BW the model charges any same-dtype pass at (h100-sxm: 2,900
GB/s, tuner/hardware_profile.cc), the fp32 pass takes x + 6 N / BW, and its
10 N bytes over that time, as a share of BW, is the rate the model needs
(tuner/pipeline_engine.h, kMixedDtypeAccumulationShare).

Data (calibration; the runs the coordinator made in sessions 18 and 19):
data/2026-11-27_h100x2_pipeline_microbatch.json (2x H100, p 2, 3 blocks),
data/2026-11-28_h100x4_pipeline_microbatch_p4.json (4x H100, p 4, 3 blocks),
data/2026-11-28_h100x2_pipeline_microbatch_p2l6.json (2 of the same host's
GPUs, p 2, 6 blocks).

Standard library only. Usage:
  python3 bench/scale/accumulation_rate.py           # the table and the median
  python3 bench/scale/accumulation_rate.py --check   # ctest: the model's constant is the data's median
"""
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = ["2026-11-27_h100x2_pipeline_microbatch", "2026-11-28_h100x4_pipeline_microbatch_p4",
        "2026-11-28_h100x2_pipeline_microbatch_p2l6"]
BW = 2900e9  # h100-sxm's copy bandwidth in the model (tuner/hardware_profile.cc)
HEADER = os.path.join(HERE, "..", "..", "tuner", "pipeline_engine.h")


def shares():
    rows = []
    for name in RUNS:
        d = json.load(open(os.path.join(HERE, "data", name + ".json")))
        p, n = d["stages"], max(d["params_per_stage"])
        runs = {(r["samples"], r["accumulation"], r["micro_batch"]): r for r in d["runs"]}
        for (samples, acc, mb), r in sorted(runs.items()):
            if acc != "fp32" or (samples, "inplace", mb) not in runs:
                continue
            m = r["micro_batches"]
            dstep = r["mean_step_s"] - runs[(samples, "inplace", mb)]["mean_step_s"]
            x = (dstep - 10 * n / BW) / (m + p - 1)
            fp32_pass = x + 6 * n / BW
            rows.append(dict(run=name, p=p, n=n, samples=samples, mb=mb, m=m, dstep=dstep, x=x,
                             model_x=4 * n / BW, fp32_pass=fp32_pass,
                             share=10 * n / fp32_pass / BW))
    return rows


def model_share():
    text = open(HEADER).read()
    return float(re.search(r"kMixedDtypeAccumulationShare = ([\d.]+);", text).group(1))


def main():
    rows = shares()
    print("run                                        p  params   samples mb   m  fp32-inplace  "
          "x (model's)        fp32 pass  share of 2,900 GB/s")
    for r in rows:
        print(f"{r['run']:42s} {r['p']}  {r['n'] / 1e9:.2f} G  {r['samples']:4d}    {r['mb']}  {r['m']:3d}"
              f"  {1e3 * r['dstep']:7.1f} ms   {1e3 * r['x']:.2f} ({1e3 * r['model_x']:.2f}) ms"
              f"  {1e3 * r['fp32_pass']:6.2f} ms  {r['share']:.3f}")
    s = [r["share"] for r in rows]
    med = statistics.median(s)
    xs = [r["x"] / r["model_x"] for r in rows]
    print(f"share: median {med:.3f}, range {min(s):.3f}-{max(s):.3f} ({len(s)} step pairs); "
          f"the fp32 pass less the in-place one is {min(xs):.2f}-{max(xs):.2f}x (median "
          f"{statistics.median(xs):.2f}x) what the model charged at the full copy bandwidth")
    if "--check" in sys.argv:
        have = model_share()
        print(f"tuner/pipeline_engine.h: kMixedDtypeAccumulationShare = {have}")
        assert abs(have - med) < 0.01, (have, med)
        assert min(s) > 0.7 and max(s) < 0.9, s
        print("ok")


if __name__ == "__main__":
    main()
