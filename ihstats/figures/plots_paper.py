"""Figures that compare runs or conditions: the paper figures (``paper_figures/make.py``) and the
ablation figure of ``analyses/ablation_tests.py``.

Each function takes the tidy frames that ``paper_figures/make.py`` writes beside the figure (so a
reader can redraw it from the committed CSVs) and returns the matplotlib Figure; writing is the
caller's, through :func:`ihstats.figures.save.save_figure`. ``tag`` is appended to the title (the paper
figures mark simulated input with it).
"""

from __future__ import annotations

import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.ticker import StrMethodFormatter  # noqa: E402

# published laws (docs/REFERENCES.md), as drawn by plot_upt_law's second panel
#: The published forms drawn beside the fit (Aoyama et al.; docs/REFERENCES.md), by column of the law table.
PUBLISHED_LINES = {"published": "published: ln UPT = 13.26 - 0.37 ln B - 0.62 ln C",
                   "published_early": "published tokens form: UPT = 10^5.7 / sqrt(B C)"}


# ================================================================== emergence curves of a grid
def plot_emergence_curves(frame: pd.DataFrame, *, tag: str = "") -> Any:
    """Max-PS curves of every run on log steps, one panel per C, colour by B, with onsets.

    ``frame``: one row per (run, step): ``run_id, step, max_ps, B, C`` and the run's ``onset,
    onset_lo, onset_hi, censored, last_step`` (``cell_id, seed`` tell seed replicates apart;
    ``metric`` names the PS, ``ps`` when absent).
    """
    f = frame[frame["step"] > 0]
    # seed replicates of one cell share its colour: tell them apart by line style
    rep = f.groupby("cell_id")["seed"].rank(method="dense").astype(int) - 1 if "cell_id" in f else 0
    f = f.assign(replicate=rep)
    n_rep = int(f["replicate"].max()) + 1
    cs = sorted(f["C"].unique())
    norm = LogNorm(f["B"].min(), max(f["B"].max(), f["B"].min() * 2))
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, len(cs), figsize=(3.4 * len(cs) + 0.8, 3.2), sharey=True,
                             squeeze=False, layout="constrained")
    for ax, c in zip(axes[0], cs):
        for rid, g in f[f["C"] == c].groupby("run_id", sort=False):
            color = cmap(norm(g["B"].iloc[0]))
            ax.plot(g["step"], g["max_ps"], color=color, lw=1, alpha=0.85,
                    ls=("-", "--", ":", "-.")[g["replicate"].iloc[0] % 4])
            r = g.iloc[0]
            if pd.notna(r["onset"]) and not r["censored"]:
                y = np.interp(np.log(r["onset"]), np.log(g["step"]), g["max_ps"])
                ax.plot([r["onset"]], [y], "o", ms=5, mfc="white", mec=color, mew=1.5)
                if pd.notna(r["onset_hi"]):
                    ax.hlines(y, r["onset_lo"], r["onset_hi"], color=color, lw=3, alpha=0.35)
            elif pd.notna(r["onset"]):  # censored: no emergence by last_step
                ax.plot([r["last_step"]], [g["max_ps"].iloc[-1]], ">", ms=6, mfc=color, mec="k")
        ax.set(xscale="log", title=f"C = {c}", xlabel="step (updates)")
    metric = f["metric"].iloc[0] if "metric" in f else "ps"  # which PS the curves are
    axes[0][0].set_ylabel({"ps_indist": "max in-distribution PS over heads"}.get(metric, "max PS over heads"))
    bs = sorted(f["B"].unique())
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[0].tolist(), label="B")
    cb.set_ticks(bs, labels=[f"{b:g}" for b in bs])
    cb.minorticks_off()
    fig.suptitle("Emergence curves; o = Bayesian onset (bar: 90% interval), > = censored"
                 + (f"; {n_rep} seeds per cell (line style)" if n_rep > 1 else "") + tag, fontsize=9)
    return fig


