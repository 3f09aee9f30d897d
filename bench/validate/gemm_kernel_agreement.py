#!/usr/bin/env python3
"""Does cuBLASLt's heuristic name the kernel torch.matmul ran? (issue 19 item 1)

  gemm_kernel_agreement.py CHECK.json ALGOS.json [--worst N]

CHECK is a `gemm_shapes.py time --kernels-s S` result (each shape's `torch_kernel`:
the names torch's profiler saw, e.g. nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT
plus cublasLt::splitKreduce_kernel where k was split); ALGOS an `xdeep-probe compute
--suite gemm-heuristic` report at the same shapes (`gemm_algos`, tile in cuBLAS's
rows x cols = our n x m). Prints how often the tile and the split agree, per
precision, and the N shapes where they do not.
"""
import argparse
import collections
import json
import re


def torch_tile(names):
    """(rows, cols, split) of the GEMM kernel in a ';'-joined list of kernel names."""
    m = (re.search(r"tilesize(\d+)x(\d+)", names) or re.search(r"_(\d+)x(\d+)_\d+x\d+", names)
         or re.search(r"_(\d+)x(\d+)_[nt][nt]_align", names))
    split = "splitK" in names  # a split-k kernel or cuBLAS's separate reduction kernel
    return (int(m.group(1)), int(m.group(2)), split) if m else (None, None, split)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("check")
    p.add_argument("algos")
    p.add_argument("--worst", type=int, default=20)
    args = p.parse_args()
    algos = {}
    for g in json.load(open(args.algos)).get("gemm_algos", []):
        algos[(g["m"], g["n"], g["k"], g["dtype"], g["pass"])] = g["kernel"]
    # shapes, tile named, same tile, same tile in either orientation, same split or not
    tally = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    differ = []
    for e in json.load(open(args.check))["gemm"]:
        key = (e["m"], e["n"], e["k"], e["dtype"], e["pass"])
        if "torch_kernel" not in e or key not in algos:
            continue
        rows, cols, split = torch_tile(e["torch_kernel"])
        k = algos[key]
        for t in (e["dtype"], "all"):
            tally[t][0] += 1
            tally[t][1] += rows is not None
            tally[t][2] += (rows, cols) == (k["tile_n"], k["tile_m"])
            tally[t][3] += {rows, cols} == {k["tile_n"], k["tile_m"]}
            tally[t][4] += split == (k["split_k"] > 1)
        if (rows, cols) != (k["tile_n"], k["tile_m"]) or split != (k["split_k"] > 1):
            differ.append(f"{e['dtype']} {e['pass']:<5} m={e['m']} n={e['n']} k={e['k']}: torch "
                          f"{rows}x{cols}{' split' if split else ''}, heuristic "
                          f"{k['tile_n']}x{k['tile_m']} split {k['split_k']} algo {k['algo']}"
                          f"  [{e['torch_kernel'][:90]}]")
    for t, (n, named, tile, either, split) in sorted(tally.items()):
        print(f"{t:<5} {n:4d} shapes with both: tile named in torch's kernel {named}, same tile "
              f"{tile} ({100 * tile / max(n, 1):.0f} %; either orientation {either}), torch's "
              f"kernel list shows a split-k reduction exactly where the heuristic splits: {split} "
              f"({100 * split / max(n, 1):.0f} %)")
    for line in differ[:args.worst]:
        print("  " + line)


if __name__ == "__main__":
    main()
