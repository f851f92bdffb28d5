"""The emergence figure of one run: its curve on a log step axis with the onset and its interval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ihstats.figures.save import save_figure  # first: it sets the Agg backend before pyplot loads

import matplotlib.pyplot as plt
import numpy as np


def plot_emergence(steps: Any, values: Any, result: Any, *, ax: Any = None, path: str | Path | None = None,
                   title: str | None = None, metric: str = "max PS", true_onset: float | None = None) -> Any:
    """A run's curve on a log step axis with onset, its interval band, midpoint and end.

    Parameters
    ----------
    steps, values : array-like
        The curve (steps > 0 are drawn).
    result : ihstats.detectors.EmergenceResult
        Censored results draw a dashed line at the censoring step instead.
    ax : matplotlib Axes, optional
    path : str or Path, optional
        Written as PNG and PDF.
    title, metric : labels.
    true_onset : float, optional
        A known onset (simulations), drawn dotted.

    Returns
    -------
    matplotlib.figure.Figure
    """
    s = np.asarray(steps, float)
    v = np.asarray(values, float)
    keep = s > 0
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 3.4))
    else:
        fig = ax.figure
    ax.plot(s[keep], v[keep], ".", ms=3, color="0.35", label=metric)
    ax.set_xscale("log")
    if result.censored:
        ax.axvline(result.last_step, color="C3", ls="--", label=f"censored at {result.last_step:.0f}")
    else:
        if np.isfinite(result.onset_lo) and np.isfinite(result.onset_hi):
            ax.axvspan(result.onset_lo, result.onset_hi, color="C0", alpha=0.2,
                       label=f"onset interval ({result.level:.0%})" if result.interval_kind == "credible"
                       else "onset bracket")
        ax.axvline(result.onset, color="C0", label=f"onset {result.onset:.0f}")
        if np.isfinite(result.midpoint):
            ax.axvline(result.midpoint, color="C1", ls="--", label=f"midpoint {result.midpoint:.0f}")
        if np.isfinite(result.end):
            ax.axvline(result.end, color="C2", ls=":", label=f"end {result.end:.0f}")
    if true_onset is not None and np.isfinite(true_onset):
        ax.axvline(true_onset, color="k", ls=":", lw=1, label=f"true onset {true_onset:.0f}")
    ax.set_xlabel("step (updates)")
    ax.set_ylabel(metric)
    ax.set_title(title or f"emergence ({result.method})")
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    if path is not None:
        save_figure(fig, path)
    return fig
