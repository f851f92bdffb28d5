"""Regenerate the paper figures (PNG + PDF + the tidy CSV behind each) from logs in one command.

    python paper_figures/make.py                     # every figure, fast, from the shipped real logs
    python paper_figures/make.py --check             # regenerate to a temp dir, diff the CSVs
    python paper_figures/make.py --runs runs/bxc-text --fast    # your own grid, quick sampling
    python paper_figures/make.py --only upt_law --simulated --out /tmp/figs  # simulated example
    python paper_figures/make.py --list

Each figure is a registry entry: an analysis function (inputs -> tidy DataFrame, built with the
package's own ``ihstats`` functions) and a plot function (tidy DataFrame -> matplotlib Figure).
By default every figure reads the real logs shipped in ``data/reference_runs/`` (natural text:
``bxc-cpu-h200-bf16``; fast regime: ``bxc-markov``; ``freqrel``, ``markov``, ``biinduct``). A
figure whose set is not shipped is *skipped* with the reason in ``INDEX.md``; the simulated
examples in ``data/`` are used only with ``--simulated`` (and say so in the title and INDEX.md).
A failing figure is reported and the others still run; the exit status is 1 if any failed
(2 on bad arguments). Seeds are fixed (``--seed``, default 0), so reruns give the same files.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
EXAMPLES = {"emergence": DATA / "example_emergence.csv", "frontier": DATA / "example_frontier.csv",
            "ablation": DATA / "example_ablation.csv"}
REFERENCE = DATA / "reference_runs"
FIGURES = ROOT / "paper_figures" / "figures"
# --check: CSVs of the samplers (posterior summaries, law bands, frontier) may move with the
# platform's floating point; they must agree within this fraction of each column's range.
# Every other CSV (curves, onsets, counts, permutation tests with fixed seeds) must match exactly.
SAMPLER_CSV = ("upt_law", "frontier")
SAMPLER_TOL = 0.05
HDI = 0.9
# the shipped real sets each figure reads by default (data/reference_runs/<set>)
NATURAL, FAST = "bxc-cpu-h200-bf16", "bxc-markov"
# published laws (docs/REFERENCES.md): ln UPT = 13.26 - 0.37 ln B - 0.62 ln C (arXiv 2511.16893),
# and its earlier tokens form N = 10^5.7 sqrt(B C), i.e. UPT = 10^5.7 / sqrt(B C)
PUBLISHED = {"published": (13.26, 0.37, 0.62), "published_early": (5.7 * np.log(10), 0.5, 0.5)}
# Sampler / resampling budgets: fast matches the analyses/ scripts' --fast, full their defaults.
BUDGET = {
    False: dict(draws=300, tune=300, chains=2, n_resamples=999, n_boot=500),
    True: dict(draws=1000, tune=1000, chains=4, n_resamples=9999, n_boot=2000),
}


class Skip(Exception):
    """A figure that cannot be drawn from the given inputs (not a failure)."""


@dataclass
class Inputs:
    """What the analyses read, from the command line."""

    runs: Path | None = None
    emergence: Path | None = None
    frontier_table: Path | None = None
    ablation_table: Path | None = None
    full: bool = False
    seed: int = 0
    simulated: bool = False          # use the shipped simulated examples (explicit flag only)
    reference: Path = REFERENCE
    cache: dict[str, Any] = field(default_factory=dict)  # shared work (the grid's emergence table)

    @property
    def budget(self) -> dict[str, int]:
        return BUDGET[self.full]


@dataclass
class FigureData:
    """An analysis' output: the tidy frame behind the figure, where it came from, extras."""

    frame: pd.DataFrame
    source: str                      # human-readable data source (real logs or shipped example)
    simulated: bool                  # True when drawn from a shipped simulated example
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)  # more tidy CSVs (name -> frame)
    note: str = ""


