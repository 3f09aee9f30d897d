#!/usr/bin/env python3
"""Fits the depthwise convolution constants of tuner/cnn_conv_model.cc to cnn_arch_check.py's
convolutions measured alone (calibration), and prints what the other convolutions and the
elementwise kernels reached.

  python3 bench/validate/cnn_conv_fit.py CHECK_JSON [--bandwidth GBPS]
  python3 bench/validate/cnn_conv_fit.py --grouped [SWEEP_JSON] [--networks CHECK_JSON ...]

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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnn_grouped_sweep import kernel_path  # noqa: E402  (the sweep records the kernels it classifies)


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


# ------------------------------------------------------------------ grouped, widths not 2^k
# cuDNN runs a grouped convolution whose group width is not a power of two one of two ways
# (tuner/cnn_conv_model.cc): "sliced" (each group's channels copied out, nhwcSliceCKernel, and
# convolved by a dense kernel of one group's width) or "transformed" (tensorTransformGeneric to
# NCHW and back around a grouped kernel). Per path and pass:
#     t = floor + groups x floor_per_group + bytes / (bandwidth x efficiency) + flops / rate
# bytes = input + output activations, flops = 2 x multiply-adds, the input gradient's over the
# input's pixels. Fitted to cnn_grouped_sweep.py's convolutions alone (each pass's path read from
# the kernels it ran) when given, else to the grouped convolution ops of cnn_arch_check.py's
# profiled steps (forward; backward = dgrad + wgrad, fitted jointly, path by the model's rule).
PASSES = ("fwd", "dgrad", "wgrad")


def model_path(width, groups):
    """tuner/cnn_conv_model.cc's SlicedPerGroup."""
    if width % 8:
        return "transformed"
    if groups <= 2:
        return "sliced" if width <= 40 else "transformed"
    return "sliced" if 48 < width < 64 else "transformed"


def g_terms(n, c, width, side, out_side, passes):
    """(groups, bytes, flops) of a grouped 3x3 pass (or a sum of passes)."""
    groups = c // width
    inb, outb = n * side * side * c * 2, n * out_side * out_side * c * 2
    f_out = 2.0 * n * out_side ** 2 * c * width * 9
    f_in = 2.0 * n * side ** 2 * c * width * 9
    return [(groups, inb + outb, f_in if p == "dgrad" else f_out) for p in passes]


def g_predict(terms, fits, bw, sms):
    t = 0.0
    for (groups, b, f), (floor, fg, eff, rate) in zip(terms, fits):
        t += floor + groups * fg + b / (bw * eff) + f / (rate * sms)
    return t


GRID_FLOOR = [x * 1e-6 for x in (0, 5, 10, 15, 20, 30, 40)]
GRID_FG = [x * 1e-6 for x in (0, 2, 4, 6, 8, 10, 12, 15, 20)]
GRID_EFF = [x / 100 for x in (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 70, 100)] + [1e9]
GRID_RATE = [x * 1e9 for x in (20, 40, 60, 80, 100, 120, 150, 200, 300, 400, 600, 800, 1200, 1600,
                               2400, 3200)] + [1e18]


def g_fit(rows, bw, sms, joint):
    """rows: (terms, measured). joint: the terms of two passes share one fit each (dgrad,
    wgrad) -- then both passes' (floor, fg, eff, rate) are searched as one set of four with the
    rate apart per pass (backward ops of a network measure dgrad + wgrad together)."""
    best = None
    rates2 = GRID_RATE if joint else [None]
    for floor in GRID_FLOOR:
        for fg in GRID_FG:
            for eff in GRID_EFF:
                for rate in GRID_RATE:
                    for rate2 in rates2:
                        fits = [(floor, fg, eff, rate)] + ([(floor, fg, eff, rate2)] if joint else [])
                        err = 0.0
                        for terms, m in rows:
                            err += abs(math.log(g_predict(terms, fits, bw, sms) / m))
                        if best is None or err < best[0]:
                            best = (err, fits)
    return best


def network_grouped_ops(path):
    """(model, mb, pass 'fwd'|'bwd', n, c, width, side, out_side, seconds per op) of every grouped
    (not depthwise) convolution op of a cnn_arch_check.py JSON's profiled steps."""
    import ast
    d = json.load(open(path))
    out = []
    for e in d["entries"]:
        bwd_out = {}
        parsed = []
        for o in e["ops"]:
            if o["op"] not in ("aten::convolution", "aten::convolution_backward"):
                continue
            d4 = [s for s in ast.literal_eval(o["shapes"]) if isinstance(s, list) and len(s) == 4]
            bwd = o["op"].endswith("backward")
            if len(d4) != (3 if bwd else 2):
                continue
            x, w = (d4[1], d4[2]) if bwd else (d4[0], d4[1])
            if bwd:
                bwd_out[(tuple(x), tuple(w))] = d4[0][2]
            parsed.append((bwd, x, w, o["s"] / o["count"]))
        for bwd, x, w, sec in parsed:
            groups = x[1] // w[1]
            if groups <= 1 or groups == x[1]:
                continue
            out_side = bwd_out.get((tuple(x), tuple(w)), x[2])
            out.append((e["model"], e["micro_batch"], "bwd" if bwd else "fwd", x[0], x[1], w[1],
                        x[2], out_side, sec))
    return out


