"""The onset model's maximum-likelihood fit, and the designs that would resolve "which knob".

:func:`fit_mle` maximises the censored log-normal likelihood of :mod:`ihstats.onset_model`
(scipy, seconds-free): the cross-check beside the posterior, and the fast fit that makes design
simulation affordable. :func:`resolving_designs` asks, for candidate designs (seeds per cell,
levels, budget), how often a new experiment would settle ``P(|e_freq| > |e_rel|)`` at 0.95 either
way: it draws laws from the fitted posterior, simulates each design's runs from them
(:func:`ihstats.simulate.onsets.simulate_onsets`), refits by maximum likelihood and reads the
probability from the normal approximation of the likelihood (flat-prior posterior). The first
design (cheapest in runs) whose resolution rate reaches ``power`` is the one to run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.stats import norm

from ihstats.frontier import CLAIM_PROBABILITY as CLAIM
from ihstats.simulate.onsets import simulate_onsets


@dataclass
class CensoredMLE:
    """Maximum-likelihood fit: ``params`` = (a, e_freq, e_rel, log sigma), ``cov`` their
    covariance (inverse numerical Hessian x n_obs / (n_obs - 4), see :func:`fit_mle`), ``se``
    standard errors, ``converged``."""

    params: np.ndarray
    cov: np.ndarray
    converged: bool

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cov), 0, None))

    def p_freq_larger(self, n: int = 4000, seed: int = 0) -> float:
        """``P(|e_freq| > |e_rel|)`` under the normal approximation of the likelihood."""
        if not np.all(np.isfinite(self.cov)):
            return np.nan
        e = np.random.default_rng(seed).multivariate_normal(self.params[1:3], self.cov[1:3, 1:3], n)
        return float(np.mean(np.abs(e[:, 0]) > np.abs(e[:, 1])))


def _negloglik(theta, X, y, cen):
    mu = theta[0] + X @ theta[1:3]
    sigma = np.exp(theta[3])
    z = (y - mu) / sigma
    return -(np.sum(norm.logpdf(z[~cen]) - theta[3]) + np.sum(norm.logsf(z[cen])))


def _hessian(fun, x, h: float = 1e-4) -> np.ndarray:
    n = x.size
    H = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            H[i, j] = H[j, i] = (fun(x + ei + ej) - fun(x + ei - ej) - fun(x - ei + ej)
                                 + fun(x - ei - ej)) / (4 * h * h)
    return H


def fit_mle(X: np.ndarray, log_time: np.ndarray, censored: np.ndarray) -> CensoredMLE:
    """Censored log-normal regression by maximum likelihood.

    Parameters
    ----------
    X : ndarray, shape (n_runs, 2)
        Centred log frequency and log reliability.
    log_time : ndarray, shape (n_runs,)
        Log onset of formed runs, log censoring point of the others.
    censored : ndarray of bool, shape (n_runs,)

    Returns
    -------
    CensoredMLE
    """
    y, cen = np.asarray(log_time, float), np.asarray(censored, bool)
    obs = y[~cen]
    x0 = np.array([obs.mean() if obs.size else y.mean(), 0.0, 0.0, np.log(max(obs.std(), 0.1))])
    fun = lambda t: _negloglik(t, X, y, cen)  # noqa: E731
    res = minimize(fun, x0, method="BFGS")
    H = _hessian(fun, res.x)
    n_obs = int((~cen).sum())
    try:
        # small-sample correction n_obs / (n_obs - 4), as OLS's n / (n - p) but counting onsets
        # (a censored run carries less): measured 90% Wald coverage of the elasticities on 7 cells,
        # 46% censored, 150 datasets: 0.84 without it, 0.88-0.90 with it (3 seeds); 0.91 (8 seeds);
        # on a 5 x 5 grid, one seed, ~6 onsets in 25 runs (freqrel-markov's law), 277 datasets:
        # 0.74 / 0.78 without it, 0.91 / 0.90 with it
        cov = np.linalg.inv(H) * (n_obs / (n_obs - 4) if n_obs > 4 else np.nan)
        if not np.all(np.diag(cov) > 0):
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:  # flat likelihood (e.g. everything censored at a level)
        cov = np.full((4, 4), np.nan)
    return CensoredMLE(res.x, cov, bool(res.success))


def candidate_designs(cells: pd.DataFrame, n_seeds: int, cap: float) -> list[dict]:
    """Default designs to try: the same cells with 1, 2, 4, 8 x the seeds, at the cap and at 3 x
    the cap, and the cells plus one level further down each knob's transect (the next step of
    its geometric spacing) at the same multiples. Cheapest (fewest runs x cap) first."""
    base = cells[["frequency", "reliability"]].drop_duplicates()
    wider = [base]
    for k, other in (("frequency", "reliability"), ("reliability", "frequency")):
        at = base[base[other] == base[other].max()][k].sort_values().to_numpy()
        if at.size >= 2:
            wider.append(pd.DataFrame({k: [at[0] ** 2 / at[1]], other: [base[other].max()]}))
    wider = pd.concat(wider, ignore_index=True).drop_duplicates()
    out = []
    for name, c in (("same levels", base), ("one level lower on each transect", wider)):
        for mult in (1, 2, 4, 8):
            for cap_x in (1, 3):
                out.append({"levels": name, "cells": c.to_numpy(), "n_seeds": n_seeds * mult,
                            "cap": cap * cap_x})
    return sorted(out, key=lambda d: (len(d["cells"]) * d["n_seeds"] * d["cap"], d["levels"]))


def resolution_rate(draws: dict, center: dict, design: dict, n_sims: int = 100,
                    seed: int = 0) -> float:
    """Share of simulated experiments under ``design`` (a :func:`candidate_designs` entry) whose
    maximum-likelihood ``P(|e_freq| > |e_rel|)`` reaches 0.95 either way; laws drawn from
    ``draws`` (:meth:`ihstats.onset_model.OnsetResults.draws`), knobs centred at ``center``."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(draws["intercept"].size, n_sims)
    hits = 0
    for s, i in enumerate(idx):
        log_t0 = draws["intercept"][i] - draws["e_freq"][i] * center["frequency"] \
            - draws["e_rel"][i] * center["reliability"]
        tab, _ = simulate_onsets(design["cells"], design["n_seeds"], log_t0, draws["e_freq"][i],
                                 draws["e_rel"][i], draws["sigma"][i], design["cap"], seed=seed + s)
        if tab["formed"].sum() < 3:
            continue
        X = np.column_stack([np.log(tab[k]) - np.log(tab[k]).mean() for k in ("frequency", "reliability")])
        p = fit_mle(X, np.log(tab["onset"].to_numpy()), ~tab["formed"].to_numpy()).p_freq_larger(1000, s)
        hits += bool(np.isfinite(p) and max(p, 1 - p) >= CLAIM)
    return hits / n_sims


