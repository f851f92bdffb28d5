"""The frontier's figure: the formed fraction per (frequency, reliability) cell with the
boundary's posterior median, its band and the GLM contour; of a tidy frame or of a fitted frontier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ihstats.figures.save import save_figure  # first: it sets the Agg backend before pyplot loads

import matplotlib.pyplot as plt
from matplotlib.ticker import NullLocator
import numpy as np


# ================================================================== frontier: formed fraction and boundary
def _log_edges(levels: Any) -> Any:
    """Cell edges on a log axis: geometric midpoints, padded at both ends."""
    lv = np.log(np.sort(np.asarray(levels, dtype=float)))
    mid = (lv[1:] + lv[:-1]) / 2
    return np.exp(np.r_[lv[0] - (mid[0] - lv[0]), mid, lv[-1] + (lv[-1] - mid[-1])])


def _in_cells_with_runs(grid: Any, f_edges: Any, r_edges: Any, f: Any, r: Any) -> Any:
    """Whether each point (f, r) lies in a cell of ``grid`` (rows reliability, columns frequency)
    that holds runs; a point outside the grid or at NaN does not."""
    f, r = np.asarray(f, dtype=float), np.asarray(r, dtype=float)
    i = np.searchsorted(r_edges, r) - 1
    j = np.searchsorted(f_edges, f) - 1
    ok = np.isfinite(r) & (i >= 0) & (i < grid.shape[0]) & (j >= 0) & (j < grid.shape[1])
    vals = grid.to_numpy()
    ok[ok] = np.isfinite(vals[i[ok], j[ok]])
    return ok


def plot_frontier_map(cells: Any, frontier: Any, *, hdi_prob: float = 0.9, glm_label: str = "GLM",
                      title: str = "", title_size: float = 9, path: str | Path | None = None,
                      colour_label: str = "fraction of runs with an induction head") -> Any:
    """The formed fraction per (frequency, reliability) cell with the frontier's posterior median,
    its band and the GLM contour. A full grid is a heatmap; a design with empty cells (transects
    through one corner) draws only the cells that hold runs, as discs labelled formed/runs, on a
    white ground (a heatmap of such a design is mostly grey "no runs"). The lines are solid only
    over cells with runs; between transects the median is dotted (the model's, not measured), and
    the legend sits below the axes, off the data.

    ``cells``: ``frequency, reliability, n_formed, n_runs``; ``frontier``: ``frequency,
    reliability_median, reliability_lo, reliability_hi, glm_reliability`` (the tidy frames of
    ``ihstats.frontier``, as saved).
    """
    counts = cells.groupby(["frequency", "reliability"])[["n_formed", "n_runs"]].sum()
    grid = counts.assign(frac=lambda d: d["n_formed"] / d["n_runs"])["frac"].unstack("frequency")  # rows r
    # knobs live in (0, 1]: the top cells' padding stops at 1
    fe, re_ = (np.minimum(_log_edges(v.to_numpy()), 1.0) for v in (grid.columns, grid.index))
    sparse = bool(grid.isna().to_numpy().any())
    fig, ax = plt.subplots(figsize=(5.3, 4.6))
    if sparse:
        mesh = _cell_markers(ax, counts.reset_index())
        line, band = "k", "0.55"
    else:
        mesh = ax.pcolormesh(fe, re_, grid.to_numpy(), cmap="viridis", vmin=0, vmax=1)
        line, band = "white", "white"
    fig.colorbar(mesh, ax=ax, label=colour_label)
    fr = frontier
    seen = _in_cells_with_runs(grid, fe, re_, fr["frequency"], fr["reliability_median"])
    seen_glm = _in_cells_with_runs(grid, fe, re_, fr["frequency"], fr["glm_reliability"])
    ax.fill_between(fr["frequency"], fr["reliability_lo"], fr["reliability_hi"], where=seen, color=band,
                    alpha=0.35, lw=0, zorder=1, label=f"{int(round(hdi_prob * 100))}% HDI band")
    where = " (in cells with runs)" if sparse else ""
    if sparse:  # between the transects the model's line is drawn, thin and dotted: read, not measured
        ax.plot(fr["frequency"], np.where(seen, np.nan, fr["reliability_median"]), color=line, lw=0.8, ls=":",
                zorder=4, label="between the cells with runs: the model's frontier (not measured)")
    ax.plot(fr["frequency"], np.where(seen, fr["reliability_median"], np.nan), color=line, lw=2, zorder=4,
            label="frontier: posterior median of p = 0.5" + where)
    ax.plot(fr["frequency"], np.where(seen_glm, fr["glm_reliability"], np.nan), color="orange", lw=1.2, ls="--",
            zorder=4, label=glm_label)
    ax.set(xscale="log", yscale="log", xlim=(fe[0], fe[-1]), ylim=(re_[0], re_[-1]),
           xlabel="frequency  P(A B ... A)", ylabel="reliability  P(B | A B ... A)")
    # label the grid's own levels (a log axis under one decade labels every minor tick, and they collide)
    for axis, levels in ((ax.xaxis, grid.columns), (ax.yaxis, grid.index)):
        axis.set_minor_locator(NullLocator())  # a minor tick between levels showed as a tick without a label
        axis.set_ticks(levels, [f"{v:g}" for v in levels], fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=45, ha="right")
    if title:
        ax.set_title(title, fontsize=title_size, wrap=True)
    if fr["reliability_median"].notna().any():  # no legend for lines that are not there
        if sparse:  # below the axes: on white the lines are dark, and the cells stay uncovered
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, fontsize=7, frameon=False)
        else:  # the heatmap's white lines need its dark ground: inside, over the unformed corner
            ax.legend(loc="lower left", fontsize=7, framealpha=0.6)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig


def _cell_markers(ax: Any, cells: Any) -> Any:
    """Each cell with runs as a disc coloured by its formed fraction and labelled ``formed/runs``;
    returns the mappable for the colour bar."""
    frac = (cells["n_formed"] / cells["n_runs"]).to_numpy(dtype=float)
    sc = ax.scatter(cells["frequency"], cells["reliability"], c=frac, cmap="viridis", vmin=0, vmax=1, s=380,
                    edgecolors="0.25", linewidths=0.6, zorder=3)
    for c, fr in zip(cells.itertuples(), frac):
        ax.text(c.frequency, c.reliability, f"{int(c.n_formed)}/{int(c.n_runs)}", ha="center", va="center",
                fontsize=6.5, color="black" if fr > 0.6 else "white", zorder=5)
    return sc


# ================================================================== frontier of a fit
def plot_frontier(results: Any, path: str | Path | None = None, hdi_prob: float = 0.9) -> Any:
    """The frontier map (:func:`plot_frontier_map`) of a fitted
    :class:`ihstats.frontier.results.FrontierResults`; the title states a degenerate boundary or
    separated data. ``path``: stem of the ``.png`` and ``.pdf``."""
    note = results.boundary_note(hdi_prob)
    title = note or results.separation_short
    return plot_frontier_map(results.model.cells, results.frontier(hdi_prob), hdi_prob=hdi_prob,
                             glm_label=f"GLM ({results.glm.method})", title=title,
                             title_size=7 if note else 9, path=path)
