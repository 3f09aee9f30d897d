#!/usr/bin/env python3
"""Medians of a study's CSV (softmax_study, layer_norm_study) per size, buffer and form
over its rounds, and each form's bandwidth relative to a reference form on the same
buffer and size.
  bench/kokkos/study_summary.py layer_norm_study.csv [--reference kokkos_probe]... [--out summary.csv]
"""
import argparse
import csv
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--reference", action="append",
                    help="form the others are divided by (default kokkos_probe); repeat it "
                         "for a column per reference")
    ap.add_argument("--out", help="also write the table as CSV here")
    args = ap.parse_args()
    try:
        with open(args.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"error: cannot read {args.csv}: {e.strerror}")
    needed = {"size_mib", "buffer", "form", "gbps"}
    if not rows or not needed <= set(rows[0]):
        sys.exit(f"error: {args.csv} is not a study CSV (needs columns {sorted(needed)})")
    groups = {}
    for r in rows:
        key = (int(r["size_mib"]), r["buffer"], r["form"])
        g = groups.setdefault(key, {"gbps": [], "host_gbps": [], "checks": set(), "regs": r.get("regs", ""),
                                    "blocks": r.get("blocks_per_sm", ""), "peaks": []})
        g["gbps"].append(float(r["gbps"]))
        if r.get("host_gbps"):
            g["host_gbps"].append(float(r["host_gbps"]))
        g["checks"].add(r.get("check", ""))
        if r.get("peak_blocks_per_sm") not in (None, "", "-1"):  # layer_norm_study from run 13
            g["peaks"].append(int(r["peak_blocks_per_sm"]))
    out = []
    for (size, buf, form), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        gbps = statistics.median(g["gbps"])
        host = statistics.median(g["host_gbps"]) if g["host_gbps"] else None
        row = {
            "size_mib": size, "buffer": buf, "form": form, "rounds": len(g["gbps"]),
            "regs": g["regs"], "blocks_per_sm": g["blocks"], "gbps": f"{gbps:.1f}",
            "host_gbps": f"{host:.1f}" if host is not None else "",
        }
        for reference in args.reference or ["kokkos_probe"]:
            ref = groups.get((size, buf, reference))
            ratio = gbps / statistics.median(ref["gbps"]) if ref else None
            row[f"vs_{reference}"] = f"{ratio:.3f}" if ratio is not None else ""
        row.update({
            "min_gbps": f"{min(g['gbps']):.1f}", "max_gbps": f"{max(g['gbps']):.1f}",
            "check": "ok" if g["checks"] == {"ok"} else "FAILED",
        })
        out.append(row)
        if "peak_blocks_per_sm" in rows[0]:
            out[-1]["peak_blocks_per_sm"] = max(g["peaks"]) if g["peaks"] else ""
    w = csv.DictWriter(sys.stdout, fieldnames=list(out[0]))
    w.writeheader()
    w.writerows(out)
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out[0]))
            w.writeheader()
            w.writerows(out)


if __name__ == "__main__":
    main()