# ================================================================== UPT law of a grid
def _law_legend(ax: Any, law: pd.DataFrame) -> None:
    """One legend entry per C (its colour) and one line symbol per kind of line; the published
    forms' offset from the fit, measured on the plotted lines, said in words (their constant T
    belongs to the paper's models and data: compare slopes, not heights)."""
    from matplotlib.lines import Line2D

    handles = [h for h in ax.get_legend_handles_labels()[0]]
    handles.append(Line2D([], [], color="0.2", lw=1.2, label="fit, 90% HDI band"))
    if "published" in law:
        ratio = float(np.exp(np.median(np.log(law["published"] / law["upt"]))))
        handles += [Line2D([], [], color="0.2", lw=0.8, ls="--", label=PUBLISHED_LINES["published"]),
                    Line2D([], [], color="0.2", lw=0.8, ls=":", label=PUBLISHED_LINES["published_early"]),
                    Line2D([], [], ls="none", label=f"published lines sit ~{ratio:.0f}x above the fit: their T is\n"
                                                    "the paper's models and data; compare slopes")]
    # beside the axes: inside, the legend covered the published lines it explains
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.02, 1.0))


def plot_upt_law(frame: pd.DataFrame, law: pd.DataFrame, params: pd.DataFrame, *, tag: str = "") -> Any:
    """Observed vs predicted log UPT (left) and the fitted law UPT(B) per C with the published
    forms (right).

    ``frame``: ``ihstats.law.report.obs_vs_pred_frame`` plus ``log_observed, log_predicted``;
    ``law``: ``B, C, upt, upt_lo, upt_hi`` (and ``published, published_early``); ``params``: the
    fit's summary (``param, mean, hdi_lo, hdi_hi``).
    """
    f = frame
    s = params.set_index("param")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.5, 4.0), width_ratios=(1, 1.1))
    unc, cen = f[~f["censored"]], f[f["censored"]]
    ax1.errorbar(unc["log_predicted"], unc["log_observed"],
                 xerr=[unc["log_predicted"] - np.log(unc["pred_lo"]),
                       np.log(unc["pred_hi"]) - unc["log_predicted"]],
                 fmt="o", ms=4, lw=0.8, color="C0", label="crossed the level")
    if len(cen):
        ax1.scatter(cen["log_predicted"], cen["log_observed"], marker="^", facecolors="none",
                    edgecolors="C3", label="did not cross (UPT > last step)")
    lo = min(f["log_observed"].min(), f["log_predicted"].min()) - 0.3
    hi = max(f["log_observed"].max(), f["log_predicted"].max()) + 0.3
    ax1.plot([lo, hi], [lo, hi], "--", color="0.5", lw=1, label="y = x")
    ax1.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="predicted log UPT (posterior mean, 90% HDI)",
            ylabel="observed log UPT (updates)")
    ax1.legend(fontsize=7, frameon=False)
    cs = sorted(f["C"].unique())
    for i, c in enumerate(cs):
        col = plt.get_cmap("plasma")(i / max(1, len(cs) - 1) * 0.85)
        g, pts = law[law["C"] == c], f[f["C"] == c]
        ax2.plot(g["B"], g["upt"], color=col, lw=1.2, label=f"C = {c}")
        ax2.fill_between(g["B"], g["upt_lo"], g["upt_hi"], color=col, alpha=0.15, lw=0)
        seen, cut = pts[~pts["censored"]], pts[pts["censored"]]  # a censored run: a lower bound
        ax2.scatter(seen["B"], seen["observed"], color=col, s=14, edgecolors="none")
        ax2.scatter(cut["B"], cut["observed"], marker="^", facecolors="none", edgecolors=col, s=22)
        if "published" in g:  # the published forms, at the same C (dashed, dotted)
            ax2.plot(g["B"], g["published"], color=col, lw=0.8, ls="--")
            ax2.plot(g["B"], g["published_early"], color=col, lw=0.8, ls=":")
    ax2.set(xscale="log", yscale="log", xlabel="B (sequences per update)", ylabel="UPT (updates)")
    bs = sorted(f["B"].unique())
    ax2.set_xticks(bs, labels=[f"{b:g}" for b in bs])
    ax2.xaxis.set_minor_locator(plt.NullLocator())
    _law_legend(ax2, law)

    def est(p):
        return f"{s.at[p, 'mean']:.2f} [{s.at[p, 'hdi_lo']:.2f}, {s.at[p, 'hdi_hi']:.2f}]"

    fig.suptitle(f"log UPT = log T - a log B - b log C:  a = {est('a')}, b = {est('b')}, "
                 f"log T = {est('log_T')}" + tag, fontsize=9)
    fig.tight_layout()
    return fig


