"""The PELT detector (``pelt``, a cross-check): mean-shift change points, onset bracketed by checkpoints.

ruptures PELT, ``model="l2"``, ``jump=1``, ``min_size=2``, penalty ``pen = pen_c * sigma^2 * ln n``
(BIC for a mean shift: two parameters per change, ``pen_c=2``) with
``sigma = 1.4826 MAD(diff y) / sqrt(2)`` (:func:`ihstats.detectors.base.robust_noise`). Onset: the
boundary before the first segment whose mean exceeds the first segment's by ``on_frac`` (5%) of
the rise (max segment mean minus first); midpoint/end likewise at 50%/90%.

A transition needs a rise of at least ``min_rise`` (metric units) and ``min_rise_sd`` noise sd (7:
flat curves with AR(1) (<= 0.5) or Student-t noise stay below 5% false positives,
``benchmarks/bench_emergence.py``), so noisier curves need larger rises. The interval is the two
checkpoints that bracket the onset (``interval_kind = "bracketing"``, ``level`` NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ihstats.detectors.base import Detector, EmergenceResult, censored_result, check_curve, robust_noise


def pelt_penalty(values: Any, pen_c: float = 2.0) -> float:
    """``pen_c * sigma^2 * ln n`` with ``sigma = 1.4826 * MAD(diff(values)) / sqrt(2)``."""
    v = np.asarray(values, dtype=float)
    sigma = max(robust_noise(v), 1e-6 * max(np.std(v), 1e-12))
    return float(pen_c * sigma**2 * np.log(v.size))


def pelt_breakpoints(values: Any, pen: float, min_size: int = 2) -> list[int]:
    """ruptures PELT (``model="l2"``, ``jump=1``): segment end indices, the last is ``len(values)``."""
    import ruptures as rpt

    v = np.asarray(values, dtype=float).reshape(-1, 1)
    return [int(b) for b in rpt.Pelt(model="l2", min_size=min_size, jump=1).fit(v).predict(pen=pen)]


@dataclass
class PeltDetector(Detector):
    """PELT change points on the curve (penalty and rules: module docstring).

    Parameters
    ----------
    level : float
        Accepted and ignored: the interval brackets the boundary by its checkpoints.
    min_rise, min_rise_sd : float
        Smallest rise that counts, in metric units and in noise sd.
    pen_c : float
        Penalty factor (2: BIC for a mean shift).
    min_size : int
        Shortest segment, in checkpoints.
    on_frac : float
        Share of the rise a segment's mean must exceed the first segment's by to mark the onset.
    """

    name = "pelt"
    min_points = 6
    min_rise: float = 0.1
    min_rise_sd: float = 7.0
    pen_c: float = 2.0
    min_size: int = 2
    on_frac: float = 0.05

    def fit(self, steps: Any, values: Any, label: str = "curve") -> EmergenceResult:
        s, y = check_curve(steps, values, self.min_points, label)
        pen = pelt_penalty(y, self.pen_c)
        bk = pelt_breakpoints(y, pen, self.min_size)
        starts = np.array([0] + bk[:-1])
        means = np.array([y[a:b].mean() for a, b in zip(starts, bk)])
        rise = float(means.max() - means[0])
        noise = float(np.sqrt(pen / (self.pen_c * np.log(y.size))))
        details = {"breakpoints": bk, "pen": pen}
        if len(bk) < 2 or rise < max(self.min_rise, self.min_rise_sd * robust_noise(y)):
            return censored_result(self.name, s, np.nan, rise=max(rise, 0.0), noise=noise, details=details,
                                   interval_kind="bracketing")

        def boundary(frac: float) -> tuple[float, float, float]:
            k = int(np.flatnonzero(means >= means[0] + frac * rise)[0])  # k >= 1: segment 0 is the base
            i = starts[k]
            return float(np.sqrt(s[i - 1] * s[i])), float(s[i - 1]), float(s[i])

        on, lo, hi = boundary(self.on_frac)
        return EmergenceResult(self.name, on, lo, hi, boundary(0.5)[0], boundary(0.9)[0], False, float(s[-1]),
                               np.nan, rise, np.nan, noise, details, interval_kind="bracketing")