def resolving_designs(results, power: float = 0.8, n_sims: int = 100, designs=None,
                      seed: int = 0) -> pd.DataFrame:
    """Resolution rate of candidate designs under the fitted posterior, cheapest first.

    Parameters
    ----------
    results : ihstats.onset_model.OnsetResults
    power : float
        Resolution rate that makes a design enough; designs past the first such one are not tried.
    n_sims : int
        Simulated experiments per design.
    designs : list of dict, optional
        ``levels, cells (n, 2), n_seeds, cap``; default :func:`candidate_designs` of the fitted runs
        (seeds per cell: the median count, cap: the largest censoring point).

    Returns
    -------
    pandas.DataFrame
        ``levels, n_cells, n_seeds, n_runs, cap, resolution_rate, enough``.
    """
    runs = results.model.runs
    if designs is None:
        seeds = int(runs.groupby(["frequency", "reliability"]).size().median())
        cap = float(runs.loc[~runs["formed"], "time"].max() if (~runs["formed"]).any() else runs["time"].max())
        designs = candidate_designs(runs, seeds, cap)
    draws, rows = results.draws(), []
    for d in designs:
        rate = resolution_rate(draws, results.model.center, d, n_sims, seed)
        rows.append({"levels": d["levels"], "n_cells": len(d["cells"]), "n_seeds": d["n_seeds"],
                     "n_runs": len(d["cells"]) * d["n_seeds"], "cap": d["cap"],
                     "resolution_rate": rate, "enough": rate >= power})
        if rate >= power:
            break
    return pd.DataFrame(rows)
