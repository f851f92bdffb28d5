"""Simulated emergence curves with a planted onset: checkpoint schedules, rise shapes, the onset definition.

Each simulator is a pure function of its arguments and a seed and returns the truth it planted;
tests and benchmarks reuse them. Curves that break the detector's model on purpose (correlated
noise, max over heads, two stages, late rises): :mod:`ihstats.simulate.coverage_curves`; run
directories holding a curve: :mod:`ihstats.simulate.run_dirs`.

Onset definition (shared with :mod:`ihstats.emergence`)
-------------------------------------------------------
A curve's transition is summarised by the *flat -> linear rise -> plateau* curve in log step
that joins its baseline to its plateau and fits the rise best (least squares, uniform weight in
``x = ln(step)``). The **onset** is the
first knee ``a`` of that approximation, the **end** the second knee ``b`` and the **midpoint**
``(a + b) / 2`` (all reported in updates, ``exp`` of the knee). For a piecewise-linear ``ramp``
this is exact; for smooth shapes the knees are a property of the shape alone (constants in units
of its log-step scale, computed once by :func:`knee_constants`; a logistic of scale ``s`` has
its onset at ``m - 2.60 s``, where it has risen by 6.9% of its height).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SHAPES = ("ramp", "sigmoid", "gompertz", "rgompertz", "flat")
SCHEDULES = ("linear", "log", "mixed", "sparse")


@dataclass
class SimCurve:
    """A simulated emergence curve and its planted truth (steps in updates)."""

    steps: np.ndarray  # (n,) int64, sorted, unique, > 0
    values: np.ndarray  # (n,) float
    shape: str
    schedule: str
    emergent: bool
    onset: float = np.nan  # true onset in updates (nan for flat curves)
    midpoint: float = np.nan
    end: float = np.nan
    params: dict[str, float] = field(default_factory=dict)


def make_schedule(kind: str = "linear", n: int = 300, last_step: int = 10_000) -> np.ndarray:
    """Checkpoint steps (sorted, unique, >= 1).

    ``linear``: evenly spaced; ``log``: log-spaced from 1 (duplicates after rounding removed,
    so fewer than ``n``); ``mixed``: half log-spaced, half even, like the trainer's dense
    schedule; ``sparse``: 30 log-spaced points over three decades, like published checkpoints.
    """
    if kind not in SCHEDULES:
        raise ValueError(f"schedule: must be one of {', '.join(SCHEDULES)}; got {kind!r}")
    if n < 2 or last_step < n:
        raise ValueError(f"schedule: need 2 <= n <= last_step, got n={n}, last_step={last_step}")
    if kind == "linear":
        s = np.linspace(last_step / n, last_step, n)
    elif kind == "log":
        s = np.geomspace(1, last_step, n)
    elif kind == "mixed":
        s = np.concatenate([np.geomspace(1, last_step, n // 2), np.linspace(last_step / n, last_step, n - n // 2)])
    else:
        s = np.geomspace(last_step / 1000, last_step, 30)
    return np.unique(np.maximum(1, np.round(s)).astype(np.int64))


def unit_rise(shape: str, u: np.ndarray) -> np.ndarray:
    """Unit rise (0 -> 1) in the standardised log step ``u``."""
    if shape == "sigmoid":
        return 0.5 * (1.0 + np.tanh(0.5 * u))  # logistic, overflow-free
    if shape == "gompertz":  # quick start, slow approach to the plateau
        return np.exp(-np.exp(-u))
    if shape == "rgompertz":  # slow start, sharp finish
        return -np.expm1(-np.exp(np.minimum(u, 50.0)))
    if shape == "ramp":  # knees at u = 0 and u = 1
        return np.clip(u, 0.0, 1.0)
    raise ValueError(f"shape: must be one of {', '.join(SHAPES)}; got {shape!r}")


@functools.lru_cache(maxsize=None)
def knee_constants(shape: str) -> tuple[float, float]:
    """Knees ``(ka, kb)`` of the least-squares ramp from 0 to 1 that best fits a unit shape.

    In units of the shape's scale: a curve ``f((x - m) / s)`` has its onset at ``m + ka s`` and
    its end at ``m + kb s``. The ramp's levels are the curve's asymptotes (with fitted levels the
    knees would depend on how much flat curve is in view); uniform weight in log step.
    """
    if shape == "ramp":
        return 0.0, 1.0
    from scipy.optimize import minimize

    u = np.linspace(-25, 25, 20_001)
    f = unit_rise(shape, u)

    def rss(k: np.ndarray) -> float:  # levels fixed at the asymptotes 0 and 1: window-free
        a, w = k[0], np.exp(k[1])
        return float(np.sum((f - np.clip((u - a) / w, 0.0, 1.0)) ** 2))

    best = min((minimize(rss, np.array([a0, np.log(4.0)]), method="Nelder-Mead",
                         options={"xatol": 1e-7, "fatol": 1e-14, "maxiter": 4000}) for a0 in (-3.0, -1.0)),
               key=lambda r: r.fun)
    a, w = float(best.x[0]), float(np.exp(best.x[1]))
    return a, a + w


def simulate_curve(shape: str = "sigmoid", schedule: str = "mixed", *, n: int = 300,
                   last_step: int = 10_000, onset: float | None = None, width: float | None = None,
                   baseline: float | None = None, rise: float | None = None, noise: float | None = None,
                   noise_ar: float = 0.0, seed: int = 0) -> SimCurve:
    """One curve with a planted transition (or none, for ``shape='flat'``).

    Parameters
    ----------
    shape : {"ramp", "sigmoid", "gompertz", "rgompertz", "flat"}
    schedule : {"linear", "log", "mixed", "sparse"}
        Checkpoint schedule, see :func:`make_schedule`.
    n, last_step : int
        Checkpoints requested and the last step.
    onset : float, optional
        True onset in updates; default log-uniform inside the observed window (at least 10% of
        the checkpoints before it, the end of the rise before the last step).
    width : float, optional
        Rise width ``ln(end / onset)``; default uniform in [0.3, 1.5].
    baseline, rise, noise : float, optional
        Level before the rise (default U[0.02, 0.1]), height of the rise (U[0.3, 0.8]) and the
        standard deviation of Gaussian noise (U[0.01, 0.04]).
    noise_ar : float
        AR(1) coefficient of the noise across checkpoints (0: independent).
    seed : int
    """
    if shape not in SHAPES:
        raise ValueError(f"shape: must be one of {', '.join(SHAPES)}; got {shape!r}")
    rng = np.random.default_rng(seed)
    steps = make_schedule(schedule, n, last_step)
    x = np.log(steps)
    baseline = rng.uniform(0.02, 0.1) if baseline is None else baseline
    rise = rng.uniform(0.3, 0.8) if rise is None else rise
    noise = rng.uniform(0.01, 0.04) if noise is None else noise
    width = rng.uniform(0.3, 1.5) if width is None else width
    eps = rng.normal(0.0, noise, len(x))
    if noise_ar:
        for i in range(1, len(eps)):  # stationary AR(1) with the same marginal sd
            eps[i] = noise_ar * eps[i - 1] + np.sqrt(1 - noise_ar**2) * eps[i]
    params = dict(baseline=baseline, rise=rise, noise=noise, width=width)
    if shape == "flat":
        return SimCurve(steps, baseline + eps, shape, schedule, False, params=params)
    if onset is None:
        lo, hi = x[len(x) // 10], x[-1] - width - 0.2
        onset = float(np.exp(rng.uniform(lo, max(lo, hi))))
    ka, kb = knee_constants(shape)
    s = width / (kb - ka)
    m = np.log(onset) - ka * s
    y = baseline + rise * unit_rise(shape, (x - m) / s) + eps
    params.update(scale=s, center=float(np.exp(m)))
    return SimCurve(steps, y, shape, schedule, True, onset=float(onset),
                    midpoint=float(np.exp(np.log(onset) + width / 2)),
                    end=float(onset * np.exp(width)), params=params)


def simulate_curves(n_curves: int, *, shapes: tuple[str, ...] = ("ramp", "sigmoid", "gompertz", "rgompertz"),
                    schedules: tuple[str, ...] = ("linear", "mixed"), seed: int = 0, **kwargs: Any) -> list[SimCurve]:
    """``n_curves`` curves cycling through ``shapes`` x ``schedules``, seeds ``seed + i``."""
    combos = [(sh, sc) for sh in shapes for sc in schedules]
    return [simulate_curve(*combos[i % len(combos)], seed=seed * 100_003 + i, **kwargs) for i in range(n_curves)]


__all__ = ["SCHEDULES", "SHAPES", "SimCurve", "knee_constants", "make_schedule", "simulate_curve", "simulate_curves",
           "unit_rise"]
