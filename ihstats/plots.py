"""Figure functions (seaborn/matplotlib, Agg backend), each written as PNG and PDF.

One section per figure; every function takes tidy data or results objects, returns the
matplotlib Figure, and writes ``<path>.png`` and ``<path>.pdf`` when ``path`` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def save_figure(fig: Any, path: str | Path) -> list[Path]:
    """Write ``fig`` as ``path`` with suffixes .png and .pdf (a given suffix is replaced)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for suf in (".png", ".pdf"):
        p = path.with_suffix(suf)
        fig.savefig(p, dpi=150, bbox_inches="tight")
        out.append(p)
    return out


# ================================================================== emergence of one run
def plot_emergence(steps: Any, values: Any, result: Any, *, ax: Any = None, path: str | Path | None = None,
                   title: str | None = None, metric: str = "max PS", true_onset: float | None = None) -> Any:
    """A run's curve on a log step axis with onset, its interval band, midpoint and end.

    Parameters
    ----------
    steps, values : array-like
        The curve (steps > 0 are drawn).
    result : ihstats.emergence.EmergenceResult
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
                       label=f"onset interval ({result.level:.0%})" if result.method == "bayes" else "onset bracket")
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


__all__ = ["plot_emergence", "save_figure"]


# ================================================================== law: posterior predictive check
def plot_ppc_bands(frame: Any, *, path: str | Path | None = None, hdi_prob: float = 0.9) -> Any:
    """Posterior predictive check of the UPT law that stays readable under heavy tails: per run
    (sorted by predicted median), the predictive median and the 50% and ``hdi_prob`` quantile bands
    of log UPT, with the observed value on top (censored runs as open triangles at their last
    step). The y axis is clipped to the data's range plus a margin: a Student-t with nu near 1 has
    draws at +-1e6, which would flatten every band.

    ``frame``: ``ppc_frame`` columns ``run_id, observed, censored, q_lo, q25, q50, q75, q_hi``.
    """
    f = frame.sort_values("q50", ignore_index=True)
    x = np.arange(len(f))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * len(f) + 2), 4.2))
    ax.fill_between(x, f["q_lo"], f["q_hi"], step="mid", color="C0", alpha=0.18,
                    label=f"{hdi_prob:.0%} predictive")
    ax.fill_between(x, f["q25"], f["q75"], step="mid", color="C0", alpha=0.35, label="50% predictive")
    ax.plot(x, f["q50"], "-", color="C0", lw=1, label="predictive median")
    obs = ~f["censored"].astype(bool)
    ax.plot(x[obs], f.loc[obs, "observed"], "o", color="k", ms=4, label="observed")
    if (~obs).any():
        ax.plot(x[~obs], f.loc[~obs, "observed"], "^", mfc="none", color="C3", ms=6,
                label="censored (last step)")
    lo, hi = float(f["observed"].min()), float(f["observed"].max())
    pad = max(1.0, 0.5 * (hi - lo))
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xticks(x, f["run_id"].astype(str).str[:6], rotation=90, fontsize=7)
    ax.set_xlabel("run (sorted by predicted median)")
    ax.set_ylabel("log UPT (updates)")
    ax.set_title("Posterior predictive check (y clipped to the data range +- margin)", fontsize=10)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig


# ================================================================== frontier: formed fraction and boundary
def _log_edges(levels: Any) -> Any:
    """Cell edges on a log axis: geometric midpoints, padded at both ends."""
    lv = np.log(np.sort(np.asarray(levels, dtype=float)))
    mid = (lv[1:] + lv[:-1]) / 2
    return np.exp(np.r_[lv[0] - (mid[0] - lv[0]), mid, lv[-1] + (lv[-1] - mid[-1])])


def plot_frontier_map(cells: Any, frontier: Any, *, hdi_prob: float = 0.9, glm_label: str = "GLM",
                      title: str = "", title_size: float = 9, path: str | Path | None = None) -> Any:
    """Heatmap of the formed fraction per (frequency, reliability) cell with the frontier's
    posterior median, its band and the GLM contour.

    ``cells``: ``frequency, reliability, n_formed, n_runs``; ``frontier``: ``frequency,
    reliability_median, reliability_lo, reliability_hi, glm_reliability`` (the tidy frames of
    ``ihstats.frontier``, as saved).
    """
    grid = (cells.groupby(["frequency", "reliability"])[["n_formed", "n_runs"]].sum()
            .assign(frac=lambda d: d["n_formed"] / d["n_runs"])["frac"]
            .unstack("frequency"))                        # rows reliability, cols frequency
    # knobs live in (0, 1]: the top cells' padding stops at 1
    fe, re_ = (np.minimum(_log_edges(v.to_numpy()), 1.0) for v in (grid.columns, grid.index))
    fig, ax = plt.subplots(figsize=(5.3, 4.3))
    mesh = ax.pcolormesh(fe, re_, grid.to_numpy(), cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax, label="fraction of runs with an induction head")
    fr = frontier
    ax.fill_between(fr["frequency"], fr["reliability_lo"], fr["reliability_hi"], color="white",
                    alpha=0.35, label=f"{int(round(hdi_prob * 100))}% HDI band")
    ax.plot(fr["frequency"], fr["reliability_median"], color="white", lw=2,
            label="frontier (posterior median, p = 0.5)")
    ax.plot(fr["frequency"], fr["glm_reliability"], color="orange", lw=1.2, ls="--", label=glm_label)
    ax.set(xscale="log", yscale="log", xlim=(fe[0], fe[-1]), ylim=(re_[0], re_[-1]),
           xlabel="frequency  P(A B ... A)", ylabel="reliability  P(B | A B ... A)")
    if title:
        ax.set_title(title, fontsize=title_size, wrap=True)
    if fr["reliability_median"].notna().any():  # no legend for lines that are not there
        ax.legend(loc="lower left", fontsize=7, framealpha=0.6)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig

