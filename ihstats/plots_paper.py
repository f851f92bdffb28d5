"""Figures that compare runs or conditions: the paper figures (``paper_figures/make.py``) and the
ablation figure of ``analyses/ablation_tests.py``.

Each function takes the tidy frames that ``paper_figures/make.py`` writes beside the figure (so a
reader can redraw it from the committed CSVs) and returns the matplotlib Figure; writing is the
caller's, through :func:`ihstats.plots.save_figure`. ``tag`` is appended to the title (the paper
figures mark simulated input with it).
"""

from __future__ import annotations

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
                 fmt="o", ms=4, lw=0.8, color="C0", label="formed")
    if len(cen):
        ax1.scatter(cen["log_predicted"], cen["log_observed"], marker="^", facecolors="none",
                    edgecolors="C3", label="not formed (UPT > last step)")
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
def plot_frontier_onsets(runs: pd.DataFrame, short: float, long: float, *, tag: str = "") -> Any:
    """Onset of every run along each knob at the other knob's highest level (a transect, or a
    grid's top edge), with the two budgets it is read at: a run formed by the short budget lies
    below the lower line; one that formed only by the long one between them; ^ at the long
    budget: not formed by it. Where onsets climb towards the long budget as a knob falls, the
    boundary drawn at a budget is an iso-onset line.

    ``runs``: one row per run with ``frequency, reliability, seed, formed_long, onset_long``
    (:func:`ihstats.frontier.budget.per_run`).
    """
    knobs = ("frequency", "reliability")
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4), sharey=True, layout="constrained")
    for ax, knob, other in zip(axes, knobs, knobs[::-1]):
        edge = runs[np.isclose(runs[other], runs[other].max())]
        seeds = sorted(edge["seed"].unique())
        step = np.diff(np.sort(edge[knob].unique())).min(initial=0.1) * 0.12
        for i, seed in enumerate(seeds):  # replicates side by side at each level
            g = edge[edge["seed"] == seed]
            x = g[knob] + (i - (len(seeds) - 1) / 2) * step
            formed = g["formed_long"].astype(bool)
            ax.plot(x[formed], g.loc[formed, "onset_long"], "o", color=f"C{i}", ms=5,
                    label=f"seed {seed}")
            ax.plot(x[~formed], np.full((~formed).sum(), long), "^", mfc="none", color=f"C{i}", ms=7)
        for b, ls in ((short, ":"), (long, "--")):
            ax.axhline(b, color="0.4", ls=ls, lw=1)
            ax.annotate(f"budget {b:,.0f}", (ax.get_xlim()[0], b), fontsize=7, va="bottom", color="0.3")
        ax.set(yscale="log", xlabel=knob, title=f"{knob} at {other} = {runs[other].max():g}")
    low = np.nanmin([short, runs["onset_long"].min()])
    axes[0].set_ylim(low * 0.8, long * 1.25)
    axes[0].yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    axes[0].yaxis.set_minor_formatter(StrMethodFormatter("{x:,.0f}"))
    axes[0].set_ylabel("onset (updates); ^ = not formed by the cap")
    axes[0].legend(fontsize=7, frameon=False, loc="upper right")
    fig.suptitle("Onsets along the frontier's knobs, read at two budgets" + tag, fontsize=9)
    return fig


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
                ax.text(j, i, f"{v:.0f}/{runs.to_numpy(float)[i, j]:.0f} formed\nH {H[i, j]:.2f} bits",
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
    f = frame[frame["step"] > 0]
    modes = sorted(f["mode"].unique())
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels), 3.2), layout="constrained")
    for ax, (metric, label) in zip(axes, panels.items()):
        for i, mode in enumerate(modes):
            sub = f[(f["metric"] == metric) & (f["mode"] == mode)]
            for j, (_, g) in enumerate(sub.groupby("run_id")):
                ax.plot(g["step"], g["value"], lw=1.0, alpha=0.8, color=f"C{i}", label=mode if j == 0 else None)
        ax.set(xlabel="step (updates)", title=label)
    axes[0].legend(fontsize=7, frameon=False, title="Bi-Induct mode (one line per seed)", title_fontsize=7)
    fig.suptitle(title, fontsize=9)
    return fig


KV_PANELS = {"hits1": "HITS@1 of the value", "mean_logprob": "log-prob of the value (nats)"}
KV_CONTROLS = (("true", "true pairs", "C0"), ("permuted", "values permuted (control)", "0.55"),
               ("absent", "query key absent (control)", "0.8"))


def plot_kv_recall(frame: pd.DataFrame, order: list[str] | None = None) -> Any:
    """Key -> value recall per Bi-Induct condition against its two controls: the demonstrations'
    values permuted among the keys, and a query key absent from the demonstrations. Bars: the
    mean over runs (seeds); dots: each run. A model that recalls the value in context beats both.
    ``frame``: one row per (condition, seed, control) with ``hits1, mean_logprob``."""
    conds = order or sorted(frame["condition"].unique())
    x = np.arange(len(conds))
    width = 0.27
    fig, axes = plt.subplots(1, len(KV_PANELS), figsize=(9.5, 3.3), layout="constrained")
    for ax, (col, label) in zip(axes, KV_PANELS.items()):
        for k, (control, name, color) in enumerate(KV_CONTROLS):
            sub = frame[frame["control"] == control]
            pos = x + (k - 1) * width
            ax.bar(pos, sub.groupby("condition")[col].mean().reindex(conds), width, color=color, label=name)
            for i, c in enumerate(conds):  # every run, jittered within its bar
                v = sub.loc[sub["condition"] == c, col].to_numpy()
                ax.plot(pos[i] + np.linspace(-0.08, 0.08, len(v)), v, ".", ms=3, color="k", alpha=0.7)
        ax.set_xticks(x, conds)
        ax.set(title=label, xlabel="Bi-Induct condition")
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle("Key -> value recall in context; bars = mean over seeds, dots = runs", fontsize=9)
    return fig


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
