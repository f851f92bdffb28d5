"""The paper figures' builders: for each figure, an analysis (inputs -> the tidy frame behind it,
built with the package's own ``ihstats`` functions) and its plot (the tidy frame -> a Figure, drawn by
:mod:`ihstats.plots_paper`), collected in ``REGISTRY``. ``make.py`` runs them and owns the command
line, the files, ``INDEX.md`` and ``--check``.

Adding a figure: ``analysis_NAME(inputs) -> FigureData`` here, its drawing in
``ihstats/plots_paper.py``, and one ``REGISTRY`` entry.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ihstats.tables import summary_formed
from ihstats.ablation.biinduct import curves_frame
from ihstats.ablation.data import ablation_families, prepare as ablation_data
from ihstats.ablation.spec import AblationSpec
from ihstats.ablation.results import run_ablation_tests
from ihstats.emergence import curve_series, emergence_table, onset_metric
from ihstats.frontier.budget import per_run, two_budgets
from ihstats.frontier.model import FrontierModel
from ihstats.frontier.spec import FrontierSpec
from ihstats.io import load_grid
from ihstats.law.model import UPTLawModel
from ihstats.law.report import obs_vs_pred_frame
from ihstats.law.spec import UPTLawSpec
from ihstats.ablation.pooled import pooled_ablation_tests
from ihstats.ablation.spec import SEED_SEP
from ihstats.plots import plot_frontier_map
from ihstats.frontier.glm import SEPARATION_WORDS
from ihstats.plots_paper import (plot_ablation_summary, plot_biinduct, plot_emergence_curves,
                                 plot_frontier_onsets, plot_kv_recall, plot_markov_factors, plot_upt_law)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
EXAMPLES = {"emergence": DATA / "example_emergence.csv", "frontier": DATA / "example_frontier.csv",
            "ablation": DATA / "example_ablation.csv"}
REFERENCE = DATA / "reference_runs"
HDI = 0.9
# the shipped real sets each figure reads by default (data/reference_runs/<set>)
NATURAL, FAST = "bxc-cpu-h200-bf16", "bxc-law"
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


def rel_path(path: Path) -> str:
    """``path`` relative to the repository when inside it (for INDEX.md and notes)."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _shipped(inp: Inputs, name: str) -> Path:
    """The shipped real set ``data/reference_runs/<name>``, or Skip saying it is missing."""
    path = inp.reference / name
    if not (path / "grid.json").is_file():
        raise Skip(f"shipped set {rel_path(path)} missing (ship it with paper_figures/ship_runs.py); no simulated fallback "
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
        grid = load_grid(runs, on_error="skip")
        if grid.runs.empty:
            raise ValueError(f"--runs: no readable run directories in {runs}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skipped curves are counted in the note instead
            metric = onset_metric(grid.metrics)  # the in-distribution PS where logged (issue 52)
            table = emergence_table(grid, metric=metric, head="max", method="bayes", level=HDI,
                                    on_error="skip")
        inp.cache[key] = (grid, curve_series(grid.metrics, metric, "max"), table)
    return inp.cache[key]


def analysis_emergence_curves(inp: Inputs, shipped: str = NATURAL) -> FigureData:
    runs = inp.runs if inp.runs is not None and shipped == NATURAL else _shipped(inp, shipped)
    grid, curves, table = _grid_emergence(inp, runs)
    factors = grid.runs[["run_id", *[c for c in ("cell_id", "seed", "B", "C") if c in grid.runs]]]
    if not {"B", "C"} <= set(factors):
        raise ValueError("--runs: the runs' config.json lack train.batch_size/train.context (B, C)")
    cols = ["run_id", "onset", "onset_lo", "onset_hi", "censored", "last_step", "method"]
    frame = (curves.rename(columns={"value": "max_ps"})[["run_id", "step", "max_ps"]]
             .merge(factors, on="run_id").merge(table[cols], on="run_id", how="left")
             .assign(metric=table["metric"].iloc[0] if len(table) else "ps"))
    n_skip = grid.runs["run_id"].nunique() - table["run_id"].nunique()
    note = f"{n_skip} run(s) without an onset (detector rejected the curve)" if n_skip else ""
    return FigureData(frame.sort_values(["C", "B", "run_id", "step"]).reset_index(drop=True),
                      f"{rel_path(runs)} (real logs; onsets by ihstats.emergence, bayes, on "
                      f"{table['metric'].iloc[0] if len(table) else 'ps'})", False,
                      note=note)


# ====================================================================== 2. UPT law
def analysis_upt_law(inp: Inputs, shipped: str = NATURAL) -> FigureData:
    mine = shipped == NATURAL  # --emergence / --runs / --simulated replace the natural-text set
    if mine and (inp.emergence is not None or inp.simulated):
        table, source, simulated = _source(inp.emergence, "emergence", "--emergence")
    else:
        runs = inp.runs if mine and inp.runs is not None else _shipped(inp, shipped)
        table = _grid_emergence(inp, runs)[2]
        source, simulated = f"{rel_path(runs)} (real logs; emergence by ihstats.emergence)", False
    b = inp.budget
    res = UPTLawModel.from_table(table, UPTLawSpec(hdi_prob=HDI)).fit(draws=b["draws"], tune=b["tune"],
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
    """One row per run (frequency, reliability, formed, basis) from the grid's summary.csv: formed as
    the fits count it (certified, or the crossing on logs without the general probe, said in ``basis``)."""
    t = _knob_columns(pd.read_csv(grid / "summary.csv"), ("frequency", "reliability"))
    formed, basis = summary_formed(t)
    return t[["run_id", "frequency", "reliability"]].assign(formed=formed, basis=basis)


# the shipped frontier sets: the semi-natural transects (issue 41) and the former Markov grid
FREQREL = {"freqrel": "semi-natural bigrams, two transects, 3 seeds",
           "freqrel-markov": "Markov tokens, 5 x 5 grid, one seed"}


def analysis_frontier(inp: Inputs, name: str = "freqrel") -> FigureData:
    if name == "freqrel" and (inp.frontier_table is not None or inp.simulated):
        table, source, simulated = _source(inp.frontier_table, "frontier", "--frontier-table")
    else:
        table, simulated = _freqrel_table(_shipped(inp, name)), False
        source = (f"{rel_path(inp.reference / name)}/summary.csv (real logs of the {name} preset: "
                  f"{FREQREL[name]}; formed per run at its cap)")
    b = inp.budget
    res = FrontierModel.from_table(table, FrontierSpec()).fit(draws=b["draws"], tune=b["tune"], chains=b["chains"],
                                          seed=inp.seed)
    cells = res.model.cells
    note = (f"which knob matters more (per unit log knob): {res.sensitivity_verdict(HDI)}; "
            f"separation: {SEPARATION_WORDS.get(res.separation, res.separation).split(':')[0]}; GLM: {res.glm.method}")
    extra = {"cells": cells, "sensitivity": res.sensitivity(HDI),
             "params": res.summary(HDI).reset_index()}  # which knob matters more, with intervals
    return FigureData(res.frontier(HDI), source, simulated, extra=extra, note=note)


def analysis_frontier_onsets(inp: Inputs) -> FigureData:
    """Every freqrel run read at its cap and at a third of it (ihstats.frontier.budget)."""
    grid = _shipped(inp, "freqrel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        long, short, comparison = two_budgets(load_grid(grid, on_error="raise"))
    runs = per_run(long, short)  # the run factors, seed included, formed and onset at both budgets
    cols = ["run_id", "frequency", "reliability", "seed", "formed_short", "onset_short",
            "formed_long", "onset_long"]
    return FigureData(runs[cols].sort_values(["frequency", "reliability", "seed"]).reset_index(drop=True),
                      f"{rel_path(grid)} (real logs, every run read at two budgets)", False,
                      extra={"budgets": comparison.table()}, note=comparison.verdict())


# ====================================================================== 4. ablation
ABLATION_PRIMARY = "repeat_nat_logprob"  # a seeded grid's figure metric: in distribution for every condition


def analysis_ablation(inp: Inputs) -> FigureData:
    shipped = inp.reference / "biinduct" / "ablation.parquet"
    if inp.ablation_table is None and not inp.simulated:
        if not shipped.is_file():
            raise Skip(f"{rel_path(shipped)} missing (python -m ihtrain.ablate on the biinduct runs, "
                       f"shipped with paper_figures/ship_runs.py --extra); no simulated fallback")
        table, source, simulated = _read_table(shipped, "ablation"), rel_path(shipped) + " (real)", False
    else:
        table, source, simulated = _source(inp.ablation_table, "ablation", "--ablation-table")
    b = inp.budget
    extra = {}
    if table["condition"].astype(str).str.contains(SEED_SEP).any():  # seeded: primary metric's top sets, a panel per run
        top = dict(ablation_families(table)).get("top", table.iloc[:0])
        extra["pooled"] = pooled_ablation_tests(top)
        table = top[top["metric"] == ABLATION_PRIMARY] if "metric" in top else top
    tests, _ = run_ablation_tests(table, b["n_resamples"], b["n_boot"], 0.05, inp.seed, True)
    rows = []
    for t in tests.to_dict("records"):
        metric = t.get("metric")
        metric = None if metric is None or pd.isna(metric) else metric
        a = ablation_data(table, AblationSpec(t["condition"], metric, True))
        keep = {k: t[k] for k in ("p_random", "p_random_holm", "p_sign_flip_gap") if k in t}
        rows.append({"condition": t["condition"], "metric": metric, "ablation": "top",
                     "set_id": "top", "drop": float(a.top.mean()), **keep})
        rows += [{"condition": t["condition"], "metric": metric, "ablation": "random",
                  "set_id": s, "drop": float(v), **keep}
                 for s, v in zip(a.set_ids, a.random.mean(1))]
    note = f"{b['n_resamples']} sign flips, {b['n_boot']} bootstrap draws, Holm across tests"
    if "pooled" in extra:
        note += "; seeds pooled (Holm over conditions x metrics): " + "; ".join(
            f"{r['condition']}/{r['metric']} p {r['p_pooled_holm']:.2g}" for r in extra["pooled"].to_dict("records")
            if r["metric"] == ABLATION_PRIMARY)
    return FigureData(pd.DataFrame(rows), source, simulated, extra={"tests": tests, **extra}, note=note)


# ====================================================================== 5. Markov factors
MARKOV_KNOBS = ("marginal", "dependency", "categoriality", "regime")


def analysis_markov_factors(inp: Inputs) -> FigureData:
    grid = _shipped(inp, "markov")
    t = _knob_columns(pd.read_csv(grid / "summary.csv"), MARKOV_KNOBS)
    formed, basis = summary_formed(t)
    frame = t[["run_id", *MARKOV_KNOBS, "onset", "max_ps", "steps", "data_entropy_rate"]].assign(formed=formed)
    frame["condition"] = np.where(frame["dependency"] == "iid", "iid",
                                  "markov/" + frame["categoriality"].astype(str))
    cells = (frame.groupby(["regime", "condition", "marginal"])
             .agg(n_runs=("formed", "size"), n_formed=("formed", "sum"),
                  max_ps=("max_ps", "mean"), entropy_rate=("data_entropy_rate", "mean")).reset_index())
    iid, mk = (frame.loc[frame["dependency"] == d, "formed"] for d in ("iid", "markov"))
    note = (f"formed: i.i.d. {int(iid.sum())}/{len(iid)}, Markov {int(mk.sum())}/{len(mk)}; "
            f"formed: {basis} (an uncensored Bayesian onset and final max PS >= 0.3)")
    return FigureData(frame.sort_values(["regime", "condition", "marginal"]).reset_index(drop=True),
                      f"{rel_path(grid)}/summary.csv (real logs)", False, extra={"cells": cells},
                      note=note)


# ====================================================================== 6. Bi-Induct curves
BIINDUCT_METRICS = {"ps": "induction (max PS over heads)",
                    "ps_nat": "induction on natural-stream repeats (max PS)",
                    "copy_fwd": "forward copy on S SEP S (max over heads)",
                    "dup_bwd": "duplicate-token on S SEP rev(S) (max over heads)",
                    "val_loss": "held-out loss (nats/token)"}


def analysis_biinduct(inp: Inputs) -> FigureData:
    path = _shipped(inp, "biinduct")
    frame = curves_frame(load_grid(path, on_error="skip"), BIINDUCT_METRICS)
    last = frame[frame["step"] == frame.groupby("run_id")["step"].transform("max")]
    final = last.pivot_table(index=["run_id", "mode"], columns="metric", values="value").reset_index()
    if "val_loss" in final:
        final["val_perplexity"] = np.exp(final["val_loss"])
    means = final.drop(columns="run_id").groupby("mode").mean()
    note = "mean over seeds at the end; " + "; ".join(
        f"{mode}: max PS {r.get('ps', np.nan):.2f}, copy {r.get('copy_fwd', np.nan):.2f}, "
        f"duplicate-token {r.get('dup_bwd', np.nan):.2f}, val loss {r.get('val_loss', np.nan):.3f}"
        for mode, r in means.iterrows())
    return FigureData(frame, f"{rel_path(inp.reference / 'biinduct')} (real logs)", False,
                      extra={"final": final}, note=note)


# ====================================================================== 7. Bi-Induct ICL probes
ICL_ORDER = ["none", "forward", "backward", "balanced", "random"]  # as in the curves' legend


def analysis_icl(inp: Inputs) -> FigureData:
    """Key -> value recall per condition and run under its controls (``icl_kv.csv`` of every run,
    ``python -m ihtrain.ablate RUN --icl``, gathered with the run's condition and seed)."""
    path = inp.reference / "biinduct" / "icl_kv.csv"
    if not path.is_file():
        raise Skip(f"{rel_path(path)} missing (python -m ihtrain.ablate RUN_DIR --icl on the biinduct runs, "
                   f"gathered by paper_figures/ship_runs.py --extra)")
    t = _read_table(path, "icl_kv")
    frame = t[["condition", "seed", "control", "n_prompts", "shots_mean", "hits1", "mean_logprob"]]
    order = [c for c in ICL_ORDER if c in set(frame["condition"])] + sorted(set(frame["condition"]) - set(ICL_ORDER))
    summary = (frame.pivot_table(index="condition", columns="control", values=["hits1", "mean_logprob"])
               .reindex(order))
    summary.columns = [f"{v}_{c}" for v, c in summary.columns]
    summary = summary.reset_index()
    note = "key -> value HITS@1 true / permuted / absent (mean over seeds): " + "; ".join(
        f"{r['condition']} {r['hits1_true']:.2f}/{r['hits1_permuted']:.2f}/{r['hits1_absent']:.2f}"
        for r in summary.to_dict("records"))
    frame = frame.sort_values(["condition", "seed", "control"], key=lambda c: c.map(order.index)
                              if c.name == "condition" else c)
    return FigureData(frame.reset_index(drop=True),
                      f"{rel_path(path)} (real; python -m ihtrain.ablate --icl per run)", False,
                      extra={"summary": summary}, note=note)


# ====================================================================== registry
def _curves(d: FigureData) -> Any:
    return plot_emergence_curves(d.frame, tag=_sim_tag(d))


def _law(d: FigureData) -> Any:
    return plot_upt_law(d.frame, d.extra["law"], d.extra["params"], tag=_sim_tag(d))


@dataclass(frozen=True)
class Figure:
    analysis: Callable[[Inputs], FigureData]
    plot: Callable[[FigureData], Any]
    description: str
    inputs: tuple[str, ...] = ()     # the command-line inputs it reads (its command in INDEX.md)


REGISTRY: dict[str, Figure] = {
    "emergence_curves": Figure(analysis_emergence_curves,
                               _curves,
                               "max-PS curves of every run (log steps), colour B, facet C, onsets", ("runs",)),
    "upt_law": Figure(analysis_upt_law,
                      _law,
                      "observed vs predicted log UPT and the fitted law UPT(B, C)", ("runs", "emergence")),
    "frontier": Figure(analysis_frontier,
                       lambda d: plot_frontier_map(d.extra["cells"], d.frame, hdi_prob=HDI,
                                                   title="Formation frontier" + _sim_tag(d)),
                       "formed fraction over frequency x reliability with the frontier band", ("frontier_table",)),
    "frontier_onsets": Figure(analysis_frontier_onsets,
                              lambda d: plot_frontier_onsets(d.frame, *d.extra["budgets"]["budget"]),
                              "freqrel: onset per run along each knob, read at the cap and at 1/3 of it"),
    "frontier_markov": Figure(lambda i: analysis_frontier(i, "freqrel-markov"),
                              lambda d: plot_frontier_map(d.extra["cells"], d.frame, hdi_prob=HDI,
                                                          title="Formation frontier, Markov tokens"),
                              "the former frequency x reliability grid on Markov tokens (freqrel-markov)"),
    "ablation": Figure(analysis_ablation,
                       lambda d: plot_ablation_summary(d.frame, d.extra["tests"],
                                                       title="Top-k vs random-k head ablations" + _sim_tag(d)),
                       "top-k vs random-k head-ablation drops with p-values", ("ablation_table",)),
    "emergence_curves_fast": Figure(lambda i: analysis_emergence_curves(i, FAST),
                                    _curves,
                                    "max-PS curves of the fast-regime grid (bxc-law)"),
    "upt_law_fast": Figure(lambda i: analysis_upt_law(i, FAST),
                           _law,
                           "the UPT law fitted to the fast-regime grid (bxc-law)"),
    "markov_factors": Figure(analysis_markov_factors, lambda d: plot_markov_factors(d.extra["cells"]),
                             "formed / max PS over marginal x dependency x categoriality x regime"),
    "biinduct": Figure(analysis_biinduct, lambda d: plot_biinduct(d.frame, BIINDUCT_METRICS),
                       "Bi-Induct: induction, copy, anti-induction and held-out loss per condition"),
    "biinduct_icl": Figure(analysis_icl,
                           lambda d: plot_kv_recall(d.frame, list(d.extra["summary"]["condition"])),
                           "Bi-Induct: key -> value recall per condition vs its permuted and absent controls"),
}

