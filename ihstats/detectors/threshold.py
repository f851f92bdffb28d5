"""The threshold detector (``threshold``, a cross-check): crossings of the smoothed curve.

Running median (``smooth`` = 5 checkpoints); baseline = median of the first 5% (>= 3) points,
top = max; crossings of baseline + 10% / 50% / 90% of the rise (or of an absolute ``threshold``
for the onset), the last upward crossing before the maximum, interpolated linearly in log step.

A transition needs a rise of at least ``min_rise`` (metric units) and ``min_rise_sd`` noise sd (6:
flat curves with AR(1) (<= 0.5) or Student-t noise stay below 5% false positives,
``benchmarks/bench_emergence.py``). The interval is the two checkpoints that bracket the onset
(``interval_kind = "bracketing"``, ``level`` NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ihstats.detectors.base import (Detector, EmergenceResult, censored_result, check_curve, robust_noise,
                                    running_median)


def _crossing(x: np.ndarray, y: np.ndarray, level_value: float) -> tuple[float, float, float] | None:
    """The last upward crossing of ``level_value`` before the curve's maximum (robust to early
    noise spikes), interpolated in log step; ``None`` if the maximum stays below it."""
    top = int(np.argmax(y))
    if y[top] < level_value:
        return None
    below = np.flatnonzero(y[:top] < level_value)
    if below.size == 0:
        return float(np.exp(x[0])), float(np.exp(x[0])), float(np.exp(x[0]))
    i = int(below[-1]) + 1
    t = (level_value - y[i - 1]) / (y[i] - y[i - 1])
    return float(np.exp(x[i - 1] + t * (x[i] - x[i - 1]))), float(np.exp(x[i - 1])), float(np.exp(x[i]))


@dataclass
class ThresholdDetector(Detector):
    """First crossing of a level, interpolated in log step (rules: module docstring).

    Parameters
    ----------
    level : float
        Accepted and ignored: the interval is the bracketing checkpoints.
    min_rise, min_rise_sd : float
        Smallest rise that counts, in metric units and in noise sd.
    threshold : float, optional
        An absolute level whose crossing is the onset (default: baseline + ``fracs[0]`` of the rise).
    fracs : (float, float, float)
        Shares of the rise whose crossings are the onset, midpoint and end.
    smooth : int
        Running-median window, in checkpoints.
    """

    name = "threshold"
    min_points = 4
    min_rise: float = 0.1
    min_rise_sd: float = 6.0
    threshold: float | None = None
    fracs: tuple[float, float, float] = (0.1, 0.5, 0.9)
    smooth: int = 5

    def fit(self, steps: Any, values: Any, label: str = "curve") -> EmergenceResult:
        s, y = check_curve(steps, values, self.min_points, label)
        x = np.log(s)
        ym = running_median(y, self.smooth)
        base = float(np.median(ym[: max(3, y.size // 20)]))
        rise = float(ym.max() - base)
        levels = [base + f * rise for f in self.fracs]
        if self.threshold is not None:
            levels[0] = self.threshold
        cross = [_crossing(x, ym, lv) for lv in levels]
        noise = robust_noise(y)
        if rise < max(self.min_rise, self.min_rise_sd * noise) or cross[0] is None:
            return censored_result(self.name, s, np.nan, rise=max(rise, 0.0), noise=noise,
                                   interval_kind="bracketing")
        on, lo, hi = cross[0]
        lo, hi = (float(s[np.argmin(np.abs(s - z))]) for z in (lo, hi))  # exact bracketing checkpoints
        mid = cross[1][0] if cross[1] else np.nan
        end = cross[2][0] if cross[2] else np.nan
        return EmergenceResult(self.name, on, lo, hi, mid, end, False, float(s[-1]), np.nan, rise, np.nan, noise,
                               interval_kind="bracketing")