def _read_table(path: Path, flag: str) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"{flag}: no such file: {path}")
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def _rel(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _shipped(inp: Inputs, name: str) -> Path:
    """The shipped real set ``data/reference_runs/<name>``, or Skip saying it is missing."""
    path = inp.reference / name
    if not (path / "grid.json").is_file():
        raise Skip(f"shipped set {_rel(path)} missing (ship it with paper_figures/ship_runs.py); no simulated fallback "
                   f"without --simulated")
    return path


def _source(path: Path | None, key: str, flag: str) -> tuple[pd.DataFrame, str, bool]:
    """The table from ``path`` or the shipped example, with a description of which it is."""
    path = Path(path) if path is not None else EXAMPLES[key]
    simulated = path.resolve() == EXAMPLES[key].resolve()
    desc = (f"{EXAMPLES[key].relative_to(ROOT)} (shipped SIMULATED example; pass {flag} for "
            f"real data)" if simulated else str(path))
    return _read_table(path, flag), desc, simulated


def _sim_tag(d: FigureData) -> str:
    return " [simulated example data]" if d.simulated else ""


# ================================================================== 1. emergence curves
def _grid_emergence(inp: Inputs, runs: Path):
    """Load a grid once and detect emergence once (shared by several figures)."""
    key = f"grid:{runs}"
    if key not in inp.cache:
        from ihstats.emergence import curve_series, emergence_table
        from ihstats.io import load_grid

        grid = load_grid(runs, on_error="skip")
        if grid.runs.empty:
            raise ValueError(f"--runs: no readable run directories in {runs}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skipped curves are counted in the note instead
            table = emergence_table(grid, metric="ps", head="max", method="bayes", level=HDI,
                                    on_error="skip")
        inp.cache[key] = (grid, curve_series(grid.metrics, "ps", "max"), table)
    return inp.cache[key]


def analysis_emergence_curves(inp: Inputs, shipped: str = NATURAL) -> FigureData:
    runs = inp.runs if inp.runs is not None and shipped == NATURAL else _shipped(inp, shipped)
    grid, curves, table = _grid_emergence(inp, runs)
    factors = grid.runs[["run_id", *[c for c in ("cell_id", "seed", "B", "C") if c in grid.runs]]]
    if not {"B", "C"} <= set(factors):
        raise ValueError("--runs: the runs' config.json lack train.batch_size/train.context (B, C)")
    cols = ["run_id", "onset", "onset_lo", "onset_hi", "censored", "last_step", "method"]
    frame = (curves.rename(columns={"value": "max_ps"})[["run_id", "step", "max_ps"]]
             .merge(factors, on="run_id").merge(table[cols], on="run_id", how="left"))
    n_skip = grid.runs["run_id"].nunique() - table["run_id"].nunique()
    note = f"{n_skip} run(s) without an onset (detector rejected the curve)" if n_skip else ""
    return FigureData(frame.sort_values(["C", "B", "run_id", "step"]).reset_index(drop=True),
                      f"{_rel(runs)} (real logs; onsets by ihstats.emergence, bayes)", False,
                      note=note)


def plot_emergence_curves(d: FigureData):
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    f = d.frame[d.frame["step"] > 0]
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
    axes[0][0].set_ylabel("max PS over heads")
    bs = sorted(f["B"].unique())
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[0].tolist(), label="B")
    cb.set_ticks(bs, labels=[f"{b:g}" for b in bs])
    cb.minorticks_off()
    fig.suptitle("Emergence curves; o = Bayesian onset (bar: 90% interval), > = censored"
                 + (f"; {n_rep} seeds per cell (line style)" if n_rep > 1 else "") + _sim_tag(d), fontsize=9)
    return fig


# ====================================================================== 2. UPT law
def analysis_upt_law(inp: Inputs, shipped: str = NATURAL) -> FigureData:
    from ihstats.report import obs_vs_pred_frame
    from ihstats.upt_law import UPTLawSpec

    mine = shipped == NATURAL  # --emergence / --runs / --simulated replace the natural-text set
    if mine and (inp.emergence is not None or inp.simulated):
        table, source, simulated = _source(inp.emergence, "emergence", "--emergence")
    else:
        runs = inp.runs if mine and inp.runs is not None else _shipped(inp, shipped)
        table = _grid_emergence(inp, runs)[2]
        source, simulated = f"{_rel(runs)} (real logs; emergence by ihstats.emergence)", False
    b = inp.budget
    res = UPTLawSpec(hdi_prob=HDI).build(table).fit(draws=b["draws"], tune=b["tune"],
                                                    chains=b["chains"], seed=inp.seed)
    frame = obs_vs_pred_frame(res, HDI)
    frame["log_observed"], frame["log_predicted"] = np.log(frame["observed"]), np.log(frame["predicted"])
    summ = res.summary(HDI).reset_index()
    # the fitted law along B for each observed C (posterior median line and its HDI)
    Bs = np.exp(np.linspace(np.log(frame["B"].min()), np.log(frame["B"].max()), 30))
    lines = []
    for c in sorted(frame["C"].unique()):
        N = None
        if res.spec.size_term:
            N = float(np.exp(res.data.centres["N"]))  # law at the design's centre size
        p = res.predict(Bs, np.full_like(Bs, c), N, HDI)
        pub = {k: np.exp(t - a * np.log(Bs) - b * np.log(c)) for k, (t, a, b) in PUBLISHED.items()}
        lines.append(p.assign(B=Bs, C=c, **pub)[["B", "C", "upt", "upt_lo", "upt_hi", *pub]])
    diag = res.diagnostics()
    note = (f"r(pred, obs log UPT) = {res.r_obs_pred:.3f}; {b['chains']} chains x {b['draws']} "
            f"draws" + (f"; warnings: {'; '.join(diag)}" if diag else ""))
    return FigureData(frame, source, simulated, extra={"params": summ, "law": pd.concat(lines)},
                      note=note)


def plot_upt_law(d: FigureData):
    import matplotlib.pyplot as plt

    f, law = d.frame, d.extra["law"]
    s = d.extra["params"].set_index("param")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 4.0))
    unc, cen = f[~f["censored"]], f[f["censored"]]
    ax1.errorbar(unc["log_predicted"], unc["log_observed"],
                 xerr=[unc["log_predicted"] - np.log(unc["pred_lo"]),
                       np.log(unc["pred_hi"]) - unc["log_predicted"]],
                 fmt="o", ms=4, lw=0.8, color="C0", label="emerged")
    if len(cen):
        ax1.scatter(cen["log_predicted"], cen["log_observed"], marker="^", facecolors="none",
                    edgecolors="C3", label="censored (UPT > last step)")
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
        ax2.scatter(pts["B"], pts["observed"], color=col, s=14, edgecolors="none")
        if "published" in g:  # the published forms, at the same C (dashed, dotted)
            ax2.plot(g["B"], g["published"], color=col, lw=0.8, ls="--")
            ax2.plot(g["B"], g["published_early"], color=col, lw=0.8, ls=":")
    ax2.set(xscale="log", yscale="log", xlabel="B (sequences per update)", ylabel="UPT (updates)")
    bs = sorted(f["B"].unique())
    ax2.set_xticks(bs, labels=[f"{b:g}" for b in bs])
    ax2.xaxis.set_minor_locator(plt.NullLocator())
    ax2.legend(fontsize=7, frameon=False, ncol=2,
               title="solid: fit (90% HDI); --: 13.26-0.37lnB-0.62lnC; : 10^5.7/sqrt(BC)",
               title_fontsize=6)

    def est(p):
        return f"{s.at[p, 'mean']:.2f} [{s.at[p, 'hdi_lo']:.2f}, {s.at[p, 'hdi_hi']:.2f}]"

    fig.suptitle(f"log UPT = log T - a log B - b log C:  a = {est('a')}, b = {est('b')}, "
                 f"log T = {est('log_T')}" + _sim_tag(d), fontsize=9)
    fig.tight_layout()
    return fig


