"""The designs that would resolve "which knob" of the onset model.

:func:`resolving_designs` asks, for candidate designs (seeds per cell,
levels, budget), how often a new experiment would settle ``P(|e_freq| > |e_rel|)`` at 0.95 either
way: it draws laws from the fitted posterior, simulates each design's runs from them
(:func:`ihstats.simulate.onsets.simulate_onsets`), refits by maximum likelihood and reads the
probability from the normal approximation of the likelihood (flat-prior posterior). The first
design (cheapest in runs) whose resolution rate reaches ``power`` is the one to run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ihstats.knobs import CLAIM_PROBABILITY as CLAIM
from ihstats.onset.mle import fit_mle
from ihstats.simulate.onsets import simulate_onsets


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
    ``draws`` (:meth:`ihstats.onset.results.OnsetResults.draws`), knobs centred at ``center``."""
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
    results : ihstats.onset.results.OnsetResults
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
