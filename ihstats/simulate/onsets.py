"""Simulated onset tables from a known time-to-onset law, right-censored at a budget.

Runs whose heads form at log-normal onsets (``log onset = log_t0 + e_freq log f + e_rel log r +
sigma e``), as an emergence table holds them; :func:`read_onsets_at` reads the same runs at a
shorter budget. A pure function of its arguments and a seed that returns the law it planted;
tests of :mod:`ihstats.onset.model` and :mod:`ihstats.frontier.budget`, and
:mod:`ihstats.onset.design`'s designs, use it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class OnsetTruth:
    """A time-to-onset simulation's law: ``log onset = log_t0 + e_freq log f + e_rel log r + sigma e``.

    Attributes
    ----------
    log_t0, e_freq, e_rel, sigma : float
        Log onset (updates) at f = r = 1, the two elasticities, the seed-to-seed scatter (sd of
        log onset).
    """

    log_t0: float
    e_freq: float
    e_rel: float
    sigma: float

    def median_onset(self, frequency, reliability) -> np.ndarray:
        """Median onset (updates) at the given knob values."""
        return np.exp(self.log_t0 + self.e_freq * np.log(frequency) + self.e_rel * np.log(reliability))


def simulate_onsets(
    cells,
    n_seeds: int = 3,
    log_t0: float = 6.5,
    e_freq: float = -5.0,
    e_rel: float = -2.0,
    sigma: float = 0.3,
    cap: float = 4500.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, OnsetTruth]:
    """Runs whose heads form at log-normal onsets from a known law, right-censored at ``cap``.

    Parameters
    ----------
    cells : sequence of (float, float)
        ``(frequency, reliability)`` of each cell, in (0, 1].
    n_seeds : int
        Runs (seeds) per cell.
    log_t0, e_freq, e_rel, sigma : float
        The law (:class:`OnsetTruth`).
    cap : float
        Budget in updates: a run whose onset falls beyond it did not form.
    seed : int
        Seed of the generator.

    Returns
    -------
    table : pandas.DataFrame
        One row per run: ``run_id, frequency, reliability, seed, true_onset, onset, formed,
        censored, last_step, budget`` (``onset = last_step = cap`` for runs that did not form,
        as an emergence table holds them).
    truth : OnsetTruth
    """
    truth = OnsetTruth(log_t0, e_freq, e_rel, sigma)
    cells = np.asarray(cells, dtype=float).reshape(-1, 2)
    rng = np.random.default_rng(seed)
    f, r = np.repeat(cells[:, 0], n_seeds), np.repeat(cells[:, 1], n_seeds)
    true = truth.median_onset(f, r) * np.exp(sigma * rng.standard_normal(f.size))
    formed = true <= cap
    table = pd.DataFrame({
        "run_id": [f"sim{i:05d}" for i in range(f.size)], "frequency": f, "reliability": r,
        "seed": np.tile(np.arange(n_seeds), len(cells)), "true_onset": true,
        "onset": np.where(formed, true, cap), "formed": formed, "censored": ~formed,
        "last_step": np.where(formed, np.minimum(1.3 * true, cap), cap), "budget": float(cap),
    })
    return table, truth


def read_onsets_at(table: pd.DataFrame, budget: float) -> pd.DataFrame:
    """A :func:`simulate_onsets` table as it reads at a shorter ``budget`` (what
    :func:`ihstats.frontier.budget.read_at_budget` does to real logs)."""
    formed = table["true_onset"] <= budget
    return table.assign(formed=formed, censored=~formed, budget=float(budget),
                        onset=np.where(formed, table["true_onset"], budget),
                        last_step=np.minimum(table["last_step"], budget))
