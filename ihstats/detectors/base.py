"""What every change-point detector shares: the :class:`Detector` interface, its result, the curve check.

A detector takes one model-level curve (checkpoint steps, values), works in ``x = ln(step)``
(steps <= 0 left out) and returns an :class:`EmergenceResult`: onset, its interval, midpoint,
end, or censored. Onset, midpoint and end are the knees ``a < b`` of a *flat -> linear rise ->
plateau* curve in log step (:mod:`ihstats.emergence`, :mod:`ihstats.simulate.coverage_curves`).

Two kinds of interval: ``credible`` (a probability statement at ``level``, the Bayesian detector)
and ``bracketing`` (the two checkpoints that bracket the onset: resolution, not a probability,
so ``level`` is NaN; :mod:`ihstats.law.model` reads it as uniform over the bracket).

Censored results hold ``onset = onset_lo = last_step`` (the censoring point), ``onset_hi`` NaN.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

RESULT_COLUMNS = ("onset", "onset_lo", "onset_hi", "level", "interval_kind", "midpoint", "end", "censored",
                  "last_step", "method", "rise", "log_bf", "noise", "multimodal", "onset_alt", "late")


@dataclass
class EmergenceResult:
    """Outcome of one detector on one curve (steps in updates)."""

    method: str
    onset: float
    onset_lo: float
    onset_hi: float
    midpoint: float
    end: float
    censored: bool
    last_step: float
    level: float
    rise: float = np.nan  # fitted height of the transition (metric units, >= 0 for the direction)
    log_bf: float = np.nan  # bayes: change point vs best of flat/linear (natural log)
    noise: float = np.nan  # residual sd (bayes) or MAD-based sd (pelt)
    details: dict[str, Any] = field(default_factory=dict, repr=False)
    interval_kind: str = "credible"  # "credible" (bayes, at ``level``) or "bracketing" (checkpoints)
    multimodal: bool = False  # bayes: a second rise (before, after or inside the main one) was found
    onset_alt: float = np.nan  # the other rise's onset when multimodal
    late: bool = False  # bayes: the rise may start within the last two checkpoints (shape unseen)

    def row(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in RESULT_COLUMNS}


@dataclass
class Detector:
    """One change-point detector: its parameters are its fields, :meth:`fit` reads one curve.

    A subclass is a dataclass with a registry ``name`` (the table's ``method`` column), the fewest
    checkpoints at step > 0 it accepts (``min_points``) and its own parameters as fields with
    defaults; every detector takes ``level`` (the credible level; detectors with bracketing
    intervals accept and ignore it). Register it with
    :func:`ihstats.detectors.register_detector` to choose it by name.
    """

    name: ClassVar[str]
    min_points: ClassVar[int] = 8
    level: float = 0.9

    def __post_init__(self) -> None:
        if not 0 < self.level < 1:
            raise ValueError(f"level: must be in (0, 1), got {self.level}")

    def fit(self, steps: Any, values: Any, label: str = "curve") -> EmergenceResult:
        """The onset of the rise in one curve (``label`` names the curve in errors)."""
        raise NotImplementedError

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The parameter names the constructor takes."""
        return tuple(inspect.signature(cls).parameters)


# --------------------------------------------------------------------------- input checks
def check_curve(steps: Any, values: Any, min_points: int = 8, label: str = "curve") -> tuple[np.ndarray, np.ndarray]:
    """Validate a curve; return ``(steps, values)`` as float arrays with step > 0 only.

    Raises ``ValueError`` for NaN/infinite values, unsorted or duplicated steps, mismatched
    lengths and fewer than ``min_points`` checkpoints at step > 0.
    """
    s = np.asarray(steps, dtype=float).ravel()
    v = np.asarray(values, dtype=float).ravel()
    if s.shape != v.shape:
        raise ValueError(f"{label}: steps and values differ in length ({s.size} vs {v.size})")
    if not np.all(np.isfinite(v)):
        i = int(np.flatnonzero(~np.isfinite(v))[0])
        raise ValueError(f"{label}: values must be finite; {int((~np.isfinite(v)).sum())} NaN/inf, first at step {s[i]:g}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{label}: steps must be finite")
    d = np.diff(s)
    if np.any(d == 0):
        raise ValueError(f"{label}: duplicated step {s[1:][d == 0][0]:g}; steps must be unique")
    if np.any(d < 0):
        raise ValueError(f"{label}: steps must be sorted ascending (step {s[1:][d < 0][0]:g} follows {s[:-1][d < 0][0]:g})")
    keep = s > 0
    if keep.sum() < min_points:
        raise ValueError(f"{label}: {int(keep.sum())} checkpoints at step > 0, the detector needs at least {min_points}")
    return s[keep], v[keep]


# ------------------------------------------------------------------------ shared helpers
def robust_noise(values: Any) -> float:
    """Noise sd of a curve from its first differences: ``1.4826 MAD(diff y) / sqrt(2)``
    (a rise moves few differences, so it barely counts)."""
    d = np.diff(np.asarray(values, dtype=float))
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))


def running_median(y: np.ndarray, k: int) -> np.ndarray:
    """Running median over ``k`` checkpoints (edges padded with the end values); ``k <= 1``: ``y``."""
    if k <= 1:
        return y
    h = k // 2
    pad = np.pad(y, h, mode="edge")
    return np.median(np.lib.stride_tricks.sliding_window_view(pad, 2 * h + 1), axis=1)


def censored_result(method: str, s: np.ndarray, level: float, **kw: Any) -> EmergenceResult:
    """No transition: ``onset = onset_lo = last_step`` (the censoring point), the rest NaN."""
    last = float(s[-1])
    return EmergenceResult(method, last, last, np.nan, np.nan, np.nan, True, last, level, **kw)
