#!/usr/bin/env python3
"""Fits the depthwise convolution constants of tuner/cnn_conv_model.cc to cnn_arch_check.py's
convolutions measured alone (calibration), and prints what the other convolutions and the
elementwise kernels reached.

  python3 bench/validate/cnn_conv_fit.py CHECK_JSON [--bandwidth GBPS]

Depthwise model, per pass (forward, dgrad, wgrad):
    t = floor + max(bytes / (bandwidth x efficiency), flops / (rate_per_sm x SMs))
bytes = input + output activations (bf16), flops = 2 x output elements x window; bandwidth
= the probe's streaming bandwidth on that card (the median of its elementwise kernels; 4,197
GB/s on the H200 of calibration run 15). The floor is fitted with the efficiency and rate by a
grid search minimising the squared log error. Grouped and dense convolutions: achieved
TFLOP/s and GB/s per shape (the tuner's GEMM model is checked against them in
tests/tuner/cnn_arch_calibration_test.cc). Elementwise: GB/s of each kernel alone.
"""
import argparse
import json
import math


def dw_bytes(e):
    o = e["out_side"] ** 2
    return (e["side"] ** 2 + o) * e["c"] * e["n"] * 2


def dw_flops(e):
    return 2.0 * e["out_side"] ** 2 * e["c"] * e["k"] ** 2 * e["n"]


def predict(e, bw, eff, rate, floor, sms):
    return floor + max(dw_bytes(e) / (bw * eff), dw_flops(e) / (rate * sms))


def fit(rows, key, bw, sms):
    best = None
    for floor in [x * 1e-6 for x in (2, 3, 4, 5, 6, 8, 10)]:
        for eff in [x / 100 for x in range(5, 101, 1)]:
            for rate in [x * 1e10 for x in range(2, 101, 1)]:
                err = sum(math.log(predict(e, bw, eff, rate, floor, sms) / e[key]) ** 2 for e in rows)
                if best is None or err < best[0]:
                    best = (err, eff, rate, floor)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check")
    ap.add_argument("--bandwidth", type=float, default=4197.0, help="GB/s")
    args = ap.parse_args()
    d = json.load(open(args.check))
    sms = d.get("sm_count", 132)
    bw = args.bandwidth * 1e9
    dw = [e for e in d["convs"] if e["groups"] == e["c"]]
    print(f"{d['device']}, {sms} SMs, torch {d.get('torch')}, cuDNN {d.get('cudnn')}; bandwidth {args.bandwidth:.0f} GB/s")
    print(f"depthwise: {len(dw)} shapes")
    for key in ("fwd_s", "dgrad_s", "wgrad_s"):
        err, eff, rate, floor = fit(dw, key, bw, sms)
        rms = math.sqrt(err / len(dw))
        print(f"  {key[:-2]:6s} efficiency {eff:.2f}  rate {rate / 1e12:.3f} TFLOP/s/SM  floor {floor * 1e6:.0f} us"
              f"  rms log error {rms:.3f}")
        for e in dw:
            p = predict(e, bw, eff, rate, floor, sms)
            print(f"    n{e['n']:4d} c{e['c']:5d} {e['side']:3d}px k{e['k']} s{e['stride']}: "
                  f"{e[key] * 1e6:8.1f} us  model {p * 1e6:8.1f} ({100 * (p / e[key] - 1):+5.1f} %)  "
                  f"{dw_bytes(e) / e[key] / 1e9:6.0f} GB/s  {dw_flops(e) / e[key] / 1e12:5.2f} TFLOP/s")
    print("grouped / dense:")
    for e in d["convs"]:
        if e["groups"] == e["c"]:
            continue
        flops = 2.0 * e["out_side"] ** 2 * e["c"] * (e["c"] // e["groups"]) * e["k"] ** 2 * e["n"]
        parts = "  ".join(f"{k[:-2]} {e[k] * 1e6:7.1f} us {flops / e[k] / 1e12:6.1f} TF/s {dw_bytes(e) / e[k] / 1e9:5.0f} GB/s"
                          for k in ("fwd_s", "dgrad_s", "wgrad_s"))
        print(f"  n{e['n']:4d} c{e['c']:5d} {e['side']:3d}px k{e['k']} s{e['stride']} g{e['groups']:4d} "
              f"(width {e['c'] // e['groups']}): {parts}")
    print("elementwise alone (GB/s of the tensor's bytes x passes named):")
    for e in d.get("elementwise", []):
        b = e["bytes"]
        print(f"  n{e['n']} c{e['c']} {e['side']}px ({b / 1e6:.0f} MB): " + "  ".join(
            f"{k[:-2]} {e[k] * 1e6:.0f} us" for k in sorted(e) if k.endswith("_s")))


if __name__ == "__main__":
    main()
