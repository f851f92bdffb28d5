"""Onset-coverage simulator: curves that are *not* the Bayesian detector's own model.

The detector fits three linear segments in log step with independent Gaussian noise. This
generator breaks each of those assumptions on purpose, to measure how often its intervals
cover the truth (``benchmarks/bench_emergence.py``, ``tests/ihstats/test_emergence.py``):

* noise is AR(1) across checkpoints (coefficient U[0, 0.5], like a fixed probe set evaluated
  at nearby weights) with Student-t (5 df) innovations, scaled to the requested marginal sd;
* shapes are smooth, composite or taken as a maximum over heads.

Shapes and their onset estimands (``x = ln step``; all onsets reported in updates):

``ramp``
    Baseline, linear rise in log step from knee ``a`` to knee ``b``, plateau. Onset: ``a``.
``sigmoid``
    Logistic in log step, centre ``m``, scale ``s``. Onset: the first knee of the
    least-squares ramp between its asymptotes (uniform weight in log step), ``m - 2.60 s``,
    where the curve has risen 6.9% of its height (the package's shared definition,
    :func:`ihstats.simulate.curves.knee_constants`).
``maxheads``
    The maximum over 8 heads per checkpoint: one carrier head with a ``ramp`` rise, 7 flat heads
    at or just below the carrier's baseline, each with its own noise. The maximum lifts the
    baseline and delays the visible knee. Onset: the carrier's knee ``a``.
``twostage``
    Two ramps separated by a plateau: the first takes 30-60% of the total rise. Onset: the
    first knee (the transition starts there); the second knee is recorded as ``onset2``.
``late``
    A ramp that is 30-70% of the way up at the last checkpoint (the plateau is never seen).
    Onset: its knee ``a``.
``flat``
    Baseline plus noise; no onset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ihstats.simulate.curves import SimCurve, knee_constants, make_schedule, unit_rise

ONSET_SHAPES = ("ramp", "sigmoid", "maxheads", "twostage", "late")
N_HEADS = 8


def correlated_noise(rng: np.random.Generator, n: int, sd: float, ar: float, df: float = 5.0) -> np.ndarray:
    """Stationary AR(1) noise with Student-t innovations, marginal sd ``sd``."""
    e = rng.standard_t(df, n) / np.sqrt(df / (df - 2))
    for i in range(1, n):
        e[i] = ar * e[i - 1] + np.sqrt(1 - ar * ar) * e[i]
    return sd * e


def _ramp(x: np.ndarray, a: float, w: float) -> np.ndarray:
    return np.clip((x - a) / w, 0.0, 1.0)


def _place(rng: np.random.Generator, x: np.ndarray, length: float) -> float:
    """A start ``a`` with >= 10% of the checkpoints before it and ``a + length`` before the last
    step (less 0.2 in log step)."""
    lo, hi = x[len(x) // 10], x[-1] - length - 0.2
    return float(rng.uniform(lo, max(lo, hi)))


def simulate_onset_curve(shape: str, schedule: str, noise: float, seed: int, *, n: int = 200,
                         last_step: int = 10_000) -> SimCurve:
    """One curve of ``shape`` (module docstring) on ``schedule`` (:func:`make_schedule`) with
    marginal noise sd ``noise``; ``params`` holds the draws (and ``onset2`` for ``twostage``)."""
    if shape not in (*ONSET_SHAPES, "flat"):
        raise ValueError(f"shape: must be one of {', '.join((*ONSET_SHAPES, 'flat'))}; got {shape!r}")
    rng = np.random.default_rng(seed)
    steps = make_schedule(schedule, n, last_step)
    x = np.log(steps)
    base, rise = rng.uniform(0.02, 0.1), rng.uniform(0.3, 0.8)
    width, ar = rng.uniform(0.3, 1.5), rng.uniform(0.0, 0.5)
    eps = correlated_noise(rng, x.size, noise, ar)
    params: dict[str, Any] = dict(baseline=base, rise=rise, noise=noise, width=width, ar=ar)
    if shape == "flat":
        return SimCurve(steps, base + eps, shape, schedule, False, params=params)
    if shape == "twostage":
        return _twostage(rng, steps, x, base, rise, eps, {**params, "schedule": schedule})
    if shape == "late":
        a = x[-1] - rng.uniform(0.3, 0.7) * width
        y = base + rise * _ramp(x, a, width) + eps
    elif shape == "sigmoid":
        ka, kb = knee_constants("sigmoid")
        a = _place(rng, x, width)
        s = width / (kb - ka)
        y = base + rise * unit_rise("sigmoid", (x - (a - ka * s)) / s) + eps
    else:
        a = _place(rng, x, width)
        y = base + rise * _ramp(x, a, width) + eps
        if shape == "maxheads":
            others = [base - rng.uniform(0, 0.03) + correlated_noise(rng, x.size, noise, ar)
                      for _ in range(N_HEADS - 1)]
            y = np.max(np.vstack([y, *others]), axis=0)
    return SimCurve(steps, y, shape, schedule, True, onset=float(np.exp(a)),
                    midpoint=float(np.exp(a + width / 2)), end=float(np.exp(a + width)), params=params)


def _twostage(rng: np.random.Generator, steps: np.ndarray, x: np.ndarray, base: float, rise: float,
              eps: np.ndarray, params: dict[str, Any]) -> SimCurve:
    frac = rng.uniform(0.3, 0.6)
    w1, gap, w2 = rng.uniform(0.3, 1.0), rng.uniform(0.5, 1.5), rng.uniform(0.3, 1.0)
    room = 0.8 * (x[-1] - 0.2 - x[len(x) // 10])
    shrink = min(1.0, room / (w1 + gap + w2))  # short windows (dense linear) squeeze the stages
    w1, gap, w2 = w1 * shrink, gap * shrink, w2 * shrink
    a1 = _place(rng, x, w1 + gap + w2)
    a2 = a1 + w1 + gap
    y = base + rise * (frac * _ramp(x, a1, w1) + (1 - frac) * _ramp(x, a2, w2)) + eps
    params.update(frac=frac, gap=gap, onset2=float(np.exp(a2)))
    return SimCurve(steps, y, "twostage", params.pop("schedule"), True, onset=float(np.exp(a1)), midpoint=np.nan,
                    end=float(np.exp(a2 + w2)), params=params)


__all__ = ["N_HEADS", "ONSET_SHAPES", "correlated_noise", "simulate_onset_curve"]
