"""Test-only helpers for the frontier: a coverage score against a planted boundary and a perfectly
separated grid (moved here from the frontier simulator, now ``ihstats.simulate.frontier``, which
keeps the simulator behind the shipped example)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ihstats.simulate.frontier import DEFAULT_LEVELS, FrontierTruth


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


def write_onset_grid(grid_dir, law=(600.0, -6.0, -3.0), cap: int = 9000, seeds=(0, 1)) -> list:
    """A fake grid of semi-natural runs on two transects through f = r = 0.9 whose max-PS curves
    rise at ``onset = t0 (f / 0.9)^e_f (r / 0.9)^e_r`` (flat when that lies past half the cap):
    real logs for :mod:`ihstats.frontier.budget` and ``analyses/fit_frontier.py --grid``."""
    from ihstats.simulate.curves import simulate_curve
    from ihstats.simulate.run_dirs import write_fake_grid

    t0, e_f, e_r = law
    cells = [(f, 0.9) for f in (0.5, 0.7, 0.8, 0.9)] + [(0.9, r) for r in (0.3, 0.5, 0.7)]
    runs = []
    for i, ((f, r), s) in enumerate((c, s) for c in cells for s in seeds):
        onset = t0 * (f / 0.9) ** e_f * (r / 0.9) ** e_r * (1.0 + 0.1 * s)
        kw = dict(n=120, last_step=cap, baseline=0.05, noise=0.01, seed=i)
        curve = (simulate_curve("sigmoid", "mixed", onset=onset, width=0.5, rise=0.6, **kw)
                 if onset < cap / 2 else simulate_curve("flat", "mixed", **kw))
        runs.append((curve, {"data.source": "seminatural", "data.seminatural.frequency": f,
                             "data.seminatural.reliability": r, "seed": s, "train.max_steps": cap}))
    return write_fake_grid(grid_dir, runs)
