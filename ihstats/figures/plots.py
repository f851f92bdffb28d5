"""Figure functions of one fit or one run (seaborn/matplotlib, Agg backend) and ``save_figure``.

The figure home of the package: every function that draws lives here, in
:mod:`ihstats.figures.plots_paper` (figures that compare runs or conditions: the paper figures) or, for
one run's training curves, in :mod:`ihtrain.plots`. Each takes tidy data or a results object and
returns the matplotlib Figure; ``path`` (a stem), where accepted, writes it through
:func:`save_figure`, the one place a figure is written (PNG and PDF, atomically).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import logging

import matplotlib

matplotlib.use("Agg")
# "findfont: Font family ... not found" is logged once per missing font on machines without it:
# the fallback font draws the same figure, so it is noise on every fit's console
logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator, StrMethodFormatter  # noqa: E402
import numpy as np  # noqa: E402

from ihstats.base import _bayes_compat  # noqa: E402
from ihstats.base.fileio import atomic_write  # noqa: E402

SUFFIXES = (".png", ".pdf")


def save_figure(fig: Any, path: str | Path, *, dpi: int = 150, close: bool = False) -> list[Path]:
    """Write ``fig`` as ``<path>.png`` and ``<path>.pdf`` (a suffix on ``path`` is replaced).

    Each file is written to a temporary name and renamed into place, so a reader (or a figure
    committed to git) never sees half a file. ``dpi`` applies to the PNG; ``close`` frees the
    figure afterwards (callers that draw many figures in one process).

    Returns
    -------
    list of Path
        The PNG and the PDF, in that order.
    """
    path = Path(path)
    out = []
    for suf in SUFFIXES:
        target = path.with_suffix(suf)
        # the temporary name has no image suffix: say the format explicitly
        atomic_write(target, lambda tmp, fmt=suf[1:]: fig.savefig(tmp, format=fmt, dpi=dpi,
                                                                   bbox_inches="tight"))
        out.append(target)
    if close:
        plt.close(fig)
    return out


# ================================================================== emergence of one run
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


# ================================================================== law: posterior predictive check
def plot_ppc_bands(frame: Any, *, path: str | Path | None = None, hdi_prob: float = 0.9) -> Any:
    """Posterior predictive check of the UPT law that stays readable under heavy tails: per run
    (sorted by predicted median), the predictive median and the 50% and ``hdi_prob`` quantile bands
    of log UPT, with the observed value on top (censored runs as open triangles at their last
    step). The y axis is clipped to the data's range plus a margin: a Student-t with nu near 1 has
    draws at +-1e6, which would flatten every band.

    ``frame``: ``ppc_frame`` columns ``run_id, label`` (the run by its factors, on the axis),
    ``observed, censored, q_lo, q25, q50, q75, q_hi``.
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
                label="not formed (at its last step)")
    lo, hi = float(f["observed"].min()), float(f["observed"].max())
    pad = max(1.0, 0.5 * (hi - lo))
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xticks(x, f["label"] if "label" in f else f["run_id"].astype(str).str[:6], rotation=90, fontsize=7)
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


def _sparse_log_ticks(axis: Any) -> None:
    """Label a log axis at 1, 2 and 5 per decade, minor ticks unlabelled: over less than two decades
    matplotlib labels every minor tick, and at 3-6 x 10^2 the labels collide."""
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def plot_obs_vs_pred(frame: Any, r: float, hdi_prob: float) -> Any:
    """Observed vs predicted UPT on log axes; censored runs as open triangles at last_step
    pointing up (their UPT lies above).

    ``frame``: :func:`ihstats.law.report.obs_vs_pred_frame` (``observed, obs_lo, obs_hi, predicted,
    pred_lo, pred_hi, censored``, UPT in updates); ``r``: the fit's r(predicted, observed).
    """
    import seaborn as sns  # only this figure uses seaborn's theme; it costs ~0.5 s to import

    # the theme for this figure only (sns.set_theme would restyle every later figure of the process)
    with sns.axes_style("ticks"), sns.plotting_context("paper"):
        fig, ax = plt.subplots(figsize=(4.6, 4.2))
        unc, cen = frame[~frame.censored], frame[frame.censored]
        yerr = np.array([unc.observed - unc.obs_lo, unc.obs_hi - unc.observed])
        xerr = np.array([unc.predicted - unc.pred_lo, unc.pred_hi - unc.predicted])
        ax.errorbar(unc.predicted, unc.observed, xerr=xerr,
                    yerr=np.where(np.isfinite(yerr), yerr, 0), fmt="o", ms=4, color="C0", lw=0.8,
                    label="emerged (onset, interval)")
        if len(cen):  # replicates of a cell share predicted and last step: one marker, with their count
            pts = cen.groupby([cen.predicted.round(6), cen.observed.round(6)]).size().reset_index(name="n")
            ax.scatter(pts.predicted, pts.observed, marker="^", s=40 * np.sqrt(pts.n), facecolors="none",
                       edgecolors="C3", label="not formed: UPT > last step (xN: runs at one point)")
            for p in pts[pts.n > 1].itertuples():
                ax.annotate(f"x{p.n}", (p.predicted, p.observed), xytext=(5, 3), textcoords="offset points",
                            fontsize=7, color="C3")
        lo = min(frame[["observed", "predicted"]].min()) / 1.5
        hi = max(frame[["observed", "predicted"]].max()) * 1.5
        ax.plot([lo, hi], [lo, hi], ls="--", color="0.5", lw=1, label="y = x")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
               xlabel=f"predicted UPT (posterior mean, {hdi_prob:.0%} HDI)",
               ylabel="observed UPT (updates)", title=f"r = {r:.3f} (uncensored runs)")
        for axis in (ax.xaxis, ax.yaxis):
            _sparse_log_ticks(axis)
        ax.legend(fontsize=7, frameon=False)
    sns.despine(fig)
    return fig


