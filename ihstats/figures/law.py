"""The UPT law's figures: observed against predicted UPT, the predictive band of each run, and
the mechanism experiment's onsets and C exponent per arm (``analyses/law_mechanism.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ihstats.figures.save import save_figure  # first: it sets the Agg backend before pyplot loads

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator, StrMethodFormatter
import numpy as np

if TYPE_CHECKING:  # plot_mechanism's annotations
    import pandas as pd


# ================================================================== observed against predicted
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


# ================================================================== posterior predictive check, run by run
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
