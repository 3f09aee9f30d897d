#!/usr/bin/env python3
"""Each round's median step of two kinds of run, side by side, from library_suite.py's files.

  round_pairs.py OUT ROUNDS FIRST SECOND

Reads OUT/FIRST_<round>.json and OUT/SECOND_<round>.json for rounds 1..ROUNDS (the files the
device checks mode_increment_check.sh and lanes_build_check.sh write) and prints, per model and
micro-batch, both medians with their min-max, SECOND - FIRST and SECOND / FIRST. A round whose
file is missing (a call cut short) prints nothing.
"""
import json
import os
import statistics
import sys


def rows(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {(r["model"], r["micro_batch"]): r for r in json.load(f)["runs"] if "step_times_s" in r}


def main():
    out, rounds, first, second = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    print(f"round model mb: {first} ms median (min-max) | {second} ms median (min-max) |"
          f" {second} - {first} | {second} / {first}")
    for k in range(1, rounds + 1):
        a, b = rows(f"{out}/{first}_{k}.json"), rows(f"{out}/{second}_{k}.json")
        for key in sorted(a):
            if key not in b:
                continue
            x, y = a[key]["step_times_s"], b[key]["step_times_s"]
            mx, my = statistics.median(x) * 1e3, statistics.median(y) * 1e3
            print(f"{k} {key[0]:18} mb{key[1]:<2} {mx:6.1f} ({min(x) * 1e3:5.1f}-{max(x) * 1e3:5.1f}) |"
                  f" {my:6.1f} ({min(y) * 1e3:5.1f}-{max(y) * 1e3:5.1f}) | {my - mx:+6.1f} | {my / mx:5.2f}x")


if __name__ == "__main__":
    main()