# ====================================================================== 3. frontier
def _knob_columns(summary: pd.DataFrame, knobs) -> pd.DataFrame:
    """Rename the grid's dotted factor columns (``data.markov.frequency``) to their last part."""
    ren = {c: c.rsplit(".", 1)[-1] for c in summary.columns
           if "." in c and c.rsplit(".", 1)[-1] in knobs}
    missing = set(knobs) - set(summary.rename(columns=ren).columns)
    if missing:
        raise ValueError(f"summary.csv: no column for {sorted(missing)}")
    return summary.rename(columns=ren)


def _freqrel_table(grid: Path) -> pd.DataFrame:
    """One row per run (frequency, reliability, formed) from the grid's summary.csv."""
    t = _knob_columns(pd.read_csv(grid / "summary.csv"), ("frequency", "reliability"))
    return t[["run_id", "frequency", "reliability", "formed"]].assign(formed=lambda d: d["formed"].astype(bool))


def analysis_frontier(inp: Inputs) -> FigureData:
    from ihstats.frontier import FrontierSpec

    if inp.frontier_table is not None or inp.simulated:
        table, source, simulated = _source(inp.frontier_table, "frontier", "--frontier-table")
    else:
        table, source, simulated = _freqrel_table(_shipped(inp, "freqrel")), "", False
        source = f"{_rel(inp.reference / 'freqrel')}/summary.csv (real logs; formed per run)"
    b = inp.budget
    res = FrontierSpec().build(table).fit(draws=b["draws"], tune=b["tune"], chains=b["chains"],
                                          seed=inp.seed)
    cells = res.model.cells
    note = f"separation: {res.separation}; GLM: {res.glm.method}; {res.sensitivity_verdict(HDI)}"
    return FigureData(res.frontier(HDI), source, simulated, extra={"cells": cells}, note=note)


