"""Schedules of a run: when metrics are evaluated, the learning rate at each update, and the
until-emergence stop rule's steps. Pure functions of the config, so resume and the packed trainer
follow the same schedule."""

from __future__ import annotations

import math

import numpy as np

from ihtrain.config import RunConfig


def eval_schedule(total_steps: int, n_evals: int, log_fraction: float) -> np.ndarray:
    """Steps (updates done) at which metrics are evaluated: log-spaced early, even later.

    ``round(n_evals * log_fraction)`` points are log-spaced over [1, total] and the rest evenly
    spaced over [0, total]; integer collisions at small steps are refilled with more evenly
    spaced points, so the schedule has at least ``min(n_evals, total + 1)`` distinct steps (a
    few more where the two sets do not coincide), always including 0 and ``total_steps``.
    """
    target = min(n_evals, total_steps + 1)
    n_log = int(round(n_evals * log_fraction))
    log_pts = np.unique(np.round(np.geomspace(1, max(total_steps, 1), max(n_log, 1)))) if n_log else []
    n_lin = max(target - len(log_pts), 2)
    while True:
        lin = np.round(np.linspace(0, total_steps, n_lin))
        steps = np.unique(np.concatenate([log_pts, lin, [0, total_steps]])).astype(np.int64)
        if len(steps) >= target or n_lin > total_steps + 1:
            return steps
        n_lin += target - len(steps)


def lr_at(step: int, cfg: RunConfig, total_steps: int, crossing: int | None = None) -> float:
    """Linear warmup, then constant, cosine to ``min_lr_frac * lr``, or wsd.

    wsd (warmup-stable-decay): constant until the last ``decay_frac`` of the budget, then linear
    to ``min_lr_frac * lr``; its trajectory equals the constant schedule's until the decay starts,
    and the final anneal sharpens attention patterns that a constant high rate keeps noisy.
    Under ``budget = "until-emergence"`` the budget is unknown until max PS crosses the threshold
    (at update ``crossing``): wsd stays constant until then, and afterwards the budget is the stop
    step ``ceil(crossing * (1 + emergence_margin))`` (or the cap ``max_steps`` if that comes first),
    so the anneal fills the final ``decay_frac`` of it, never starting before ``crossing``. The
    onset is thus measured at a constant rate.
    """
    t = cfg.train
    warmup = t.warmup_steps or int(round(t.warmup_frac * total_steps))
    if step < warmup:
        return t.lr * (step + 1) / warmup
    if t.schedule == "constant":
        return t.lr
    floor = t.min_lr_frac * t.lr
    if t.schedule == "wsd":
        earliest = 0
        if t.budget == "until-emergence":
            if crossing is None:
                return t.lr
            total_steps = min(total_steps, emergence_stop_step(cfg, crossing))  # the cap may come first
            earliest = crossing
        decay_start = max(earliest, int(round((1 - t.decay_frac) * total_steps)))
        if step < decay_start:
            return t.lr
        frac = min(1.0, (step - decay_start) / max(1, total_steps - decay_start))  # past the stop: the floor
        return t.lr - (t.lr - floor) * frac
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    return floor + 0.5 * (t.lr - floor) * (1 + math.cos(math.pi * progress))


def emergence_stop_step(cfg: RunConfig, crossing: int) -> int:
    """Until-emergence: the update to stop at once max PS crossed the threshold at ``crossing``."""
    return max(crossing + 1, math.ceil(crossing * (1 + cfg.train.emergence_margin)))


def emergence_recheck_step(cfg: RunConfig, crossing: int, step: int) -> int:
    """Until-emergence: where to check again when the run had not *crossed* (uncensored Bayesian
    onset and max PS >= its formed level, :func:`ihstats.emergence.formation`'s ``crossed``; the stop
    rule, not the certified verdict) at its stop step: a quarter
    of the margin later, so a rise that came late gets plateau points behind it."""
    return step + max(1, math.ceil(crossing * cfg.train.emergence_margin / 4))