# ================================================================== head ablations
def _test_row(tests: pd.DataFrame, condition: Any, metric: Any) -> pd.Series:
    """The row of ``tests`` (``run_ablation_tests``) for one condition [and metric]."""
    keep = tests["condition"] == condition
    if "metric" in tests and not pd.isna(metric):
        keep &= tests["metric"] == metric
    return tests[keep].iloc[0]


def plot_ablation_drops(drops: pd.DataFrame, tests: pd.DataFrame, *,
                        title: str = "Top-k vs random-k head ablations",
                        xlabel: str = "mean drop (unablated - ablated)", ncols: int | None = None) -> Any:
    """Per (metric, condition): the random head sets' mean drops as a histogram, the top-k set's
    drop as a line, and the random-set permutation p value (raw and Holm) in the panel title.
    A row per metric, a column per condition (or ``ncols`` columns).

    ``drops``: ``condition, metric, ablation (top | random), set_id, drop``; ``tests``:
    ``ihstats.ablation.results.run_ablation_tests``' table (``p_random``, ``p_random_holm``).
    """
    groups = list(drops.groupby(["metric", "condition"], dropna=False, sort=True))
    ncols = min(len(groups), ncols or drops["condition"].nunique())
    nrows = -(-len(groups) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.7 * nrows), squeeze=False)
    for ax in axes.ravel()[len(groups):]:
        ax.set_visible(False)
    for ax, ((metric, cond), g) in zip(axes.ravel(), groups):
        rnd = g.loc[g["ablation"] == "random", "drop"]
        top = g.loc[g["ablation"] == "top", "drop"].iloc[0]
        ax.hist(rnd, bins=20, color="0.6", label="random-k sets")
        ax.axvline(top, color="C3", lw=2, label="top-k")
        t = _test_row(tests, cond, metric)
        name = cond if pd.isna(metric) else f"{cond} / {metric}"
        ax.set_title(f"{name}\np = {t['p_random']:.3g} (Holm {t['p_random_holm']:.3g})", fontsize=8)
        ax.set_xlabel(xlabel)
    axes[0][0].set_ylabel("head sets")
    axes[0][0].legend(fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_ablation_summary(drops: pd.DataFrame, tests: pd.DataFrame, *,
                          title: str = "Top-k vs random-k head ablations",
                          xlabel: str = "mean drop (unablated - ablated)") -> Any:
    """One panel for many runs: a row per (condition[, metric]), every random head set's mean
    drop as a grey dot, the top-k set's as a red diamond, and the random-set permutation p value
    (raw, Holm) at the right end of the row. What :func:`plot_ablation_drops` shows in one
    histogram per row, readable at 15 rows.

    ``drops``, ``tests``: as :func:`plot_ablation_drops`.
    """
    groups = list(drops.groupby(["metric", "condition"], dropna=False, sort=True))
    one_metric = drops["metric"].nunique(dropna=False) == 1
    fig, ax = plt.subplots(figsize=(7.0, 0.32 * len(groups) + 1.3))
    rng = np.random.default_rng(0)  # jitter only: the dots' heights carry no data
    labels = []
    for i, ((metric, cond), g) in enumerate(groups):
        rnd = g.loc[g["ablation"] == "random", "drop"].to_numpy()
        top = g.loc[g["ablation"] == "top", "drop"].iloc[0]
        ax.scatter(rnd, i + rng.uniform(-0.18, 0.18, rnd.size), s=9, color="0.55", alpha=0.7, lw=0,
                   label="random-k sets" if i == 0 else None)
        ax.scatter([top], [i], marker="D", s=30, color="C3", zorder=3, label="top-k set" if i == 0 else None)
        t = _test_row(tests, cond, metric)
        ax.annotate(f"p {t['p_random']:.2g} (Holm {t['p_random_holm']:.2g})", (1.01, i),
                    xycoords=("axes fraction", "data"), va="center", fontsize=7)
        labels.append(str(cond) if one_metric or pd.isna(metric) else f"{cond} / {metric}")
    ax.set_yticks(range(len(groups)), labels, fontsize=7)
    ax.set_ylim(len(groups) - 0.5, -0.5)
    ax.axvline(0, color="0.8", lw=0.8, zorder=0)
    metric_note = f" ({drops['metric'].iloc[0]})" if one_metric and not pd.isna(drops["metric"].iloc[0]) else ""
    ax.set_xlabel(xlabel + metric_note)
    # above the panel: inside, the legend covered a row's dots
    ax.legend(fontsize=7, frameon=False, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


# ================================================================== frontier onsets at two budgets
# ================================================================== Markov factors
def plot_markov_factors(cells: pd.DataFrame) -> Any:
    """Final max PS (colour, mean over seeds), the runs formed out of the cell's runs and the
    chain's entropy rate (bits/token, mean over the seeds' chains), per condition x marginal, one
    panel per frequency/reliability regime. ``cells``: ``regime, condition, marginal, max_ps,
    n_formed, n_runs, entropy_rate``."""
    regimes = sorted(cells["regime"].unique())
    fig, axes = plt.subplots(1, len(regimes), figsize=(4.2 * len(regimes), 3.2), squeeze=False,
                             layout="constrained")
    for ax, reg in zip(axes[0], regimes):
        g = cells[cells["regime"] == reg].pivot(index="condition", columns="marginal",
                                                 values="max_ps")
        n = cells[cells["regime"] == reg].pivot(index="condition", columns="marginal",
                                                 values="n_formed")
        runs = cells[cells["regime"] == reg].pivot(index="condition", columns="marginal",
                                                    values="n_runs")
        H = cells[cells["regime"] == reg].pivot(index="condition", columns="marginal",
                                                 values="entropy_rate").to_numpy(float)
        m = ax.imshow(g.to_numpy(float), cmap="viridis", vmin=0, vmax=1, aspect="auto")
        for (i, j), v in np.ndenumerate(n.to_numpy(float)):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.0f}/{runs.to_numpy(float)[i, j]:.0f} crossed\nH {H[i, j]:.2f} bits",
                        ha="center", va="center", fontsize=7,
                        color="k" if g.to_numpy(float)[i, j] > 0.5 else "w")
        ax.set_xticks(range(g.shape[1]), g.columns)
        ax.set_yticks(range(g.shape[0]), g.index)
        ax.set_title(f"frequency/reliability regime: {reg}", fontsize=8)
    fig.colorbar(m, ax=axes[0].tolist(), label="max PS (final)")
    fig.suptitle("Markov factors: dependency x categoriality x marginal (H: entropy rate, bits/token)", fontsize=9)
    return fig