# ================================================================== posterior diagnostics (ArviZ)
# The only ArviZ plotting calls; what differs between ArviZ 0.x and 1 is in ihstats.base._bayes_compat.
def plot_trace(idata: Any, var_names: Any) -> Any:
    """Trace plot (compact) of ``var_names``."""
    fig = _bayes_compat.plot_trace(idata, var_names)
    if len(fig.axes) == 2 * len(var_names):  # rows of (density, trace) per name, on both ArviZ stacks
        for name, dens, trace in zip(var_names, fig.axes[0::2], fig.axes[1::2]):
            draws = np.asarray(idata.posterior[name]).ravel()
            lo, hi = np.quantile(draws, [0.005, 0.995])
            if draws.max() - draws.min() > 3 * (hi - lo):  # one far draw (nu's tail) would squash the rest
                pad = 0.1 * (hi - lo)
                dens.set_xlim(lo - pad, hi + pad)
                trace.set_ylim(lo - pad, hi + pad)
                dens.set_title(f"{name} (axes: central 99% of draws; max {draws.max():.3g})", fontsize=9)
    fig.tight_layout()  # ArviZ's default spacing lets each row's title overlap the ticks above it
    return fig


def plot_ppc(idata: Any, var_name: str, *, num_samples: int = 100) -> Any:
    """ArviZ's posterior predictive check of ``var_name`` from the fit's ``posterior_predictive``
    group (the saved ``idata.nc`` holds it, so ``az.plot_ppc`` reproduces this figure); titled."""
    fig = _bayes_compat.plot_ppc(idata, var_name, num_samples=num_samples)
    y = np.asarray(_bayes_compat.group_dataset(idata, "observed_data")[var_name]).ravel()
    cens = _censored_flags(idata, y.size)
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    pad = max(0.5, 0.25 * (hi - lo))  # a heavy-tailed replicate (nu near 1) would stretch the axis to +-20
    for ax in fig.axes:
        ax.set_xlim(lo - pad, hi + pad)
        if cens is not None:  # the runs themselves, split as the likelihood reads them
            bottom = ax.get_ylim()[0]
            ax.plot(y[~cens], np.full((~cens).sum(), bottom), "|", color="k", ms=10, label="formed: onset")
            if cens.any():
                ax.plot(y[cens], np.full(cens.sum(), bottom), "^", mfc="none", color="C3", ms=7,
                        label="not formed: its last step (censored)")
            ax.legend(fontsize=7, loc="upper left", frameon=False)
    n_cens = int(cens.sum()) if cens is not None else None
    fig.suptitle(f"Posterior predictive check (ArviZ): observed {var_name} against {num_samples} replicates\n"
                 + (f"({n_cens} censored runs at their last step, as the likelihood sees them; "
                    f"x axis: the data's range +- {pad:.1f})" if n_cens is not None else
                    "(censored runs at their last step, as the likelihood sees them)"), fontsize=8)
    return fig


def _censored_flags(idata: Any, n: int) -> Any:
    """``constant_data.censored`` of a law fit (``ihstats.law.model.add_run_data``), else None."""
    if "constant_data" not in _bayes_compat.groups(idata):
        return None
    const = _bayes_compat.group_dataset(idata, "constant_data")
    if "censored" not in const or const["censored"].size != n:
        return None
    return np.asarray(const["censored"], dtype=bool).ravel()


def plot_rank(idata: Any, var_names: Any) -> Any:
    """Rank plots of ``var_names`` (chains mixing: flat histograms)."""
    return _bayes_compat.plot_rank(idata, var_names)