def plot_frontier(d: FigureData):
    from ihstats.plots import plot_frontier_map

    return plot_frontier_map(d.extra["cells"], d.frame, hdi_prob=HDI, title="Formation frontier" + _sim_tag(d))


# ====================================================================== 4. ablation
def analysis_ablation(inp: Inputs) -> FigureData:
    from ihstats.permutation import ablation_arrays, run_ablation_tests

    shipped = inp.reference / "biinduct" / "ablation.parquet"
    if inp.ablation_table is None and not inp.simulated:
        if not shipped.is_file():
            raise Skip(f"{_rel(shipped)} missing (python -m ihtrain.ablate on the biinduct runs, "
                       f"shipped with paper_figures/ship_runs.py --extra); no simulated fallback")
        table, source, simulated = _read_table(shipped, "ablation"), _rel(shipped) + " (real)", False
    else:
        table, source, simulated = _source(inp.ablation_table, "ablation", "--ablation-table")
    b = inp.budget
    tests, _ = run_ablation_tests(table, b["n_resamples"], b["n_boot"], 0.05, inp.seed, True)
    rows = []
    for t in tests.to_dict("records"):
        metric = t.get("metric")
        metric = None if metric is None or pd.isna(metric) else metric
        a = ablation_arrays(table, t["condition"], metric, True)
        keep = {k: t[k] for k in ("p_random", "p_random_holm", "p_sign_flip_gap") if k in t}
        rows.append({"condition": t["condition"], "metric": metric, "ablation": "top",
                     "set_id": "top", "drop": float(a.top.mean()), **keep})
        rows += [{"condition": t["condition"], "metric": metric, "ablation": "random",
                  "set_id": s, "drop": float(v), **keep}
                 for s, v in zip(a.set_ids, a.random.mean(1))]
    note = f"{b['n_resamples']} sign flips, {b['n_boot']} bootstrap draws, Holm across tests"
    return FigureData(pd.DataFrame(rows), source, simulated, extra={"tests": tests}, note=note)