# ================================================================== Bi-Induct
def plot_biinduct(frame: pd.DataFrame, panels: dict[str, str],
                  title: str = "Bi-Induct: induction, copy and duplicate-token scores over training; held-out loss") -> Any:
    """One panel per metric (``panels``: metric -> title), one line per run coloured by its
    Bi-Induct mode (seeds share a colour), over steps. ``frame``: ``run_id, metric, step,
    value, mode`` (:func:`ihstats.ablation.biinduct.curves_frame`). Linear steps: the rises fill
    the later half of the budget."""
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.2), layout="constrained")
    _mode_curves(axes, frame, panels)
    axes[0].legend(fontsize=7, frameon=False, title="Bi-Induct mode (one line per seed)", title_fontsize=7)
    fig.suptitle(title, fontsize=9)
    return fig


def _mode_curves(axes: Any, frame: pd.DataFrame, panels: dict[str, str]) -> None:
    """One panel per metric, one line per run coloured by its Bi-Induct mode (seeds share a colour)."""
    f = frame[frame["step"] > 0]
    modes = sorted(f["mode"].unique())
    for ax, (metric, label) in zip(axes, panels.items()):
        for i, mode in enumerate(modes):
            sub = f[(f["metric"] == metric) & (f["mode"] == mode)]
            for j, (_, g) in enumerate(sub.groupby("run_id")):
                ax.plot(g["step"], g["value"], lw=1.0, alpha=0.8, color=f"C{i}", label=mode if j == 0 else None)
        ax.set(xlabel="step (updates)", title=label)


