#!/usr/bin/env python3
"""MT-NLG's micro-batch, from the paper's own three step times.

Smith et al. 2022 (sec. 2.4) ran one layout, tp 8 x pp 35, global batch 1920,
on 280, 350 and 420 DGX A100 nodes (dp 8, 10, 12) and measured 60.1, 50.2 and
44.4 s per step; the paper does not give the micro-batch. Under DeepSpeed's
TrainSchedule (1F1B order, bench/scale/deepspeed_schedule.py) a step is
(m + p - 1) micro-batch times plus what runs once per step (the reduction
after the flush, the tied pair's all-reduce, the optimizer: 0.3-0.4 s in the
strategy model), with m = 1920 / (dp x micro-batch). The stage's work per
micro-batch does not depend on dp, so the right micro-batch is the one under
which the three steps give the same time per micro-batch; any other needs a
cost per step that changes with dp in the way the residue below shows.

Prints, per micro-batch, the time per micro-batch each step implies (less
the once-per-step part), its spread over the three runs, and the fixed cost
per step a least-squares fit of step = a (m + p - 1) + b needs.

    python3 bench/scale/mtnlg_micro_batch.py [--per-step 0.35]
"""
import argparse

STEPS = [(8, 60.1), (10, 50.2), (12, 44.4)]  # (dp, seconds), Smith et al. 2022 sec. 2.4
P, BATCH = 35, 1920


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-step", type=float, default=0.35,
                    help="seconds per step outside the pipeline (reduction, optimizer)")
    a = ap.parse_args()
    print(f"{'mb':>3} {'ms per micro-batch at dp 8 / 10 / 12':>40} {'spread':>7} "
          f"{'ms per sample':>14} {'fit: fixed s/step':>18}")
    for mb in (1, 2, 4, 8):
        xs, ys, per = [], [], []
        for dp, step in STEPS:
            m = BATCH // (dp * mb)
            if m * dp * mb != BATCH:
                break
            xs.append(m + P - 1)
            ys.append(step)
            per.append((step - a.per_step) / (m + P - 1) * 1e3)
        if len(per) < len(STEPS):
            continue
        n = len(xs)
        mx, my = sum(xs) / n, sum(ys) / n
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        fixed = my - slope * mx
        spread = (max(per) - min(per)) / min(per)
        print(f"{mb:>3} {' / '.join(f'{t:6.1f}' for t in per):>40} {100 * spread:>6.1f}% "
              f"{sum(per) / n / mb:>14.1f} {fixed:>18.2f}")


if __name__ == "__main__":
    main()
