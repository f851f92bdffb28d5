"""Test-only helpers for the frontier: a coverage score against a planted boundary and a perfectly
separated grid (moved here from ``ihstats.simulate_frontier``, which keeps the simulators that
also make the shipped examples)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ihstats.simulate_frontier import DEFAULT_LEVELS, FrontierTruth


def contour_coverage(frontier: pd.DataFrame, truth: FrontierTruth, domain=(None, 1.0)) -> float:
    """Fraction of the true contour's length (in log-log space) that lies inside the band.

    Parameters
    ----------
    frontier : pandas.DataFrame
        Output of ``FrontierResults.frontier()`` (``frequency``, ``log_reliability_lo/hi``).
    truth : FrontierTruth
    domain : (float or None, float or None)
        Reliability range in which the true contour counts (default: up to 1).

    Returns
    -------
    float
        Arc-length-weighted coverage over grid segments whose both ends lie in the domain.
    """
    log_f = np.log(frontier["frequency"].to_numpy())
    log_r = np.log(truth.contour(np.exp(log_f)))
    inside = ((log_r >= frontier["log_reliability_lo"].to_numpy())
              & (log_r <= frontier["log_reliability_hi"].to_numpy()))
    lo, hi = domain
    ok = np.ones_like(inside)
    if lo is not None:
        ok &= log_r >= np.log(lo)
    if hi is not None:
        ok &= log_r <= np.log(hi)
    seg = np.hypot(np.diff(log_f), np.diff(log_r))           # segment lengths
    both = ok[1:] & ok[:-1]
    if not both.any():
        raise ValueError("domain: the true contour never lies inside the domain on this grid")
    covered = 0.5 * (inside[1:].astype(float) + inside[:-1])  # half a segment per covered end
    return float(np.sum(seg * covered * both) / np.sum(seg * both))


def simulate_separated(levels=DEFAULT_LEVELS, n_seeds: int = 4) -> pd.DataFrame:
    """A perfectly separated grid: heads form exactly when ``frequency * reliability > 0.2``."""
    f, r, s = np.meshgrid(levels, levels, np.arange(n_seeds), indexing="ij")
    f, r, s = f.ravel(), r.ravel(), s.ravel()
    return pd.DataFrame({"frequency": f, "reliability": r, "seed": s, "formed": f * r > 0.2})