# ================================================================== out-of-sample law validation
def plot_law_validation(runs: pd.DataFrame, *, title: str = "") -> Any:
    """Observed vs predicted log UPT with 90% predictive intervals (left; runs inside the interval
    filled, outside hollow red, censored runs as ^ at their last step) and the PIT histogram
    (right; flat when calibrated).

    ``runs``: the law's rows of ``ihstats.law.validation.ValidationResults.runs`` (``y, censored,
    median, lo_90, hi_90, inside_90, pit``, optionally ``region``).
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 4.0))
    extra = runs["region"].eq("extrapolation") if "region" in runs else False
    for inside, style in ((True, dict(mfc="C0", mec="C0")), (False, dict(mfc="none", mec="C3"))):
        for cens, marker in ((False, "o"), (True, "^")):
            for ext, ms in ((False, 4), (True, 7)):
                g = runs[(runs["inside_90"] == inside) & (runs["censored"] == cens) & (extra == ext)]
                if not len(g):
                    continue
                label = (f"{'inside' if inside else 'outside'}{', censored' if cens else ''}"
                         f"{', extrapolated' if ext else ''} ({len(g)})")
                ax1.errorbar(g["median"], g["y"], xerr=[g["median"] - g["lo_90"], g["hi_90"] - g["median"]],
                             fmt=marker, ms=ms, lw=0.7, color=style["mec"], label=label, **style)
    lo = min(runs["y"].min(), runs["lo_90"].min()) - 0.2
    hi = max(runs["y"].max(), runs["hi_90"].max()) + 0.2
    ax1.plot([lo, hi], [lo, hi], "--", color="0.5", lw=1)
    ax1.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="predicted log UPT (median, 90% interval)",
            ylabel="observed log UPT (censored: log last step)")
    ax1.legend(fontsize=6, frameon=False)
    n = len(runs)
    bins = 10 if n >= 30 else 5
    ax2.hist(runs["pit"], bins=bins, range=(0, 1), color="0.6", edgecolor="white")
    ax2.axhline(n / bins, color="C3", lw=1, ls="--", label="uniform (calibrated)")
    ax2.set(xlabel="PIT = predictive CDF at the observed log UPT", ylabel="runs")
    ax2.legend(fontsize=7, frameon=False)
    cover = runs["inside_90"].mean()
    fig.suptitle(f"Out-of-sample law: {cover:.0%} of {n} runs inside the 90% interval; "
                 f"median interval spans {runs['hi_lo_ratio_90'].median():.1f}x in UPT"
                 + (f"\n{title}" if title else ""), fontsize=9)
    fig.tight_layout()
    return fig


# ================================================================== the frontier's product model
def plot_frontier_product(runs: pd.DataFrame, line: pd.DataFrame, boundary: pd.DataFrame) -> Any:
    """Left: every run's onset against the product f r (^ at its cap where it did not cross), the
    product model's median onset with its HDI band, and the budgets as horizontal lines. Right: the
    design points in the (f, r) plane (filled: crossed by the cap) with the boundary f r = const at
    each budget (heads form by that budget above its line; band: HDI).

    ``runs``: ``frequency, reliability, product, seed, cap, crossed, onset``; ``line``: ``product,
    median_onset, lo, hi``; ``boundary``: ``budget, product, product_lo, product_hi``."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.0), layout="constrained")
    # a trajectory read by two grids (freqrel-extend continues freqrel's r 0.5 runs) is drawn once,
    # at its longer read
    runs = (runs.sort_values("cap").drop_duplicates(["frequency", "reliability", "seed"], keep="last")
            .sort_index().reset_index(drop=True))
    transect = np.where(np.isclose(runs["reliability"], runs["reliability"].max()) & (runs["frequency"] < 0.9),
                        "frequency varies (r 0.9)", np.where(runs["frequency"] >= 0.9 - 1e-9,
                                                             "reliability varies (f 0.9)", "other"))
    transect = np.where(np.isclose(runs["frequency"], 0.9) & np.isclose(runs["reliability"], 0.9), "f = r = 0.9",
                        transect)
    styles = {"frequency varies (r 0.9)": "C0", "reliability varies (f 0.9)": "C1", "f = r = 0.9": "0.2",
              "other": "C4"}
    jitter = (runs["seed"] - 1) * 0.006
    for name, col in styles.items():
        g = runs[transect == name]
        if not len(g):
            continue
        ok = g["crossed"].astype(bool)
        x = g["product"] * np.exp(jitter[g.index])
        if ok.any():
            ax1.plot(x[ok], g.loc[ok, "onset"], "o", color=col, ms=4.5, label=f"{name}: crossed")
        if (~ok).any():
            ax1.plot(x[~ok], g.loc[~ok, "cap"], "^", mfc="none", color=col, ms=6.5, label=f"{name}: not by its cap")
    ax1.plot(line["product"], line["median_onset"], color="0.25", lw=1.2, label="product model: median onset")
    ax1.fill_between(line["product"], line["lo"], line["hi"], color="0.5", alpha=0.2, lw=0)
    for k, T in enumerate(boundary["budget"]):
        ax1.axhline(T, color="0.45", ls=(":", "--", "-.")[k % 3], lw=0.9, label=f"budget {T:,.0f} updates")
    ax1.set(xscale="log", yscale="log", xlabel="f r (frequency x reliability)", ylabel="onset (updates)",
            title="onset against f r: one elasticity")
    ticks = [0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8]
    ax1.set_xticks(ticks, labels=[f"{t:g}" for t in ticks])
    ax1.xaxis.set_minor_locator(plt.NullLocator())
    ax1.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax1.yaxis.set_minor_formatter(plt.NullFormatter())
    ax1.set_ylim(250, 40_000)  # room below the runs for the legend
    ax1.set_yticks([1_000, 2_000, 5_000, 10_000, 20_000])
    ax1.legend(fontsize=6, frameon=False, loc="lower left", ncol=2)
    f = np.linspace(0.4, 1.0, 200)
    for k, r in enumerate(boundary.itertuples()):
        ax2.plot(f, r.product / f, color="0.3", ls=(":", "--", "-.")[k % 3], lw=1,
                 label=f"f r = {r.product:.2f} [{r.product_lo:.2f}, {r.product_hi:.2f}] at {r.budget:,.0f} updates")
        ax2.fill_between(f, r.product_lo / f, r.product_hi / f, color="0.5", alpha=0.15, lw=0)
    cells = runs.groupby(["frequency", "reliability"]).agg(n=("crossed", "size"), k=("crossed", "sum"),
                                                          cap=("cap", "max")).reset_index()
    for c in cells.itertuples():
        ax2.scatter(c.frequency, c.reliability, s=40, color=plt.get_cmap("viridis")(c.k / c.n), edgecolors="k",
                    linewidths=0.6, zorder=3)
        ax2.annotate(f"{c.k}/{c.n}", (c.frequency, c.reliability), xytext=(5, -9), textcoords="offset points",
                     fontsize=6.5)
    ax2.set(xlim=(0.55, 0.95), ylim=(0.45, 0.95), xlabel="frequency f", ylabel="reliability r",
            title="design points (crossed / runs by each grid's cap; colour: share crossed)\nand the boundary at each budget (HDI band)")
    ax2.legend(fontsize=6, frameon=False, loc="lower left")
    fig.suptitle("Frequency x reliability (freqrel, cap 4,200; freqrel-extend, cap 12,600): crossings of PS 0.3; "
                 "r 0.5's 3 runs, read by both grids, drawn once", fontsize=9)
    return fig


