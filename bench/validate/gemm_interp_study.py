#!/usr/bin/env python3
"""Can the GEMM model's misses be interpolated from measured neighbours? (issue 19 item 1,
calibration only)

  gemm_interp_study.py [--pairs D:A,D:S,S:D,S:T,C:S] [--sigma 1 --layout 0.3 --align 0.1 --prior 0.3]
  gemm_interp_study.py --fit-checks A,C0,T --targets D,S

The model's form (gemm_form_study.py, numpy) is fitted per precision to a run's probe
report; each check shape's time is then corrected by the fit points' log residuals,
weighted by a Gaussian of width SIGMA in (log2 m, log2 n, log2 k), times LAYOUT where
the pass differs and ALIGN where the inputs' or the output's alignment class differs,
shrunk towards no correction by PRIOR (correction = sum w r / (sum w + PRIOR)). With
--fit-checks the fit points are other runs' cuBLAS checks (up to 840 training-like
shapes) instead of a probe report: the densest fit set the committed data allows. Prints
median / 95th percentile of |predicted / measured - 1| without and with the correction.
Runs as in gemm_form_study.py; every one is calibration.
"""
import argparse

import numpy as np

import gemm_form_study as form


class Plain:  # the model's form, no candidate term
    fine_tiles = l2 = wave_fit = in_out = misaligned_tiles = in_times_out = False
    max_split = 32
    narrow_tiles = False
    softmin = 0.0


def align_class(a):
    return np.where(a >= 16, 3, np.where(a == 8, 2, np.where(a == 4, 1, 0)))


def features(rows, eb):
    m, n, k, ps, a_in, a_out, s = form.arrays(rows, eb)
    return np.stack([np.log2(m), np.log2(n), np.log2(k)], 1), ps, align_class(a_in), \
        align_class(a_out), s, (m, n, k, ps, a_in, a_out)


def errors(fit_rows, check_rows, opts):
    plain, corrected = [], []
    for d in ["bf16", "fp16", "tf32"]:
        eb = 4 if d == "tf32" else 2
        fr = [g for g in fit_rows if g["dtype"] == d]
        cr = [g for g in check_rows if g["dtype"] == d]
        if not cr:
            continue
        p = form.fit(fr, d, Plain)
        xf, pf, if_, of, sf, af = features(fr, eb)
        xc, pc, ic, oc, sc, ac = features(cr, eb)
        residual = np.log(sf) - np.log(form.predict(p, *af, eb, Plain))
        pred = form.predict(p, *ac, eb, Plain)
        w = np.exp(-((xc[:, None, :] - xf[None, :, :]) ** 2).sum(-1) / (2 * opts.sigma ** 2))
        w *= np.where(pc[:, None] == pf[None, :], 1, opts.layout)
        w *= np.where((ic[:, None] == if_[None, :]) & (oc[:, None] == of[None, :]), 1, opts.align)
        corr = (w * residual[None, :]).sum(1) / (w.sum(1) + opts.prior)
        plain.extend(pred / sc - 1)
        corrected.extend(pred * np.exp(corr) / sc - 1)
    q = lambda e: (100 * np.median(np.abs(e)), 100 * np.percentile(np.abs(e), 95))
    return q(plain), q(corrected), len(plain)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", default="D:A,D:S,S:D,S:T,C:S")
    ap.add_argument("--fit-checks", default="", help="fit to these runs' checks (comma list)")
    ap.add_argument("--targets", default="D,S", help="with --fit-checks: the runs checked")
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--layout", type=float, default=0.3)
    ap.add_argument("--align", type=float, default=0.1)
    ap.add_argument("--prior", type=float, default=0.3)
    opts = ap.parse_args()
    if opts.fit_checks:
        pool = [g for r in opts.fit_checks.split(",") for g in form.load(r, "check")]
        jobs = [(f"checks {opts.fit_checks}", pool, t) for t in opts.targets.split(",")]
    else:
        jobs = [(f"fit {p.split(':')[0]}", form.load(p.split(":")[0], "fit"), p.split(":")[1])
                for p in opts.pairs.split(",")]
    for name, fit_rows, target in jobs:
        (m0, p0), (m1, p1), count = errors(fit_rows, form.load(target, "check"), opts)
        print(f"{name} ({len(fit_rows)} points) check {target} ({count}): plain {m0:.1f} / {p0:.1f} %, "
              f"interpolated {m1:.1f} / {p1:.1f} %", flush=True)


if __name__ == "__main__":
    main()