def plot_posterior(idata: Any, var_names: Any, *, hdi_prob: float, ref_val: dict | None = None,
                   extra_ref: tuple[float, str] | None = None) -> Any:
    """Posterior densities with the HDI at an explicit width, optional reference lines
    ``ref_val = {name: value}`` (solid, "published") and ``extra_ref = (value, label)``, a second
    reference drawn dotted on every panel (the UPT report: the tokens form's a = b = 0.5). The
    references are named in each panel's legend, not written over the density."""
    fig = _bayes_compat.plot_posterior(idata, var_names, hdi_prob=hdi_prob)
    for name, ax in zip(var_names, fig.axes):
        if ref_val and name in ref_val:
            ax.axvline(ref_val[name], color="C3", lw=1.4, label=f"published {name} = {ref_val[name]:g}")
        if extra_ref is not None:
            ax.axvline(extra_ref[0], ls=":", color="0.3", lw=1.4, label=extra_ref[1])
        for text in ax.texts:  # ArviZ's "mean=", "90% HDI" and bound labels sit where a reference line may run
            text.set_bbox({"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5})
            text.set_zorder(5)
        if ax.get_legend_handles_labels()[0]:
            # below the axes: a legend inside sits on the density or the HDI bar in some panel
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


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


# ================================================================== the mechanism experiment
ARM_COLOURS = {"fixed": "C0", "density": "C1", "capped": "C2"}


def plot_mechanism(onsets: pd.DataFrame, b: pd.DataFrame) -> Any:
    """Onset of every run per arm against C (left; ^ at its last step: did not reach the level)
    and the C exponent b per arm with its HDI (right).

    ``onsets``: ``arm, C, seed, onset, censored, last_step``; ``b``: ``arm, b, b_lo, b_hi`` and, for
    the arms other than fixed, ``diff, diff_lo, diff_hi, p_diff_pos``."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.8, 3.6), width_ratios=(1.25, 1), layout="constrained")
    arms = [a for a in ARM_COLOURS if a in set(onsets["arm"])]
    for k, arm in enumerate(arms):
        g = onsets[onsets["arm"] == arm]
        x = g["C"] * np.exp((k - 1) * 0.06)  # the arms side by side at each C
        cen = g["censored"].astype(bool)
        ax1.plot(x[~cen], g.loc[~cen, "onset"], "o", color=ARM_COLOURS[arm], ms=5, label=f"{arm}: crossed 0.5")
        ax1.plot(x[cen], g.loc[cen, "last_step"], "^", mfc="none", color=ARM_COLOURS[arm], ms=7,
                 label=f"{arm}: not by its last step")
    cs = sorted(onsets["C"].unique())
    ax1.set(xscale="log", yscale="log", xlabel="C (context, tokens)", ylabel="onset (updates)",
            title="B 32, 2 seeds per arm and C (density's C 32 = fixed's runs)")
    ax1.set_xticks(cs, labels=[f"{c:g}" for c in cs])
    ax1.xaxis.set_minor_locator(NullLocator())
    ax1.set_yticks([1_000, 2_000, 3_000, 4_000, 6_000])
    ax1.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax1.yaxis.set_minor_formatter(NullFormatter())
    ax1.legend(fontsize=6.5, frameon=False, ncol=1, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    y = np.arange(len(b))[::-1]
    for yi, r in zip(y, b.itertuples()):
        col = ARM_COLOURS.get(r.arm, "0.3")
        ax2.errorbar(r.b, yi, xerr=[[r.b - r.b_lo], [r.b_hi - r.b]], fmt="o", color=col, capsize=3)
        txt = f"b {r.b:+.2f} [{r.b_lo:+.2f}, {r.b_hi:+.2f}]"
        if np.isfinite(getattr(r, "diff", np.nan)):
            txt += f"\nminus fixed {r.diff:+.2f} [{r.diff_lo:+.2f}, {r.diff_hi:+.2f}], P(> 0) {r.p_diff_pos:.2f}"
        ax2.annotate(txt, (r.b_hi, yi), xytext=(6, 0), textcoords="offset points", va="center", fontsize=6.5)
    ax2.axvline(0, color="0.6", lw=0.8, ls=":")
    ax2.set_yticks(y, b["arm"])
    lo, hi = b["b_lo"].min(), b["b_hi"].max()
    ax2.set(xlim=(lo - 0.3, hi + 3.2), ylim=(-0.6, len(b) - 0.4),
            xlabel="b, the C exponent (90% HDI; UPT ~ C^-b)", title="one exponent per arm")
    fig.suptitle("law-mechanism: does C act through copy density (density arm) or copy distance (capped arm)?",
                 fontsize=9)
    return fig
