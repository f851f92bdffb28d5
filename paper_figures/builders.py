"""The paper figures' analyses: for each figure, inputs -> the tidy frame behind it, built with the
package's own ``ihstats`` functions (and ``analyses/*.py``'s, loaded by path). ``registry.py``
pairs each with its drawing (:mod:`ihstats.figures.plots_paper`); ``make.py`` runs them and owns the command
line, the files, ``INDEX.md`` and ``--check``.

Adding a figure: ``analysis_NAME(inputs) -> FigureData`` here, its drawing in
``ihstats/figures/plots_paper.py``, and one entry in ``registry.py``.
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from ihstats.ablation.biinduct import claim_tests, curves_frame, run_table
from ihstats.tables import summary_formed
from ihstats.ablation.data import ablation_families, prepare as ablation_data
from ihstats.ablation.spec import AblationSpec
from ihstats.ablation.results import run_ablation_tests
from ihstats.emergence import curve_series, emergence_table, onset_metric
from ihstats.frontier.budget import per_run, two_budgets
from ihstats.frontier.model import FrontierModel
from ihstats.frontier.spec import FrontierSpec
from ihstats.base.io import load_grid, load_grids
from ihstats.law.arms import fit_arms
from ihstats.law.scoring import LAW
from ihstats.law.validation import ValidationSpec, validate_holdout
from ihstats.onset.model import OnsetModel
from ihstats.onset.product import fit_product
from ihstats.onset.spec import OnsetSpec
from ihstats.law.model import UPTLawModel
from ihstats.law.report import obs_vs_pred_frame
from ihstats.law.spec import UPTLawSpec
from ihstats.ablation.pooled import pooled_ablation_tests
from ihstats.ablation.spec import SEED_SEP
from ihstats.frontier.glm import SEPARATION_WORDS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
EXAMPLES = {"emergence": DATA / "example_emergence.csv", "frontier": DATA / "example_frontier.csv",
            "ablation": DATA / "example_ablation.csv"}
REFERENCE = DATA / "reference_runs"
HDI = 0.9
# the shipped real sets each figure reads by default (data/reference_runs/<set>)
NATURAL, DEFAULT, HOLDOUT = "bxc-cpu-h200-bf16", "bxc-cross", "bxc-cross-holdout"
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
def _law_figure(res, source: str, simulated: bool, b: dict) -> FigureData:
    """The tidy frames of a law figure from a fitted law: observed vs predicted per run, the fit's
    summary and the fitted law along B at each observed C beside the published forms."""
    frame = obs_vs_pred_frame(res, HDI)
    frame["log_observed"], frame["log_predicted"] = np.log(frame["observed"]), np.log(frame["predicted"])
    summ = res.summary(HDI).reset_index()
    Bs = np.exp(np.linspace(np.log(frame["B"].min()), np.log(frame["B"].max()), 30))
    lines = []
    for c in sorted(frame["C"].unique()):
        N = None
        if res.spec.size_term:
            N = float(np.exp(res.data.centres["N"]))  # law at the design's centre size
        p = res.predict(Bs, np.full_like(Bs, c), N, HDI)
        pub = {k: np.exp(t - a * np.log(Bs) - b_ * np.log(c)) for k, (t, a, b_) in PUBLISHED.items()}
        lines.append(p.assign(B=Bs, C=c, **pub)[["B", "C", "upt", "upt_lo", "upt_hi", *pub]])
    diag = res.diagnostics()
    note = (f"r(pred, obs log UPT) = {res.r_obs_pred:.3f}; {b['chains']} chains x {b['draws']} "
            f"draws" + (f"; warnings: {'; '.join(diag)}" if diag else ""))
    return FigureData(frame, source, simulated, extra={"params": summ, "law": pd.concat(lines)},
                      note=note)


def _fit_law(table: pd.DataFrame, spec: UPTLawSpec, inp: Inputs):
    b = inp.budget
    return UPTLawModel.from_table(table, spec).fit(draws=b["draws"], tune=b["tune"], chains=b["chains"],
                                                   seed=inp.seed)


def analysis_upt_law(inp: Inputs) -> FigureData:
    """The law on the natural-text grid (or ``--runs``/``--emergence``/``--simulated``)."""
    if inp.emergence is not None or inp.simulated:
        table, source, simulated = _source(inp.emergence, "emergence", "--emergence")
    else:
        runs = inp.runs if inp.runs is not None else _shipped(inp, NATURAL)
        table = _grid_emergence(inp, runs)[2]
        source, simulated = f"{rel_path(runs)} (real logs; emergence by ihstats.emergence)", False
    return _law_figure(_fit_law(table, UPTLawSpec(hdi_prob=HDI), inp), source, simulated, inp.budget)


def _default_law(inp: Inputs):
    """The default grid's emergence table and its law, fitted once (``fit_upt_law.py``'s default
    on a replicated grid: the cell effect on); shared by the law and the held-out figures."""
    key = f"law:{DEFAULT}"
    if key not in inp.cache:
        table = _grid_emergence(inp, _shipped(inp, DEFAULT))[2]
        inp.cache[key] = (table, _fit_law(table, UPTLawSpec(hdi_prob=HDI, cell_effect=True), inp))
    return inp.cache[key]


def analysis_upt_law_default(inp: Inputs) -> FigureData:
    _, res = _default_law(inp)
    source = (f"{rel_path(inp.reference / DEFAULT)} (real logs; onsets in distribution, the rise that "
              f"reaches the level 0.5; law with the cell effect, as analyses/fit_upt_law.py)")
    return _law_figure(res, source, False, inp.budget)


# ====================================================================== 2b. held-out validation
def analysis_validation(inp: Inputs) -> FigureData:
    """The default's law (its posterior, reused) scored on the held-out grid's runs
    (``ihstats.law.validation.validate_holdout``, as ``analyses/validate_law.py --fit --test``)."""
    train, res = _default_law(inp)
    test_dir = _shipped(inp, HOLDOUT)
    test = _grid_emergence(inp, test_dir)[2]
    v = validate_holdout(test, ValidationSpec(law=res.spec, seed=inp.seed), train_table=train, idata=res.idata,
                         source=rel_path(test_dir))
    law = v.runs[v.runs["model"] == LAW].reset_index(drop=True)
    summary = v.summary(by=("model", "region"))
    seeds = sorted(test["seed"].dropna().astype(int).unique()) if "seed" in test else []
    s = v.law_scores()
    note = (f"{int(law['inside_90'].sum())} of {len(law)} held-out runs inside their 90% interval, "
            f"median span {law['hi_lo_ratio_90'].median():.1f}x; {int((law['pit'] < 0.4).sum())} of {len(law)} "
            f"PIT values below 0.4 (KS p {s['pit_ks_p']:.2g}); mean log score {s['mean_lpd']:.2f}. The held-out runs use "
            f"seeds {', '.join(map(str, seeds))}, which the fit saw at other cells: new cells, not new seeds")
    return FigureData(law, f"{rel_path(test_dir)} predicted by the law fitted on {rel_path(inp.reference / DEFAULT)} "
                           f"(real logs)", False, extra={"summary": summary}, note=note)


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


EXTEND = "freqrel-extend"
#: the budgets the frontier figure draws a boundary at: freqrel's third of its cap, its cap, the extension's cap
FRONTIER_BUDGETS = (1_400, 4_200, 12_600)


def analysis_frontier_onsets(inp: Inputs) -> FigureData:
    """freqrel and freqrel-extend, each run read at its own cap (``ihstats.frontier.budget``, as
    ``analyses/fit_frontier.py --grid freqrel freqrel-extend``), the product model (one elasticity
    on f r, ``ihstats.onset.product.fit_product``) and its boundary at each budget."""
    longs, runs = [], []
    for name in ("freqrel", EXTEND):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            long, short, _ = two_budgets(load_grid(_shipped(inp, name), on_error="raise"))
        longs.append(long), runs.append(per_run(long, short).assign(grid=name, cap=float(long["last_step"].max())))
    model = OnsetModel.from_table(pd.concat(longs, ignore_index=True), OnsetSpec())
    b = inp.budget
    prod = fit_product(model, draws=b["draws"], tune=b["tune"], chains=b["chains"], seed=inp.seed)
    boundary = prod.boundary(list(FRONTIER_BUDGETS), HDI)
    products = np.exp(np.linspace(np.log(0.42), np.log(0.82), 40))
    line = prod.median_onset([(p, 1.0) for p in products], HDI).rename(columns={"frequency": "product"})
    cols = ["run_id", "grid", "frequency", "reliability", "seed", "cap", "formed_long", "onset_long"]
    frame = pd.concat(runs, ignore_index=True)[cols].rename(columns={"formed_long": "crossed", "onset_long": "onset"})
    frame["product"] = frame["frequency"] * frame["reliability"]
    e = prod.elasticity(HDI)
    longest = frame.sort_values("cap").drop_duplicates(["frequency", "reliability", "seed"], keep="last")
    note = (f"product model: one elasticity e = {e['median']:.2f} [{e['lo']:.2f}, {e['hi']:.2f}] on f r "
            f"({b['chains']} x {b['draws']} draws); boundary f r at " + ", ".join(
                f"{r.budget:,.0f} updates {r.product:.3f} [{r.product_lo:.3f}, {r.product_hi:.3f}]"
                for r in boundary.itertuples())
            + f"; {int(longest['crossed'].sum())} of {len(longest)} trajectories crossed PS 0.3 by their longest read "
              f"({len(frame) - len(longest)} trajectories read by both grids, counted once)")
    return FigureData(frame.sort_values(["product", "seed"]).reset_index(drop=True),
                      f"{rel_path(inp.reference / 'freqrel')} + {rel_path(inp.reference / EXTEND)} (real logs, each "
                      f"read at its own cap)", False,
                      extra={"boundary": boundary, "line": line.drop(columns="reliability")}, note=note)


# ====================================================================== 4. ablation
ABLATION_PRIMARY = "repeat_nat_logprob"  # a seeded grid's figure metric: in distribution for every condition


def analysis_ablation(inp: Inputs) -> FigureData:
    shipped = inp.reference / BIINDUCT_TEXT / "ablation.parquet"
    if inp.ablation_table is None and not inp.simulated:
        if not shipped.is_file():
            raise Skip(f"{rel_path(shipped)} missing (python -m ihtrain.ablate on the {BIINDUCT_TEXT} runs, "
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
        note += f"; seeds pooled on {ABLATION_PRIMARY} (Fisher, exact null; Holm over conditions x metrics): " + "; ".join(
            f"{r['condition']} p {r['p_pooled']:.2g} (Holm {r['p_pooled_holm']:.2g})"
            for r in extra["pooled"].to_dict("records")
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
    note = (f"crossed: i.i.d. {int(iid.sum())}/{len(iid)}, Markov {int(mk.sum())}/{len(mk)}; "
            f"{basis} (an uncensored Bayesian onset and final max PS >= 0.3; not certified)")
    return FigureData(frame.sort_values(["regime", "condition", "marginal"]).reset_index(drop=True),
                      f"{rel_path(grid)}/summary.csv (real logs)", False, extra={"cells": cells},
                      note=note)


# ====================================================================== 5b. Markov factors at matched entropy
ENTROPY_GRIDS = ("markov", "markov-entropy", "markov-entropy-high")


def _analysis_module(name: str):
    """``analyses/<name>.py`` as a module: the figures reuse the analysis scripts' own functions."""
    spec = importlib.util.spec_from_file_location(f"analyses_{name}", ROOT / "analyses" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def analysis_markov_entropy(inp: Inputs) -> FigureData:
    """Every run of the markov grid and its entropy-matched companions with its chain's entropy
    rate; the matched contrasts of ``analyses/markov_entropy.py`` (same functions, default tolerance)."""
    me = _analysis_module("markov_entropy")
    runs = pd.concat([me.read_runs(_shipped(inp, g)) for g in ENTROPY_GRIDS], ignore_index=True)
    cells = me.cell_table(runs)
    contr = me.contrasts(cells, ENTROPY_TOLERANCE)
    mk = runs[runs["dependency"] == "markov"]
    note = (f"crossed PS 0.3 by 12,000 updates: i.i.d. {int(runs.loc[runs['dependency'] == 'iid', 'formed'].sum())}/"
            f"{int((runs['dependency'] == 'iid').sum())}, Markov {int(mk['formed'].sum())}/{len(mk)}; matched within "
            f"{ENTROPY_TOLERANCE:g} bits: " + "; ".join(
                f"{r.contrast} ({r.regime}): {r.formed_tested}/{r.runs_tested} vs {r.formed_other}/{r.runs_other}, "
                f"p {r.p_value:.2g}" + (f", onsets p {r.onset_p:.2g}" if np.isfinite(r.onset_p) else "")
                for r in contr.itertuples() if r.n_strata and r.contrast in MATCHED_SHOWN))
    return FigureData(runs.sort_values(["grid", "regime", "marginal", "categoriality", "seed"]).reset_index(drop=True),
                      ", ".join(rel_path(inp.reference / g) for g in ENTROPY_GRIDS) + " (real logs)", False,
                      extra={"cells": cells.drop(columns="times"), "contrasts": contr}, note=note)


ENTROPY_TOLERANCE = 0.25  # analyses/markov_entropy.py's default: the spread of one cell's seeds' chains
MATCHED_SHOWN = ("high categoriality vs none or low", "Zipf vs the other marginals", "Gaussian vs the other marginals")


# ====================================================================== 6. Bi-Induct on the builtin text
BIINDUCT_TEXT = "biinduct-text-cpu"
BIINDUCT_PANELS = {"ps": "induction (max PS over heads)", "ps_nat": "induction on natural-text repeats (max PS)",
                   "prev_token": "previous-token attention (max)", "val_loss": "held-out loss (nats/token)"}


def analysis_biinduct_text(inp: Inputs) -> FigureData:
    """Every run's curves and the verdict table of ``analyses/biinduct_verdicts.py`` (its defaults:
    concentration at PS 0.2, the ablation gap on natural-text repeats, alpha 0.05)."""
    path = _shipped(inp, BIINDUCT_TEXT)
    ablation = _read_table(path / "ablation.parquet", "ablation") if (path / "ablation.parquet").is_file() else None
    runs = run_table(path, 0.2, ablation, "repeat_nat_logprob", "auto")
    claims = claim_tests(runs)
    curves = curves_frame(load_grid(path, on_error="skip"), BIINDUCT_PANELS)
    keep = ["claim", "measure", "column", "runs", "baseline", "n", "n_baseline", "mean", "mean_baseline", "chance",
            "chance_what", "p_for_holm", "p_against_holm", "floor_holm", "verdict"]
    claims = claims[[c for c in keep if c in claims]]
    crossed = runs.groupby("mode")["formed"].agg(["sum", "size"])
    note = ("runs whose max PS crossed 0.3 (crossings, not certified): " + ", ".join(
        f"{m} {int(r['sum'])}/{int(r['size'])}" for m, r in crossed.iterrows())
        + "; verdicts: p one-sided (Holm over a claim's measures) against the design's floor, 'not testable' when "
          "both groups sit within a factor 2 of the measure's chance level")
    return FigureData(curves, f"{rel_path(path)} (real logs, ablation.parquet, icl_kv.csv)", False,
                      extra={"claims": claims, "runs": runs}, note=note)


# ====================================================================== 7. a scored checkpoint series
PLANTED = DATA / "example_series_planted"


def analysis_scored_series(inp: Inputs) -> FigureData:
    """The planted series (data/example_series_planted: checkpoints blended from a random GPT to a
    hand-wired induction GPT on a known schedule, scored by ``python -m ihtrain.score`` as the
    scorer's tests do): max PS per revision and the onsets ``ihstats.emergence`` finds."""
    dirs = sorted(p for p in PLANTED.glob("B*") if (p / "series.json").is_file())
    if not dirs:
        raise Skip(f"{rel_path(PLANTED)} has no series (see its README for the command)")
    grid = load_grids(dirs)
    metric = onset_metric(grid.metrics)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = emergence_table(grid, metric=metric, head="max", method="bayes", level=HDI)
    curves = curve_series(grid.metrics, metric, "max").rename(columns={"value": "max_ps"})
    frame = curves[["run_id", "step", "max_ps"]].merge(grid.runs[["run_id", "B", "C"]], on="run_id").merge(
        table[["run_id", "onset", "onset_lo", "onset_hi", "censored"]], on="run_id", how="left")
    frame["planted_midpoint"] = PLANTED_MIDPOINT * frame["B"] ** PLANTED_EXPONENT
    ratio = table.set_index("B")["onset"]
    note = (f"PLANTED series, not a trained or public model: onsets found " + ", ".join(
        f"B {b}: {o:,.0f}" for b, o in ratio.items()) + f"; planted midpoints 20000 B^-0.8 (B 8: 3,789, B 32: 1,250); "
        f"onset ratio {ratio.iloc[0] / ratio.iloc[-1]:.2f} against the planted 3.03")
    return FigureData(frame.sort_values(["B", "step"]).reset_index(drop=True),
                      f"{rel_path(PLANTED)} (PLANTED test series scored by python -m ihtrain.score)", False, note=note)


PLANTED_MIDPOINT, PLANTED_EXPONENT = 20000.0, -0.8  # the planting schedule of tests/ihtrain/score/test_planted.py


# ====================================================================== 8. the mechanism experiment
def analysis_mechanism(inp: Inputs) -> FigureData:
    """Onsets per arm and C and the C exponent b per arm (``analyses/law_mechanism.py``'s functions,
    its default share: the density arm's C 32 cell is the fixed arm's)."""
    grid = _shipped(inp, "law-mechanism")
    lm = _analysis_module("law_mechanism")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = lm.onsets_from_grid(grid, {"density": ["fixed-c32"]})
    b = inp.budget
    draws, div = fit_arms(table, draws=b["draws"], tune=b["tune"], chains=b["chains"], seed=inp.seed)
    bt = lm.b_table(draws, HDI)
    frame = table.sort_values(["arm", "C", "seed"])[["arm", "C", "seed", "run_id", "onset", "onset_lo", "onset_hi",
                                                     "censored", "last_step"]].reset_index(drop=True)
    note = ("b per arm (90% HDI; arm - fixed, P(> 0)): " + "; ".join(
        f"{r.arm} {r.b:+.2f} [{r.b_lo:+.2f}, {r.b_hi:+.2f}]"
        + (f", diff {r.diff:+.2f} [{r.diff_lo:+.2f}, {r.diff_hi:+.2f}], P {r.p_diff_pos:.2f}"
           if np.isfinite(getattr(r, "diff", np.nan)) else "") for r in bt.itertuples())
        + f"; {b['chains']} x {b['draws']} draws, Student-t, runs below the level censored at their last step"
        + (f"; {div} divergences" if div else ""))
    return FigureData(frame, f"{rel_path(grid)} (real logs; fixed arm = bxc-cross's B 32 runs)", False,
                      extra={"b": bt}, note=note)
