"""Which B x C design identifies the law's exponents: expected 90% interval widths of ``a`` and ``b``
by simulation, at variances measured from shipped logs (issue 66).

The model is the law's (``ihstats.law``) on log onset, with every variance term it has::

    y = log T - a log B - b log C + cell_sd z_cell + w_sd z_weight + d_sd z_data + sigma eps

``z_cell`` per (B, C) cell (the law's misfit), ``z_weight`` and ``z_data`` per weight and data seed,
crossed with the cells (a packed replicate r uses weight seed r and data seed r in every cell, so the
seed terms are shared by every cell and cancel from the contrasts that give a and b). For one design
:func:`design_widths` draws ``n_sims`` data sets, fits each by maximum likelihood over the variance
terms (:func:`fit_mixed`; generalised least squares for the line at the fitted variances) and reads
the interval of a and b as ``2 t(0.95, df) se``, ``df`` = cells - 3 (the cell effect is estimated
from that many contrasts: a t rather than a normal interval, as a posterior with an uncertain
``cell_sd`` is wider than one that knows it). Censoring is not simulated (every bxc-cross run formed).
Torch-free numpy and scipy; the command is ``analyses/design_law.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

#: a and b of the papers the law is compared with (Aoyama et al. 2025), the default truth simulated
TRUTH = {"log_T": 8.0, "a": 0.37, "b": 0.62}


@dataclass(frozen=True)
class Variances:
    """Standard deviations on log onset: within-cell scatter ``sigma``, the law's cell misfit
    ``cell_sd`` and the seed terms ``weight_sd``, ``data_sd``."""

    sigma: float
    cell_sd: float
    weight_sd: float = 0.0
    data_sd: float = 0.0


def design_cells(B: list[int], C: list[int], layout: str = "factorial", centre: tuple | None = None) -> list[tuple]:
    """The (B, C) cells of a design: ``factorial`` (every B at every C) or ``cross`` (every B at the
    centre C and every C at the centre B; ``centre`` default: the middle levels)."""
    if layout == "factorial":
        return list(itertools.product(B, C))
    if layout != "cross":
        raise ValueError(f"layout: must be factorial or cross, got {layout!r}")
    b0, c0 = centre or (B[len(B) // 2], C[len(C) // 2])
    return sorted({(b, c0) for b in B} | {(b0, c) for c in C})


def _covariance(parts: list[np.ndarray], sds: np.ndarray, n: int) -> np.ndarray:
    """V = sigma^2 I + sum_k sd_k^2 Z_k Z_k' (``parts``: each term's level index per run)."""
    V = np.eye(n) * sds[0] ** 2
    for idx, sd in zip(parts, sds[1:]):
        V += sd ** 2 * (idx[:, None] == idx[None, :])
    return V


def _gls(X: np.ndarray, y: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Coefficients, their covariance and the Gaussian log-likelihood (profiled over the line)."""
    L = np.linalg.cholesky(V)
    Xw, yw = np.linalg.solve(L, X), np.linalg.solve(L, y)
    cov = np.linalg.inv(Xw.T @ Xw)
    beta = cov @ Xw.T @ yw
    r = yw - Xw @ beta
    ll = -0.5 * (r @ r) - np.log(np.diag(L)).sum() - 0.5 * len(y) * np.log(2 * np.pi)
    return beta, cov, float(ll)


def fit_mixed(y: np.ndarray, logB: np.ndarray, logC: np.ndarray, parts: list[np.ndarray]) -> dict:
    """Maximum-likelihood fit of the law with crossed random effects (``parts``: cell, then seed
    terms, each a level index per run): ``a``, ``b``, their standard errors and the fitted sds
    (``sigma`` first, then one per part)."""
    X = np.column_stack([np.ones_like(y), -(logB - logB.mean()), -(logC - logC.mean())])

    def nll(log_sds):
        return -_gls(X, y, _covariance(parts, np.exp(log_sds), len(y)))[2]

    start = np.log(np.full(1 + len(parts), max(np.std(y), 1e-3) / 2))
    sol = optimize.minimize(nll, start, method="L-BFGS-B", bounds=[(-7.0, 3.0)] * len(start))
    sds = np.exp(sol.x)
    beta, cov, _ = _gls(X, y, _covariance(parts, sds, len(y)))
    return {"a": beta[1], "b": beta[2], "se_a": np.sqrt(cov[1, 1]), "se_b": np.sqrt(cov[2, 2]), "sds": sds}


