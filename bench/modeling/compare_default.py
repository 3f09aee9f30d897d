#!/usr/bin/env python3
"""Extra-P 4.2.5 against xdeep's default modeler, per noise condition, from
one or more results.csv files that run_accuracy.sh wrote (one per noise seed;
several are pooled case by case).

    bench/modeling/compare_default.py BUILD/modeling-accuracy-seed-N/results.csv [...]

Prints, per noise condition: true-model recovery, median / 95th-percentile /
mean / worst held-out error of both (the bench's percentile: the ceil(q*n)-th
smallest), how many cases the default is better or worse on by > 0.1 pp, and
then every case where it is worse by > 2 pp.
"""
import csv
import math
import sys

EXTRAP = 'Extra-P 4.2.5'
DEFAULT = 'xdeep default (selected)'


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values), max(1, math.ceil(q * len(values)))) - 1]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cases = {}  # (file, id) -> {column: row}
    for path in sys.argv[1:]:
        try:
            with open(path, newline='') as f:
                for row in csv.DictReader(f):
                    cases.setdefault((path, row['id']), {})[row['column']] = row
        except (OSError, KeyError, csv.Error) as e:
            sys.exit(f'{path}: not a results.csv of run_accuracy.sh ({e})')
    labels = []
    for rows in cases.values():
        if EXTRAP not in rows or DEFAULT not in rows:
            sys.exit('a results.csv lacks the Extra-P or default column: run run_accuracy.sh')
        label = rows[EXTRAP]['noise']
        if label not in labels:
            labels.append(label)
    print(f'{len(cases)} cases from {len(sys.argv) - 1} file(s); held-out error in %, '
          'Extra-P / xdeep default')
    print(f"{'noise':10} {'recovered':>11} {'median':>17} {'p95':>15} {'mean':>13} "
          f"{'worst':>17} {'better/worse > 0.1 pp':>22}")
    much_worse = []
    for label in labels:
        rows = [r for r in cases.values() if r[EXTRAP]['noise'] == label]
        e = [float(r[EXTRAP]['error']) for r in rows]
        d = [float(r[DEFAULT]['error']) for r in rows]
        rec = [sum(int(r[c]['recovered']) for r in rows) for c in (EXTRAP, DEFAULT)]
        better = sum(1 for x, y in zip(e, d) if y < x - 0.1)
        worse = sum(1 for x, y in zip(e, d) if y > x + 0.1)
        print(f'{label:10} {rec[0]:>5}/{rec[1]:<5} {percentile(e, .5):8.4f}/{percentile(d, .5):<8.4f} '
              f'{percentile(e, .95):7.2f}/{percentile(d, .95):<7.2f} '
              f'{sum(e) / len(e):6.2f}/{sum(d) / len(d):<6.2f} '
              f'{max(e):8.2f}/{max(d):<8.2f} {better:>11}/{worse:<10}')
        much_worse += [r for r, x, y in zip(rows, e, d) if y > x + 2.0]
    print(f'\ncases where the default is > 2 pp worse: {len(much_worse)}')
    for r in much_worse:
        e, d = float(r[EXTRAP]['error']), float(r[DEFAULT]['error'])
        print(f"  #{r[DEFAULT]['id']} {r[DEFAULT]['function']}, {r[DEFAULT]['noise']}: "
              f"{d:.2f} % vs {e:.2f} % (+{d - e:.2f} pp)\n    default: {r[DEFAULT]['detail']}\n"
              f"    Extra-P: {r[EXTRAP]['model']}")


if __name__ == '__main__':
    main()