def grouped_main(args):
    bw = args.bandwidth * 1e9
    sms = 132
    net = []
    for path in args.networks:
        net += [r for r in network_grouped_ops(path) if r[5] & (r[5] - 1)]  # widths not 2^k
    sweep = json.load(open(args.sweep)) if args.sweep else None
    fits = {}
    for path_name in ("sliced", "transformed"):
        print(f"{path_name}:")
        if sweep:
            sms = sweep.get("sm_count", 132)
            for p in PASSES:
                rows = []
                for e in sweep["convs"]:
                    if e["width"] & (e["width"] - 1) == 0 or kernel_path(e[p + "_kernels"]) != path_name:
                        continue
                    rows.append((g_terms(e["n"], e["c"], e["width"], e["side"], e["out_side"], [p]),
                                 e[p + "_s"]))
                if not rows:
                    continue
                err, f = g_fit(rows, bw, sms, False)
                fits[(path_name, p)] = f[0]
                floor, fg, eff, rate = f[0]
                print(f"  {p:5s} floor {floor * 1e6:3.0f} us + {fg * 1e6:3.0f} us a group, efficiency "
                      f"{eff:.3f} ({eff * args.bandwidth:.0f} GB/s), rate {rate / 1e12:.3f} TFLOP/s/SM "
                      f"({rate * sms / 1e12:.0f} TFLOP/s): mean |log error| {err / len(rows):.3f} over {len(rows)}")
        else:
            for part, passes in (("fwd", ["fwd"]), ("bwd", ["dgrad", "wgrad"])):
                rows = [(g_terms(r[3], r[4], r[5], r[6], r[7], passes), r[8]) for r in net
                        if r[2] == part and model_path(r[5], r[4] // r[5]) == path_name]
                if not rows:
                    continue
                err, f = g_fit(rows, bw, sms, part == "bwd")
                for p, fp in zip(passes, f):
                    fits[(path_name, p)] = fp
                    floor, fg, eff, rate = fp
                    print(f"  {p:5s} floor {floor * 1e6:3.0f} us + {fg * 1e6:3.0f} us a group, efficiency "
                          f"{eff:.3f}{' (shared)' if part == 'bwd' else ''}, rate {rate / 1e12:.3f} "
                          f"TFLOP/s/SM ({rate * sms / 1e12:.0f} TFLOP/s)")
                print(f"  {part}: mean |log error| {err / len(rows):.3f} over {len(rows)} network ops")
    print("networks' grouped convolution ops (widths not 2^k) against the fits:")
    errs = {}
    for model, mb, part, n, c, width, side, out_side, sec in net:
        path_name = model_path(width, c // width)
        passes = ["fwd"] if part == "fwd" else ["dgrad", "wgrad"]
        if any((path_name, p) not in fits for p in passes):
            continue
        t = g_predict(g_terms(n, c, width, side, out_side, passes), [fits[(path_name, p)] for p in passes],
                      bw, sms)
        print(f"  {model:15s} mb{mb:<4d} {part} c{c:5d} {side:3d}->{out_side:<3d}px width {width:3d} "
              f"groups {c // width:3d} {path_name:11s}: measured {sec * 1e6:8.1f} us  model {t * 1e6:8.1f} "
              f"({100 * (t / sec - 1):+4.0f} %)")
        errs.setdefault((model, "mb>=64" if mb >= 64 else "mb<64"), []).append(abs(math.log(t / sec)))
    for key, v in sorted(errs.items()):
        print(f"  {key[0]} {key[1]}: mean |log error| {sum(v) / len(v):.3f} over {len(v)} ops")
    if sweep:
        print("sweep: path per pass (cuDNN's kernels) beside the model's rule:")
        for e in sweep["convs"]:
            paths = [kernel_path(e[p + "_kernels"]) for p in PASSES]
            rule = model_path(e["width"], e["groups"]) if e["width"] & (e["width"] - 1) else "grouped"
            print(f"  n{e['n']:4d} c{e['c']:5d} {e['side']:3d}px s{e['stride']} width {e['width']:3d} groups "
                  f"{e['groups']:3d}: " + " ".join(f"{p} {q:11s} {e[p + '_s'] * 1e6:8.1f} us" for p, q in zip(PASSES, paths))
                  + f"  rule {rule}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", nargs="?")
    ap.add_argument("--bandwidth", type=float, default=4197.0, help="GB/s")
    ap.add_argument("--grouped", action="store_true",
                    help="fit the grouped paths of widths that are not powers of two")
    ap.add_argument("--networks", nargs="*", default=[], help="cnn_arch_check.py JSONs")
    args = ap.parse_args()
    if args.grouped:
        args.sweep = args.check
        return grouped_main(args)
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