# ================================================================== Markov factors at matched entropy
MARGINAL_COLOURS = {"uniform": "C0", "gaussian": "C1", "zipf": "C2"}
CATEGORIALITY_MARKERS = {"none": "o", "low": "s", "high": "D"}


def plot_markov_entropy(runs: pd.DataFrame, cap: float = 12_000) -> Any:
    """Onset of every Markov run against its chain's entropy rate, one panel per regime; runs that
    did not cross by the cap sit on the band above it; the i.i.d. runs (no onset) as x at their
    marginal's entropy. Colour: marginal; marker: categoriality; black edge: the entropy-matched
    companion grids. ``runs``: ``grid, regime, dependency, categoriality, marginal, formed, onset,
    entropy_rate``."""
    regimes = sorted(runs["regime"].unique(), reverse=True)
    fig, axes = plt.subplots(1, len(regimes), figsize=(5.0 * len(regimes), 3.8), sharey=True, squeeze=False,
                             layout="constrained")
    top = cap * 1.6
    rng = np.random.default_rng(0)
    for ax, reg in zip(axes[0], regimes):
        g = runs[runs["regime"] == reg]
        for r in g.itertuples():
            y = r.onset if r.formed else top * np.exp(rng.uniform(-0.12, 0.12))
            companion = r.grid != "markov"
            if r.dependency == "iid":
                ax.plot(r.entropy_rate, y, "x", color=MARGINAL_COLOURS.get(r.marginal, "0.4"), ms=5)
                continue
            ax.scatter(r.entropy_rate, y, marker=CATEGORIALITY_MARKERS.get(r.categoriality, "o"), s=30,
                       color=MARGINAL_COLOURS.get(r.marginal, "0.4"), edgecolors="k" if companion else "none",
                       linewidths=0.9, alpha=0.85)
        ax.axhline(cap, color="0.5", lw=0.8, ls="--")
        ax.annotate(f"cap {cap:,.0f}: above = did not cross", (0.01, cap), xycoords=("axes fraction", "data"),
                    fontsize=6.5, va="bottom", color="0.3")
        ax.set(yscale="log", xlabel="entropy rate of the chain (bits/token)", title=f"regime {reg}")
        ax.axvspan(4.25, 4.75, color="0.9", zorder=0)
    axes[0][0].set_ylabel("onset (updates)")
    axes[0][0].yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes[0][0].yaxis.set_minor_formatter(plt.NullFormatter())
    axes[0][0].set_ylim(1_500, top * 1.5)
    axes[0][0].set_yticks([2_000, 3_000, 5_000, 8_000, 12_000])
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], ls="none", marker="o", color=c, label=m) for m, c in MARGINAL_COLOURS.items()]
    handles += [Line2D([], [], ls="none", marker=mk, mfc="0.6", mec="0.6", label=f"categoriality {c}")
                for c, mk in CATEGORIALITY_MARKERS.items()]
    handles += [Line2D([], [], ls="none", marker="x", color="0.3", label="i.i.d. tokens (never crossed)"),
                Line2D([], [], ls="none", marker="o", mfc="0.9", mec="k", label="matched companion grid (4.50 bits)")]
    axes[0][-1].legend(handles=handles, fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Markov factors against the entropy rate (markov, markov-entropy, markov-entropy-high; 3 seeds; "
                 "grey band: the companions' 4.50 bits)", fontsize=9)
    return fig


# ================================================================== Bi-Induct on the builtin text
def plot_biinduct_text(curves: pd.DataFrame, panels: dict[str, str], claims: pd.DataFrame) -> Any:
    """Top: every run's curves per Bi-Induct mode (as :func:`plot_biinduct`). Bottom: the verdict
    table as a chart: per measure, the p-value in the paper's predicted direction (Holm; dot) against
    the design's floor (|) and 0.05 (dashed), with the verdict beside it.

    ``claims``: ``claim, label`` (or ``column``), ``p_for_holm, floor_holm, verdict``."""
    fig = plt.figure(figsize=(13, 7.6), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=(1, 1.15))
    axes = top.subplots(1, len(panels))
    _mode_curves(axes, curves, panels)
    for ax in axes:
        ax.title.set_fontsize(8)
    axes[0].legend(fontsize=7, frameon=False, title="mode (one line per seed)", title_fontsize=7)
    ax, text = bottom.subplots(1, 2, width_ratios=(1, 1.05), sharey=True)
    c = claims.reset_index(drop=True)
    y = np.arange(len(c))[::-1]
    p = c["p_for_holm"].astype(float)
    ax.scatter(p.fillna(1.0), y, color=np.where(p.isna(), "0.7", "C0"), zorder=3,
               label="p, predicted direction (Holm; grey: not computed)")
    ax.scatter(c["floor_holm"].astype(float), y, marker="|", s=120, color="k", label="floor of the design (Holm)")
    ax.axvline(0.05, color="C3", ls="--", lw=0.8, label="0.05")
    ax.set_xscale("log")
    ax.set_xlim(2e-3, 1.6)
    labels = [f"{a}: {str(m)[:46]} (vs {base})" for a, m, base in zip(c["claim"], c["measure"], c["baseline"])]
    ax.set_yticks(y, labels, fontsize=6.5)
    ax.set_ylim(-0.6, len(c) - 0.4)
    ax.set_xticks([1e-2, 0.05, 0.1, 1], labels=["0.01", "0.05", "0.1", "1"])
    ax.set_xlabel("p-value (log scale)")
    ax.legend(fontsize=6.5, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3)
    for yi, v in zip(y, c["verdict"]):
        text.annotate(textwrap.shorten(str(v), 80, placeholder=" ..."), (0.0, yi), xycoords=("axes fraction", "data"),
                      fontsize=6.5, va="center", color="0.15")
    text.set_title("the tool's verdict (claims.csv of analyses/biinduct_verdicts.py);\ndocs/RESULTS.md section 5 "
                   "qualifies the emergence rows (a crossing,\nnot a timing), ICL (the random control overlaps) "
                   "and backward copy", fontsize=7, loc="left")
    text.axis("off")
    fig.suptitle("Bi-Induct on the builtin text (biinduct-text-cpu, 5 conditions x 3 seeds): curves, and each claim's "
                 "p against its floor (9 curriculum runs vs 3 natural-only unless the row says otherwise)", fontsize=9)
    return fig


# ================================================================== a scored checkpoint series
def plot_scored_series(frame: pd.DataFrame) -> Any:
    """Max PS per scored revision of each series (log steps) with the onset ``ihstats.emergence``
    found (solid, its interval shaded) and the planted midpoint (dotted). ``frame``: ``run_id, B,
    step, max_ps, onset, onset_lo, onset_hi, planted_midpoint``."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    for i, (B, g) in enumerate(frame.groupby("B")):
        col = f"C{i}"
        g = g[g["step"] > 0]
        ax.plot(g["step"], g["max_ps"], "o-", ms=3, lw=1, color=col, label=f"B {B}: max PS per revision")
        r = g.iloc[0]
        ax.axvline(r["onset"], color=col, lw=1.2, label=f"B {B}: onset found {r['onset']:,.0f}")
        ax.axvspan(r["onset_lo"], r["onset_hi"], color=col, alpha=0.12, lw=0)
        ax.axvline(r["planted_midpoint"], color=col, lw=1, ls=":", label=f"B {B}: planted midpoint {r['planted_midpoint']:,.0f}")
    ax.set(xscale="log", xlabel="checkpoint step", ylabel="max PS over heads", ylim=(0, 1.05))
    ax.legend(fontsize=6.5, frameon=False, loc="upper left")
    fig.suptitle("A PLANTED checkpoint series, scored by python -m ihtrain.score\n(hand-wired induction weights "
                 "blended in on a known schedule; not a trained model)", fontsize=8)
    return fig