def plot_ablation(d: FigureData):
    import matplotlib.pyplot as plt

    groups = list(d.frame.groupby(["metric", "condition"], dropna=False, sort=True))
    ncols = min(len(groups), d.frame["condition"].nunique())  # a row per metric, a column per condition
    nrows = -(-len(groups) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.7 * nrows), squeeze=False)
    for ax in axes.ravel()[len(groups):]:
        ax.set_visible(False)
    for ax, ((metric, cond), g) in zip(axes.ravel(), groups):
        rnd = g.loc[g["ablation"] == "random", "drop"]
        top = g.loc[g["ablation"] == "top", "drop"].iloc[0]
        ax.hist(rnd, bins=20, color="0.6", label="random-k sets")
        ax.axvline(top, color="C3", lw=2, label="top-k")
        name = cond if pd.isna(metric) else f"{cond} / {metric}"
        ax.set_title(f"{name}\np = {g['p_random'].iloc[0]:.3g} "
                     f"(Holm {g['p_random_holm'].iloc[0]:.3g})", fontsize=8)
        ax.set_xlabel("mean drop (unablated - ablated)")
    axes[0][0].set_ylabel("head sets")
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.suptitle("Top-k vs random-k head ablations" + _sim_tag(d), fontsize=9)
    fig.tight_layout()
    return fig


# ====================================================================== 5. Markov factors
MARKOV_KNOBS = ("marginal", "dependency", "categoriality", "regime")


def analysis_markov_factors(inp: Inputs) -> FigureData:
    grid = _shipped(inp, "markov")
    t = _knob_columns(pd.read_csv(grid / "summary.csv"), MARKOV_KNOBS)
    frame = t[["run_id", *MARKOV_KNOBS, "formed", "onset", "max_ps", "steps"]].copy()
    frame["condition"] = np.where(frame["dependency"] == "iid", "iid",
                                  "markov/" + frame["categoriality"].astype(str))
    cells = (frame.groupby(["regime", "condition", "marginal"])
             .agg(n_runs=("formed", "size"), n_formed=("formed", "sum"),
                  max_ps=("max_ps", "mean")).reset_index())
    iid, mk = (frame.loc[frame["dependency"] == d, "formed"] for d in ("iid", "markov"))
    note = (f"formed: i.i.d. {int(iid.sum())}/{len(iid)}, Markov {int(mk.sum())}/{len(mk)}; "
            f"formed = an uncensored Bayesian onset and final max PS >= 0.3 (the grid summary's verdict)")
    return FigureData(frame.sort_values(["regime", "condition", "marginal"]).reset_index(drop=True),
                      f"{_rel(grid)}/summary.csv (real logs)", False, extra={"cells": cells},
                      note=note)


def plot_markov_factors(d: FigureData):
    import matplotlib.pyplot as plt

    cells = d.extra["cells"]
    regimes = sorted(cells["regime"].unique())
    fig, axes = plt.subplots(1, len(regimes), figsize=(4.2 * len(regimes), 3.2), squeeze=False,
                             layout="constrained")
    for ax, reg in zip(axes[0], regimes):
        g = cells[cells["regime"] == reg].pivot(index="condition", columns="marginal",
                                                 values="max_ps")
        n = cells[cells["regime"] == reg].pivot(index="condition", columns="marginal",
                                                 values="n_formed")
        m = ax.imshow(g.to_numpy(float), cmap="viridis", vmin=0, vmax=1, aspect="auto")
        for (i, j), v in np.ndenumerate(n.to_numpy(float)):
            if np.isfinite(v):
                ax.text(j, i, "formed" if v > 0 else "-", ha="center", va="center", fontsize=7,
                        color="k" if g.to_numpy(float)[i, j] > 0.5 else "w")
        ax.set_xticks(range(g.shape[1]), g.columns)
        ax.set_yticks(range(g.shape[0]), g.index)
        ax.set_title(f"frequency/reliability regime: {reg}", fontsize=8)
    fig.colorbar(m, ax=axes[0].tolist(), label="max PS (final)")
    fig.suptitle("Markov factors: dependency x categoriality x marginal", fontsize=9)
    return fig


# ====================================================================== 6. Bi-Induct curves
BIINDUCT_METRICS = {"ps": "induction (max PS over heads)",
                    "anti_induction": "anti-induction (max over heads)",
                    "val_loss": "held-out loss (nats/token)"}


