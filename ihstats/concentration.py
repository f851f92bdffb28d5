"""Concentration of a per-head score: how few heads carry it (Sabry and Belz 2025's claim that
natural-only circuits are more concentrated), per layer and over training.

From the per-head rows a run already logs (``metrics.parquet``: every evaluation has every head's
score), :func:`layer_concentration` gives, per step and layer, the effective number of heads
``(sum s)^2 / sum s^2`` and the top share (the ``k = max(1, round_half_up(frac H))`` largest
scores over the summed positive score; ``frac = 0.02``, the paper's top 2%, is one head for
``H < 75``). :func:`concentration_at_level` reads them at the first step where max-over-heads
reaches a level, so conditions are compared at matched PS rather than at matched step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ihstats.contract import max_over_heads


def concentration(scores, k: int) -> tuple[float, float]:
    """Top-k share and effective number of heads of a score, over heads with positive score.

    Parameters
    ----------
    scores : array_like
        Per-head scores (any shape; flattened).
    k : int
        How many of the largest scores the share counts (>= 1).

    Returns
    -------
    tuple of float
        ``(sum of the k largest positive scores / sum of positive scores, (sum s)^2 / sum s^2)``;
        ``(0.0, 0.0)`` when no score is positive.
    """
    if k < 1:
        raise ValueError(f"k: must be >= 1, got {k}")
    s = np.asarray(scores, dtype=np.float64).ravel()
    s = np.sort(s[s > 0])[::-1]
    if s.size == 0:
        return 0.0, 0.0
    total = s.sum()
    return float(s[:k].sum() / total), float(total ** 2 / np.sum(s ** 2))


def layer_concentration(metrics: pd.DataFrame, metric: str = "ps", frac: float = 0.02) -> pd.DataFrame:
    """Per step and layer: ``top_share`` and ``n_eff`` of one run's per-head ``metric``.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Tidy rows of one run (``step, metric, layer, head, value``).
    metric : str
        A per-head metric (default ``ps``).
    frac : float
        Share of a layer's heads counted by ``top_share``: ``k = max(1, round_half_up(frac H))``.

    Returns
    -------
    pandas.DataFrame
        Columns ``step, layer, k, top_share, n_eff`` (NaN heads skipped).
    """
    if not 0 < frac <= 1:
        raise ValueError(f"frac: must lie in (0, 1], got {frac}")
    rows = metrics[(metrics["metric"] == metric) & (metrics["head"] >= 0)]
    if rows.empty:
        raise ValueError(f"metric: no per-head rows of {metric!r}; have {sorted(metrics['metric'].unique())}")
    out = []
    for (step, layer), g in rows.groupby(["step", "layer"], sort=True):
        v = g["value"].to_numpy(float)
        k = max(1, int(np.floor(frac * len(v) + 0.5)))
        share, neff = concentration(v[np.isfinite(v)], k)
        out.append({"step": int(step), "layer": int(layer), "k": k, "top_share": share, "n_eff": neff})
    return pd.DataFrame(out)


def concentration_at_level(metrics: pd.DataFrame, level: float, metric: str = "ps",
                           frac: float = 0.02) -> pd.DataFrame:
    """:func:`layer_concentration` at the first step where max-over-heads ``metric`` >= ``level``
    (one row per layer, plus ``level``); empty when the run never reaches it."""
    curve = max_over_heads(metrics, metric)
    hit = curve.index[curve.to_numpy() >= level]
    if not len(hit):
        return pd.DataFrame(columns=["step", "layer", "k", "top_share", "n_eff", "level"])
    step = int(hit[0])
    conc = layer_concentration(metrics[metrics["step"] == step], metric, frac)
    return conc.assign(level=float(level))


__all__ = ["concentration", "concentration_at_level", "layer_concentration"]
