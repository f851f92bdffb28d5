"""Simulated formed / not-formed outcomes on a frequency x reliability grid from a known boundary.

A pure function of its arguments and a seed (docs/STYLE.md, rule 4) that returns the boundary it
planted; tests reuse it as a fixture (:mod:`ihstats.frontier`) and ``data/example_frontier.csv``
comes from it (:mod:`ihstats.simulate.examples`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

DEFAULT_LEVELS = (0.1, 0.3, 0.5, 0.7, 0.9)  # Aoyama et al.'s {0.1, ..., 0.9}^2 grid


@dataclass(frozen=True)
class FrontierTruth:
    """The boundary a frontier simulation planted: ``logit p = a + bf log f + br log r``.

    Attributes
    ----------
    intercept, b_freq, b_rel : float
        Coefficients on the natural-log scale of the knobs.
    """

    intercept: float
    b_freq: float
    b_rel: float

    def p_formed(self, frequency, reliability) -> np.ndarray:
        """Probability that a head forms at the given knob values."""
        eta = self.intercept + self.b_freq * np.log(frequency) + self.b_rel * np.log(reliability)
        return 1.0 / (1.0 + np.exp(-eta))

    def contour(self, frequency) -> np.ndarray:
        """Reliability on the ``p = 0.5`` contour at each frequency (may exceed 1)."""
        log_r = -(self.intercept + self.b_freq * np.log(frequency)) / self.b_rel
        return np.exp(log_r)


def simulate_frontier(
    frequencies=DEFAULT_LEVELS,
    reliabilities=DEFAULT_LEVELS,
    n_seeds: int = 8,
    intercept: float = 4.0,
    b_freq: float = 1.5,
    b_rel: float = 2.5,
    seed: int = 0,
) -> tuple[pd.DataFrame, FrontierTruth]:
    """Formed / not-formed outcomes on a frequency x reliability grid from a known boundary.

    Parameters
    ----------
    frequencies, reliabilities : sequence of float
        Levels of each knob, in (0, 1].
    n_seeds : int
        Runs (seeds) per grid cell.
    intercept, b_freq, b_rel : float
        True coefficients of ``logit p = intercept + b_freq log f + b_rel log r``.
    seed : int
        Seed of the generator.

    Returns
    -------
    table : pandas.DataFrame
        One row per run: ``run_id, frequency, reliability, seed, formed``.
    truth : FrontierTruth
        The planted boundary.
    """
    truth = FrontierTruth(intercept, b_freq, b_rel)
    rng = np.random.default_rng(seed)
    f, r, s = np.meshgrid(frequencies, reliabilities, np.arange(n_seeds), indexing="ij")
    f, r, s = f.ravel(), r.ravel(), s.ravel()
    formed = rng.random(f.size) < truth.p_formed(f, r)
    table = pd.DataFrame({
        "run_id": [f"sim{i:05d}" for i in range(f.size)],
        "frequency": f, "reliability": r, "seed": s, "formed": formed,
    })
    return table, truth
