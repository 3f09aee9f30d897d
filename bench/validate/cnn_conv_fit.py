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


def dw_flops(e, key="fwd_s"):
    """Multiply-adds x 2 of the pass: the forward's and the weight gradient's over the output
    pixels, the input gradient's over the input pixels (a convolution of the output's gradient
    producing every input pixel from the window's taps, whatever the stride)."""
    side = e["side"] if key == "dgrad_s" else e["out_side"]
    return 2.0 * side ** 2 * e["c"] * e["k"] ** 2 * e["n"]


def predict(e, bw, eff, rate, floor, sms, key="fwd_s"):
    return floor + max(dw_bytes(e) / (bw * eff), dw_flops(e, key) / (rate * sms))


def fit(rows, key, bw, sms):
    """Grid search minimising the summed |log error| (robust to one odd kernel choice)."""
    best = None
    for floor in [x * 1e-6 for x in (2, 4, 6, 8, 10, 12, 15, 20, 25)]:
        for eff in [x / 100 for x in range(5, 101, 1)]:
            for rate in [x * 2e9 for x in range(5, 101, 1)]:
                err = sum(abs(math.log(predict(e, bw, eff, rate, floor, sms, key) / e[key])) for e in rows)
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
        errs = sorted(abs(predict(e, bw, eff, rate, floor, sms, key) / e[key] - 1) for e in dw)
        print(f"  {key[:-2]:6s} efficiency {eff:.2f}  rate {rate / 1e12:.3f} TFLOP/s/SM  floor {floor * 1e6:.0f} us"
              f"  mean |log error| {err / len(dw):.3f}, median |error| {100 * errs[len(errs) // 2]:.0f} %")
        for e in dw:
            p = predict(e, bw, eff, rate, floor, sms, key)
            print(f"    n{e['n']:4d} c{e['c']:5d} {e['side']:3d}px k{e['k']} s{e['stride']}: "
                  f"{e[key] * 1e6:8.1f} us  model {p * 1e6:8.1f} ({100 * (p / e[key] - 1):+5.1f} %)  "
                  f"{dw_bytes(e) / e[key] / 1e9:6.0f} GB/s  {dw_flops(e, key) / e[key] / 1e12:5.2f} TFLOP/s")
    # Grouped: cuDNN's grouped implicit-GEMM kernels take group widths that are powers of two
    # (4-32 here: bound by bytes at a fraction of the bandwidth); other widths (RegNet's 24) run a
    # kernel between layout transforms (tensorTransformGeneric in the networks' profiles), at a
    # FLOP rate. Widths 2 and 128 are printed, not fitted (2: no network here; 128: the dense
    # kernel's rate, which the tuner takes from its GEMM model).
    def width(e):
        return e["c"] // e["groups"]
    aligned = [e for e in d["convs"] if 1 < e["groups"] < e["c"] and 4 <= width(e) <= 32
               and width(e) & (width(e) - 1) == 0]
    unaligned = [e for e in d["convs"] if 1 < e["groups"] < e["c"] and width(e) & (width(e) - 1)]
    floor = 15e-6
    print(f"grouped, group width a power of two 4-32: {len(aligned)} shapes; floor {floor * 1e6:.0f} us")
    for key in ("fwd_s", "dgrad_s", "wgrad_s"):
        best = min((sum(abs(math.log((floor + dw_bytes(e) / (bw * eff)) / e[key])) for e in aligned), eff)
                   for eff in [x / 200 for x in range(4, 201)])
        print(f"  {key[:-2]:6s} efficiency {best[1]:.3f} ({best[1] * args.bandwidth:.0f} GB/s)  "
              f"mean |log error| {best[0] / len(aligned):.3f}")
    print(f"grouped, other group widths: {len(unaligned)} shapes; floor {floor * 1e6:.0f} us")
    for key in ("fwd_s", "dgrad_s", "wgrad_s"):
        def gflops(e):
            return 2.0 * e["out_side"] ** 2 * e["c"] * width(e) * e["k"] ** 2 * e["n"]
        best = min((sum(abs(math.log((floor + gflops(e) / (r * sms)) / e[key])) for e in unaligned), r)
                   for r in [x * 1e9 for x in range(20, 400, 2)])
        print(f"  {key[:-2]:6s} rate {best[1] / 1e12:.3f} TFLOP/s/SM ({best[1] * sms / 1e12:.1f} TFLOP/s)  "
              f"mean |log error| {best[0] / len(unaligned):.3f}")
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