def analysis_biinduct(inp: Inputs) -> FigureData:
    from ihstats.io import load_grid

    path = _shipped(inp, "biinduct")
    grid = load_grid(path, on_error="skip")
    # the condition label is the grid factor, recorded per run in the manifest
    modes = pd.read_parquet(path / "manifest.parquet")[["run_id", "data.biinduct.mode"]]
    m = grid.metrics[grid.metrics["metric"].isin(list(BIINDUCT_METRICS))]
    # per-head scores: the best head at each step; val_loss is one number per step
    agg = m.groupby(["run_id", "metric", "step"])["value"].max().reset_index()
    frame = agg.merge(modes.rename(columns={"data.biinduct.mode": "mode"}), on="run_id")
    last = frame[frame["step"] == frame.groupby("run_id")["step"].transform("max")]
    final = last.pivot_table(index=["run_id", "mode"], columns="metric", values="value").reset_index()
    if "val_loss" in final:
        final["val_perplexity"] = np.exp(final["val_loss"])
    note = "; ".join(f"{r['mode']}: max PS {r.get('ps', np.nan):.2f}, anti {r.get('anti_induction', np.nan):.2f}, "
                     f"val loss {r.get('val_loss', np.nan):.3f}" for r in final.to_dict("records"))
    return FigureData(frame.sort_values(["mode", "metric", "step"]).reset_index(drop=True),
                      f"{_rel(inp.reference / 'biinduct')} (real logs)", False,
                      extra={"final": final}, note=note)


def plot_biinduct(d: FigureData):
    import matplotlib.pyplot as plt

    f = d.frame[d.frame["step"] > 0]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), layout="constrained")
    for ax, (metric, label) in zip(axes, BIINDUCT_METRICS.items()):
        for i, (mode, g) in enumerate(f[f["metric"] == metric].groupby("mode")):
            ax.plot(g["step"], g["value"], lw=1.1, color=f"C{i}", label=mode)
        ax.set(xscale="log", xlabel="step (updates)", title=label)
    axes[0].legend(fontsize=7, frameon=False, title="Bi-Induct mode", title_fontsize=7)
    fig.suptitle("Bi-Induct: induction and anti-induction over training, held-out loss", fontsize=9)
    return fig


# ====================================================================== registry
@dataclass(frozen=True)
class Figure:
    analysis: Callable[[Inputs], FigureData]
    plot: Callable[[FigureData], Any]
    description: str


REGISTRY: dict[str, Figure] = {
    "emergence_curves": Figure(analysis_emergence_curves, plot_emergence_curves,
                               "max-PS curves of every run (log steps), colour B, facet C, onsets"),
    "upt_law": Figure(analysis_upt_law, plot_upt_law,
                      "observed vs predicted log UPT and the fitted law UPT(B, C)"),
    "frontier": Figure(analysis_frontier, plot_frontier,
                       "formed fraction over frequency x reliability with the frontier band"),
    "ablation": Figure(analysis_ablation, plot_ablation,
                       "top-k vs random-k head-ablation drops with p-values"),
    "emergence_curves_fast": Figure(lambda i: analysis_emergence_curves(i, FAST),
                                    plot_emergence_curves,
                                    "max-PS curves of the fast-regime grid (bxc-markov)"),
    "upt_law_fast": Figure(lambda i: analysis_upt_law(i, FAST), plot_upt_law,
                           "the UPT law fitted to the fast-regime grid (bxc-markov)"),
    "markov_factors": Figure(analysis_markov_factors, plot_markov_factors,
                             "formed / max PS over marginal x dependency x categoriality x regime"),
    "biinduct": Figure(analysis_biinduct, plot_biinduct,
                       "Bi-Induct: induction, anti-induction and held-out loss per condition"),
}


# the command-line inputs each figure reads (for its one-figure command in INDEX.md)
INPUT_FLAGS = {"emergence_curves": ("runs",), "upt_law": ("runs", "emergence"),
               "frontier": ("frontier_table",), "ablation": ("ablation_table",),
               "emergence_curves_fast": (), "upt_law_fast": (), "markov_factors": (),
               "biinduct": ()}


