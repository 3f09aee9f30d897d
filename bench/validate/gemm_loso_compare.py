#!/usr/bin/env python3
"""Two or more leave-one-seed-out runs of the GEMM model side by side (issue 19, item 1).

  gemm_loso.py BUILD --fits others --worst 100000 > a.txt   (one model)
  gemm_loso.py BUILD --fits others --worst 100000 > b.txt   (another)
  gemm_loso_compare.py a.txt b.txt [...]                     pooled figures of each
  gemm_loso_compare.py --moved a.txt b.txt [blind|kernels] [PCT]

The first form prints, for each file, the pooled median / p95 of |predicted / measured - 1|
blind (the best tile) and knowing the heuristic's kernels, over both cards and per card --
the figures gemm_model_calibration.md quotes, quantiles as gemm_loso_classes.py's. The
second lists the shapes that moved by 2 points or more where either run is off by PCT %
(default 15) or more, with the kernel cuBLASLt's heuristic named for them: what a model
change gained and what it lost.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_loso_classes as classes  # noqa: E402


def pooled(path):
    errors = classes.load(path)
    cells = []
    for mode in ("blind", "kernels"):
        for card in ("all", "h100", "h200"):
            v = [abs(x) for k, x in errors.items() if k[3] == mode and card in ("all", k[0])]
            if v:
                cells.append(f"{mode} {card} {classes.quantile(v, 0.5):.1f} / "
                             f"{classes.quantile(v, 0.95):.1f} ({len(v)})")
    print(f"{os.path.basename(path)}: " + " | ".join(cells))


def moved(a_path, b_path, mode, threshold):
    a, b = classes.load(a_path), classes.load(b_path)
    table = classes.kernels()
    rows = []
    for key, x in a.items():
        if key not in b or key[3] != mode:
            continue
        y = b[key]
        if max(abs(x), abs(y)) >= threshold and abs(abs(y) - abs(x)) >= 2:
            rows.append((abs(y) - abs(x), x, y, key))
    for d, x, y, key in sorted(rows):
        card, seed, _, _, dt, ps, m, n, k = key
        kern = table.get((card, seed) + key[4:]) or {}
        eb = 4 if dt == "tf32" else 2
        mb = eb * (m * k + k * n + m * n) / 1e6
        what = (f"algo{kern['algo']} {kern['tile_m']}x{kern['tile_n']} split {kern['split_k']}"
                if kern else "")
        print(f"{d:+6.1f}: {x:+6.1f} -> {y:+6.1f} %  {card} {seed} {dt} {ps:5} m={m} n={n} k={k} "
              f"{mb:.0f} MB {what}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--moved":
        mode = sys.argv[4] if len(sys.argv) > 4 else "kernels"
        threshold = float(sys.argv[5]) if len(sys.argv) > 5 else 15.0
        return moved(sys.argv[2], sys.argv[3], mode, threshold)
    for path in sys.argv[1:]:
        pooled(path)


if __name__ == "__main__":
    main()
