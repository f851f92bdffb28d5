"""Parameter recovery of the UPT law by simulation (coverage study).

    python benchmarks/bench_upt_recovery.py                  # 40 data sets, ~10-20 min on 1 core
    python benchmarks/bench_upt_recovery.py --n-datasets 5   # quick look

1. Coverage: 40 tables simulated from known (T, a, b, sigma) with Student-t scatter, onset
   measurement error and ~15% right-censoring (token budget); the fraction of 90% HDIs of a and
   b that contain the truth (target 80-97%).
2. OLS agreement: tables without censoring; |posterior mean - OLS| for a and b (target < 0.02).
   Gaussian likelihood without measurement error, i.e. the same model OLS fits, so any gap is
   the prior and Monte Carlo error.
Also run as a slow test (tests/ihstats/test_upt_law.py::test_recovery_benchmark_slow).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd

from ihstats.law.model import UPTLawModel
from ihstats.law.results import ols_fit
from ihstats.law.spec import UPTLawSpec
from ihstats.simulate.law import simulate_emergence_table

DESIGN = dict(B_values=(4, 8, 16, 32, 64, 128), C_values=(16, 32, 64, 128, 256))


def coverage_study(n_datasets=40, *, draws=500, tune=500, chains=2, hdi_prob=0.9, seed=0,
                   verbose=True) -> pd.DataFrame:
    """One row per simulated data set: truth, posterior mean and HDI of a and b, covered flags."""
    rows = []
    rng = np.random.default_rng(seed)
    for i in range(n_datasets):
        truth = dict(log_T=13.26, a=rng.uniform(0.2, 0.6), b=rng.uniform(0.4, 0.8), sigma=0.2,
                     nu=8.0)
        table, _ = simulate_emergence_table(**truth, censor_frac=0.15, seed=seed * 1000 + i,
                                            **DESIGN)
        t0 = time.perf_counter()
        res = UPTLawModel.from_table(table, UPTLawSpec(hdi_prob=hdi_prob)).fit(draws=draws, tune=tune,
                                                        chains=chains, seed=i)
        s = res.summary(hdi_prob)
        row = {"dataset": i, "n_censored": int(table.censored.sum()),
               "divergences": int(res.idata.sample_stats["diverging"].sum()),
               "wall_s": time.perf_counter() - t0}
        for p in ("a", "b"):
            row |= {f"{p}_true": truth[p], f"{p}_mean": s.loc[p, "mean"],
                    f"{p}_lo": s.loc[p, "hdi_lo"], f"{p}_hi": s.loc[p, "hdi_hi"],
                    f"{p}_covered": bool(s.loc[p, "hdi_lo"] <= truth[p] <= s.loc[p, "hdi_hi"])}
        rows.append(row)
        if verbose:
            print(f"[{i + 1}/{n_datasets}] a {row['a_mean']:.3f} (true {truth['a']:.3f}) "
                  f"b {row['b_mean']:.3f} (true {truth['b']:.3f}) {row['wall_s']:.1f} s",
                  flush=True)
    return pd.DataFrame(rows)


def ols_agreement(n_datasets=3, *, draws=1000, tune=500, chains=2, seed=100) -> pd.DataFrame:
    """|posterior mean - OLS estimate| of a and b on uncensored tables."""
    rows = []
    for i in range(n_datasets):
        table, _ = simulate_emergence_table(sigma=0.2, censor_frac=0.0, seed=seed + i, **DESIGN)
        spec = UPTLawSpec(likelihood="normal", measurement_error=False)
        res = UPTLawModel.from_table(table, spec).fit(draws=draws, tune=tune, chains=chains, seed=i)
        s, o = res.summary(), ols_fit(res.data)
        rows.append({"dataset": i, **{f"{p}_diff": abs(s.loc[p, "mean"] - o.loc[p, "estimate"])
                                      for p in ("a", "b")}})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-datasets", type=int, default=40, help="simulated data sets (default 40)")
    p.add_argument("--draws", type=int, default=500, help="draws per chain (default 500)")
    p.add_argument("--tune", type=int, default=500, help="tuning steps (default 500)")
    p.add_argument("--chains", type=int, default=2, help="chains (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulation (default 0)")
    p.add_argument("--out", default=None, help="CSV of per-data-set results (optional)")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    cov = coverage_study(args.n_datasets, draws=args.draws, tune=args.tune, chains=args.chains,
                         seed=args.seed)
    agree = ols_agreement()
    if args.out:
        cov.to_csv(args.out, index=False)
    print(f"coverage of 90% HDIs over {len(cov)} data sets: a {cov.a_covered.mean():.0%}, "
          f"b {cov.b_covered.mean():.0%} (target 80-97%); mean censored per table "
          f"{cov.n_censored.mean():.1f}; divergences {cov.divergences.sum()}")
    print(f"|Bayes - OLS| without censoring: a max {agree.a_diff.max():.4f}, b max "
          f"{agree.b_diff.max():.4f} (target < 0.02)")
    print(f"total {time.perf_counter() - t0:.0f} s")
    ok = (0.8 <= cov.a_covered.mean() <= 0.97 and 0.8 <= cov.b_covered.mean() <= 0.97
          and agree[["a_diff", "b_diff"]].to_numpy().max() < 0.02)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