def make_figure(name: str, inp: Inputs, out: Path) -> tuple[FigureData, list[Path]]:
    """Run one registry entry: analysis, plot, and write ``name.png/.pdf/.csv`` (+ extras)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ihstats.plots import save_figure

    np.random.seed(inp.seed)  # belt and braces: every ihstats call also takes the seed
    entry = REGISTRY[name]
    data = entry.analysis(inp)
    sns.set_theme(style="ticks", context="paper")
    fig = entry.plot(data)
    if data.note:
        fig.text(0.01, -0.01, data.note, fontsize=6, color="0.35", va="top")
    files = save_figure(fig, out / name)
    plt.close(fig)
    data.frame.to_csv(out / f"{name}.csv", index=False)
    files.append(out / f"{name}.csv")
    for k, df in data.extra.items():
        df.to_csv(out / f"{name}_{k}.csv", index=False)
        files.append(out / f"{name}_{k}.csv")
    return data, files


def _command(name: str, args: argparse.Namespace) -> str:
    parts = ["python", "paper_figures/make.py", "--only", name]
    for flag in INPUT_FLAGS[name]:
        v = getattr(args, flag)
        if v is not None:
            parts += [f"--{flag.replace('_', '-')}", str(v)]
    if not args.full:
        parts.append("--fast")
    if args.simulated:
        parts.append("--simulated")
    if args.seed:
        parts += ["--seed", str(args.seed)]
    return shlex.join(parts + ["--out", _rel(args.out)])


def write_index(out: Path, results: list[dict], args: argparse.Namespace) -> Path:
    mode = "full sampling" if args.full else "fast (--fast: few draws, not for the paper)"
    lines = ["# Paper figures", "",
             f"Regenerated by `{shlex.join(['python', 'paper_figures/make.py', *args.argv])}` "
             f"({mode}, seed {args.seed}).", "",
             "| figure | status | data | files | command | seconds |", "|---|---|---|---|---|---|"]
    for r in results:
        files = ", ".join(f"`{p.name}`" for p in r.get("files", []))
        lines.append(f"| {r['name']} | {r['status']} | {r['source']} | {files} | "
                     f"`{r['command']}` | {r['seconds']:.1f} |")
    lines += ["", "## Notes", ""]
    lines += [f"- **{r['name']}** ({REGISTRY[r['name']].description}): {r['note'] or '-'}"
              for r in results]
    path = out / "INDEX.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python paper_figures/make.py",
                                 description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--runs", type=Path, default=None,
                    help="grid directory of run logs (emergence_curves; upt_law detects onsets "
                         "from it unless --emergence is given)")
    ap.add_argument("--emergence", type=Path, default=None,
                    help=f"emergence table CSV for upt_law (default: {EXAMPLES['emergence'].name},"
                         f" simulated, when --runs is not given)")
    ap.add_argument("--frontier-table", type=Path, default=None,
                    help=f"run table for frontier (default: {EXAMPLES['frontier'].name}, simulated)")
    ap.add_argument("--ablation-table", type=Path, default=None,
                    help=f"tidy ablation table for ablation (default: {EXAMPLES['ablation'].name},"
                         f" simulated)")
    ap.add_argument("--only", nargs="+", choices=list(REGISTRY), default=None, metavar="NAME",
                    help=f"figures to make (default all): {', '.join(REGISTRY)}")
    ap.add_argument("--fast", action="store_true",
                    help="quick look: 2 chains x 300 draws, 999 resamples (default: paper "
                         "quality, 4 x 1000 draws, 9999 resamples; a few minutes here)")
    ap.add_argument("--full", action="store_true", help="paper quality (the default; kept for "
                                                         "old command lines)")
    ap.add_argument("--seed", type=int, default=0, help="seed of every sampler (default 0)")
    ap.add_argument("--simulated", action="store_true",
                    help="draw upt_law, frontier and ablation from the shipped SIMULATED examples "
                         "in data/ (never the default)")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help="folder of shipped real sets (default data/reference_runs)")
    ap.add_argument("--out", type=Path, default=FIGURES,
                    help="output folder (default paper_figures/figures, the committed figures)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder and report every CSV that differs "
                         "from the one in --out (exit 1 if any)")
    ap.add_argument("--list", action="store_true", help="list the figures and exit")
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.full = not args.fast
    return args


def csv_differences(new: Path, old: Path) -> list[str]:
    """Why CSV ``new`` differs from committed ``old`` (empty when they agree)."""
    if not old.is_file():
        return [f"{old.name}: not committed"]
    a, b = pd.read_csv(new), pd.read_csv(old)
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return [f"{old.name}: shape/columns {a.shape} vs committed {b.shape}"]
    sampler = old.name.startswith(SAMPLER_CSV)
    bad = []
    for c in a.columns:
        x, y = a[c], b[c]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            x, y = x.to_numpy(float), y.to_numpy(float)
            span = np.nanmax(np.abs(y)) if len(y) and np.isfinite(y).any() else 0.0
            if sampler:
                span = max(np.nanmax(y) - np.nanmin(y), 1e-12) if np.isfinite(y).any() else 0.0
            tol = (SAMPLER_TOL if sampler else 1e-9) * span + 1e-12
            same = (np.isnan(x) & np.isnan(y)) | (np.abs(x - y) <= tol)
        else:
            same = (x.astype(str) == y.astype(str)).to_numpy()
        if not same.all():
            bad.append(f"{old.name}: column {c!r} differs in {int((~same).sum())} row(s)")
    return bad


def check(args: argparse.Namespace) -> int:
    """Regenerate into a temporary folder and compare every CSV with the committed ones."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        argv = [a for a in args.argv if a != "--check"]
        if "--out" in argv:
            i = argv.index("--out")
            del argv[i:i + 2]
        rc = main([*argv, "--out", tmp])
        made = sorted(Path(tmp).glob("*.csv"))
        problems = [d for p in made for d in csv_differences(p, args.out / p.name)]
    names = {p.name for p in made}
    wanted = {p.name for p in args.out.glob("*.csv")
              if args.only is None or p.name.split(".")[0].startswith(tuple(args.only))}
    problems += [f"{n}: committed but not regenerated" for n in sorted(wanted - names)]
    for line in problems:
        print(f"[differs] {line}")
    print(f"check: {len(made)} CSV(s) regenerated, {len(problems)} difference(s) "
          f"(sampler CSVs {', '.join(c + '*' for c in SAMPLER_CSV)}: within {SAMPLER_TOL:.0%} of each column's "
          f"range; others exact)")
    return 1 if problems or rc else 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, fig in REGISTRY.items():
            print(f"{name:18s} {fig.description}")
        return 0
    if args.runs is not None and not args.runs.is_dir():
        print(f"error: --runs: not a directory: {args.runs}", file=sys.stderr)
        return 2
    if args.check:
        return check(args)
    inp = Inputs(args.runs, args.emergence, args.frontier_table, args.ablation_table,
                 args.full, args.seed, args.simulated, args.reference)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.only or list(REGISTRY):
        t0 = time.perf_counter()
        r = {"name": name, "command": _command(name, args), "note": "", "source": "-"}
        try:
            data, files = make_figure(name, inp, out)
            r.update(status="ok", files=files, note=data.note,
                     source=("SIMULATED: " if data.simulated else "real: ") + data.source)
            print(f"[ok]      {name}: {', '.join(p.name for p in files)} "
                  f"({'simulated example' if data.simulated else 'real data'})")
        except Skip as e:
            r.update(status="skipped", note=str(e))
            print(f"[skipped] {name}: {e}")
        except Exception as e:  # noqa: BLE001 -- one figure's failure must not stop the others
            r.update(status="FAILED", note=f"{type(e).__name__}: {e}")
            print(f"[FAILED]  {name}: {type(e).__name__}: {e}", file=sys.stderr)
            traceback.print_exc(limit=3, file=sys.stderr)
        r["seconds"] = time.perf_counter() - t0
        results.append(r)
    index = write_index(out, results, args)
    failed = [r["name"] for r in results if r["status"] == "FAILED"]
    print(f"wrote {out}/ and {index}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message=".*BLAS.*")
    sys.exit(main())