def _runs(cells: list[tuple], seeds: int) -> tuple[np.ndarray, ...]:
    rows = [(i, b, c, s) for i, (b, c) in enumerate(cells) for s in range(seeds)]
    cell, B, C, seed = (np.array([r[k] for r in rows]) for k in range(4))
    return cell, np.log(B.astype(float)), np.log(C.astype(float)), seed


def design_widths(cells: list[tuple], seeds: int, var: Variances, n_sims: int = 200, seed: int = 0,
                  truth: dict | None = None, level: float = 0.9) -> dict:
    """Expected ``level`` interval widths of a and b for ``seeds`` packed replicates at each of ``cells``
    (module docstring): mean and 90th percentile over ``n_sims`` simulated grids, and the share of them
    whose interval holds the truth."""
    t = {**TRUTH, **(truth or {})}
    cell, logB, logC, rep = _runs(cells, seeds)
    parts = [cell] + ([rep] if seeds > 1 and (var.weight_sd or var.data_sd) else [])
    df = max(len(cells) - 3, 1)
    q = stats.t.ppf(0.5 + level / 2, df)
    rng = np.random.default_rng(seed)
    w_a, w_b, hit_a, hit_b = [], [], [], []
    for _ in range(n_sims):
        y = (t["log_T"] - t["a"] * (logB - logB.mean()) - t["b"] * (logC - logC.mean())
             + var.cell_sd * rng.standard_normal(len(cells))[cell]
             + (var.weight_sd * rng.standard_normal(seeds) + var.data_sd * rng.standard_normal(seeds))[rep]
             + var.sigma * rng.standard_normal(len(cell)))
        fit = fit_mixed(y, logB, logC, parts)
        w_a.append(2 * q * fit["se_a"]), w_b.append(2 * q * fit["se_b"])
        hit_a.append(abs(fit["a"] - t["a"]) <= q * fit["se_a"]), hit_b.append(abs(fit["b"] - t["b"]) <= q * fit["se_b"])
    return {"cells": len(cells), "seeds": seeds, "runs": len(cell), "width_a": float(np.mean(w_a)),
            "width_b": float(np.mean(w_b)), "width_a_q90": float(np.quantile(w_a, 0.9)),
            "width_b_q90": float(np.quantile(w_b, 0.9)), "cover_a": float(np.mean(hit_a)), "cover_b": float(np.mean(hit_b))}


def measured_variances(summary: pd.DataFrame) -> tuple[Variances, dict]:
    """The variances of a grid's formed runs (a ``summary.csv`` frame: ``train.batch_size``,
    ``train.context``, ``seed``, ``formed``, ``onset``): :func:`fit_mixed` with a cell and a crossed
    seed term. The seed term is the weight and data seeds together (shipped grids confound them);
    it is returned as ``weight_sd`` with ``data_sd`` 0, the total a new seed draws. Also the fit."""
    df = summary[summary["formed"].astype(bool)]
    B, C = df["train.batch_size"].to_numpy(float), df["train.context"].to_numpy(float)
    cell = pd.factorize(pd.Series([f"{b:g}x{c:g}" for b, c in zip(B, C)]))[0]
    seed = pd.factorize(df["seed"])[0]
    fit = fit_mixed(np.log(df["onset"].to_numpy(float)), np.log(B), np.log(C), [cell, seed])
    sig, cell_sd, seed_sd = fit["sds"]
    return Variances(float(sig), float(cell_sd), float(seed_sd), 0.0), {**fit, "n_runs": len(df)}


def contrast_width(sigma: float, seeds: int, log_span: float = 1.0, level: float = 0.9) -> float:
    """The floor of a one-factor contrast (the mechanism factorial): the ``level`` interval width of the
    slope of log onset over ``log_span`` (the log ratio of the factor's two arms), each arm ``seeds``
    packed replicates at the same seeds (the seed terms cancel), within-cell scatter ``sigma``:
    ``2 z sigma sqrt(2 / seeds) / log_span``."""
    if seeds < 1 or not log_span > 0:
        raise ValueError(f"seeds must be >= 1 and log_span > 0, got {seeds}, {log_span}")
    return float(2 * stats.norm.ppf(0.5 + level / 2) * sigma * np.sqrt(2.0 / seeds) / log_span)
