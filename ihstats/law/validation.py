"""Out-of-sample validation of the UPT law: leave-one-cell-out and held-out grids.

Two ways to ask how often the law's interval holds for a run it did not see:

- :func:`cross_validate` (leave one cell out): for each cell, refit the law without any of its
  seeds and predict its runs with the posterior predictive for a *new* cell (the cell offset and
  the seed scatter both in the interval);
- :func:`validate_holdout`: fit on one grid (or take a saved posterior) and predict another; the
  fit is kept with its predictions of the held-out runs as ArviZ's ``predictions`` group
  (``idata.nc`` beside the scores).

With a seed effect (``UPTLawSpec(seed_effect=True)``) a run whose training seed the fit saw is
predicted with that seed's offset, and the law is scored a second time with every seed new
(``NEW_SEED``: what knowing the seed is worth). With seeds by kind (``seed_kinds=True``) every
held-out run draws a new weight seed and a new data seed. The headline (:func:`new_seed_headline`,
``meta["new_seed"]``, printed first by ``analyses/validate_law.py``) is the score on the held-out
runs whose weight seed and data seed the fit never saw: coverage of the 90% interval, its median
width and the PIT histogram.

Each prediction is scored by :func:`ihstats.law.scoring.score_runs` (coverage of the 50% and 90%
intervals, PIT, log predictive density, error of the median; censored runs by their survival
probability), and so is every baseline of :mod:`ihstats.law.scoring`, fitted on the same training
runs. Use (the spec / run / results pattern of the other ihstats fits)::

    spec = ValidationSpec(law=UPTLawSpec(cell_effect=True))
    res = cross_validate(table, spec, fit_kw=dict(draws=300, tune=300, chains=2))
    res.summary(); res.save("results/validate_law")
    ihstats.law.report.write_validation_figure(res, "results/validate_law")

Refits: each fold builds and samples a fresh PyMC model (the training rows change, and the law's
likelihood indexes censored and uncensored rows with constants of the graph, so one compiled
model cannot be re-pointed at other rows with ``pm.set_data``). Most of the C code the first fold
compiles is reused from pytensor's compile cache by the later ones (on ``bxc-markov`` with a cold
cache and a loaded machine: 585 s for the first fold, 50-100 s for the last ones); the ops whose
constants change with the rows are compiled anew. The per-fold wall time is in
``meta["fold_s"]``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.base.fileio import atomic_write, atomic_write_text
from ihstats.law.comparison import (MIXTURE, SINGLE, compare_circuits, compare_forms, fit_circuits, fit_forms,
                                    form_label, heldout_table)
from ihstats.law.data import LawData, prepare
from ihstats.law.mixture import mixture_predictive
from ihstats.law.model import UPTLawModel
from ihstats.law.results import fitted_range
from ihstats.law.scoring import (LAW, add_predictions, baseline_predictives, law_predictive, score_runs,
                                 summarize_scores)
from ihstats.law.spec import SEED_KINDS, UPTLawError, UPTLawSpec
from ihstats.base.progress import bar as progress_bar

NO_CELL = "law without the new-cell term"
NEW_SEED = "law with every seed new"
#: The comparison tables a validation may hold in its meta (each also saved as ``<key>.csv``).
COMPARISONS = ("loo_forms", "heldout_forms", "loo_circuits", "heldout_circuits")


@dataclass(frozen=True)
class ValidationSpec:
    """What to validate and how to score it.

    Parameters
    ----------
    law : UPTLawSpec
        The law refitted in every fold (held-out mode: fitted on the training grid).
    levels : tuple of float
        Central predictive interval probabilities to score.
    baselines : bool
        Score the baselines of :mod:`ihstats.law.scoring` beside the law.
    n_pred_draws : int
        Posterior draws per predictive mixture.
    seed : int
        Seed of the predictive draws and of the randomised PIT.
    forms : tuple of str
        Law forms (:mod:`ihstats.law.forms`) to fit beside the law and compare: by PSIS-LOO on the
        fitted table (``meta["loo_forms"]``) and, held out, by log score (``meta["heldout_forms"]``;
        each form scored as ``"<form> form"``). Empty: none.
    circuits : bool
        Fit the two-circuit mixture (:mod:`ihstats.law.mixture`) and compare it with the
        single-circuit power law the same two ways (``meta["loo_circuits"]``, ``["heldout_circuits"]``).
    """

    law: UPTLawSpec = field(default_factory=UPTLawSpec)
    levels: tuple = (0.5, 0.9)
    baselines: bool = True
    n_pred_draws: int = 2000
    seed: int = 0
    forms: tuple = ()
    circuits: bool = False

    def __post_init__(self):
        if not all(0 < p < 1 for p in self.levels):
            raise UPTLawError(f"levels: every level must be in (0, 1), got {list(self.levels)}")
        if self.n_pred_draws < 10:
            raise UPTLawError(f"n_pred_draws: need at least 10, got {self.n_pred_draws}")


@dataclass
class ValidationResults:
    """Per-run scores of the law and the baselines, and what produced them.

    Attributes
    ----------
    runs : pandas.DataFrame
        One row per (model, run): ``model, fold, run_id, cell_id, B, C, y, censored, region``
        (``interpolation`` when B and C lie inside the training range, else ``extrapolation``)
        and the columns of :func:`ihstats.law.scoring.score_runs`.
    meta : dict
        ``mode`` (``loco`` or ``holdout``), ``source``, spec, sampler settings, wall seconds,
        per-fold seconds, the validated (training) range of B and C.
    idata : InferenceData or DataTree or None
        Held-out mode: the law's fit (its prior and posterior predictive when fitted here) with
        the held-out runs' ``predictions`` (:func:`ihstats.law.scoring.add_predictions`); None
        for leave-one-cell-out, where every fold has its own posterior.
    """

    runs: pd.DataFrame
    meta: dict
    idata: Any = field(default=None, repr=False)

    @property
    def levels(self) -> tuple:
        return tuple(self.meta["levels"])

    def summary(self, by=("model",)) -> pd.DataFrame:
        """Scores per model (``by`` adds e.g. ``region``), law first: :func:`summarize_scores`."""
        return summarize_scores(self.runs, by=by, levels=self.levels)

    def law_scores(self) -> dict:
        """The law's summary row as a dict (coverage, log score, widths, ...)."""
        s = self.summary()
        return {k: (v.item() if hasattr(v, "item") else v)
                for k, v in s[s["model"] == LAW].iloc[0].items()}

    def record(self) -> dict:
        """The JSON record ``save`` writes (``ihstats.law.predict`` reads ``law`` and ``range``)."""
        return {**self.meta, "law": self.law_scores(),
                "models": self.summary().to_dict(orient="records"),
                "by_region": self.summary(by=("model", "region")).to_dict(orient="records")}

    def save(self, out_dir) -> dict:
        """Write ``runs.csv``, ``summary.csv``, ``summary_by_region.csv``, ``validation.json`` and,
        with a fit, ``idata.nc`` (each file atomically); returns name -> path. The figure is
        :func:`ihstats.law.report.write_validation_figure`'s."""
        out = Path(out_dir)
        paths = {"runs": out / "runs.csv", "summary": out / "summary.csv",
                 "by_region": out / "summary_by_region.csv", "record": out / "validation.json"}
        atomic_write_text(paths["runs"], self.runs.to_csv(index=False))
        atomic_write_text(paths["summary"], self.summary().to_csv(index=False))
        atomic_write_text(paths["by_region"], self.summary(by=("model", "region")).to_csv(index=False))
        atomic_write_text(paths["record"], json.dumps(self.record(), indent=2, default=_plain) + "\n")
        if self.idata is not None:
            paths["idata"] = atomic_write(out / "idata.nc", lambda tmp: _bayes.to_netcdf(self.idata, tmp))
        for key in COMPARISONS:  # the comparison tables, when they were asked for
            if key in self.meta:
                paths[key] = out / f"{key}.csv"
                atomic_write_text(paths[key], pd.DataFrame(self.meta[key]).to_csv(index=False))
        return paths


def _plain(obj):
    return obj.item() if isinstance(obj, np.generic) else str(obj)


# ---- scoring one fold ------------------------------------------------------------------------

def subset(data: LawData, mask) -> LawData:
    """The runs of ``data`` where ``mask`` holds (the arrays a predictive needs; centres kept)."""
    m = np.asarray(mask, dtype=bool)
    return LawData(table=data.table[m].reset_index(drop=True), y=data.y[m], upper=data.upper[m],
                   censored=data.censored[m], me_sd=data.me_sd[m],
                   logs={k: v[m] for k, v in data.logs.items()}, centres=data.centres)


def _region(test: LawData, train_range: dict) -> np.ndarray:
    outside = np.zeros(len(test.y), dtype=bool)
    for k, (lo, hi) in train_range.items():
        if k in test.logs:
            v = np.exp(test.logs[k])
            outside |= (v < lo * (1 - 1e-9)) | (v > hi * (1 + 1e-9))
    return np.where(outside, "extrapolation", "interpolation")


def score_fold(spec: ValidationSpec, idata, train: LawData | None, test: LawData,
               fold: str, extra: dict | None = None) -> pd.DataFrame:
    """Score the law (posterior ``idata``), given ``train`` the baselines, and the predictives of
    ``extra`` (name -> :class:`~ihstats.law.scoring.Predictive`) on ``test``."""
    preds = {LAW: law_predictive(idata, test, n_draws=spec.n_pred_draws, seed=spec.seed), **(extra or {})}
    if "cell_sd" in idata.posterior:
        preds[NO_CELL] = law_predictive(idata, test, new_cell=False, n_draws=spec.n_pred_draws,
                                        seed=spec.seed)
    if "seed_sd" in idata.posterior:  # what knowing each run's seed is worth
        preds[NEW_SEED] = law_predictive(idata, test, known_seeds=False, n_draws=spec.n_pred_draws,
                                         seed=spec.seed)
    if spec.baselines and train is not None:
        preds.update(baseline_predictives(train, test, seed=spec.seed))
    t = test.table
    base = pd.DataFrame({
        "fold": fold, "run_id": t["run_id"].astype(str).to_numpy(),
        "cell_id": (t["cell_id"].astype(str).to_numpy() if "cell_id" in t else
                    t["run_id"].astype(str).to_numpy()),
        "B": np.exp(test.logs["B"]), "C": np.exp(test.logs["C"]), "y": test.y,
        "censored": test.censored, "region": _region(test, fitted_range(idata)),
        **{k: t[k].to_numpy() for k in ("seed", *SEED_KINDS) if k in t}})
    frames = [pd.concat([base.assign(model=name),
                         score_runs(p, test.y, test.censored, levels=spec.levels, seed=spec.seed)],
                        axis=1)
              for name, p in preds.items()]
    return pd.concat(frames, ignore_index=True)


def _meta(spec: ValidationSpec, mode: str, source: str, fit_kw: dict, idata) -> dict:
    return {"mode": mode, "source": source, "levels": list(spec.levels),
            "law_spec": asdict(spec.law), "fit": dict(fit_kw), "n_pred_draws": spec.n_pred_draws,
            "range": fitted_range(idata) if idata is not None else {}}


# ---- the two modes -------------------------------------------------------------------------

def cross_validate(table: pd.DataFrame, spec: ValidationSpec | None = None, *,
                   fit_kw: dict | None = None, source: str = "table",
                   progress: bool = True) -> ValidationResults:
    """Leave-one-cell-out validation of the law on an emergence table.

    Parameters
    ----------
    table : pandas.DataFrame
        Emergence table (docs/DESIGN.md columns); ``cell_id`` groups the seeds of a cell (without
        it every run is its own cell: leave-one-run-out).
    spec : ValidationSpec, optional
    fit_kw : dict, optional
        Passed to ``UPTLawModel.fit`` in every fold (draws, tune, chains, seed, ...).
    source : str
        Where the table came from (recorded).
    progress : bool
        A progress bar over the refits.

    Returns
    -------
    ValidationResults
        ``meta["range"]`` is the full table's B and C range (every fold's training range lies
        inside it); ``meta["fold_s"]`` the wall seconds of each refit; ``meta["skipped_folds"]``
        the cells not scored because the other cells hold one value of B or C (the law's
        exponent for it cannot be refitted), with why.
    """
    spec, fit_kw = spec or ValidationSpec(), dict(fit_kw or {})
    full = prepare(table, spec.law)
    cells = (full.table["cell_id"] if "cell_id" in full.table else full.table["run_id"]).astype(str)
    if cells.nunique() < 3:
        raise UPTLawError(f"cell_id: leave-one-cell-out needs at least 3 cells, got {cells.nunique()}")
    t0, frames, fold_s, idata, dropped, skipped = time.perf_counter(), [], [], None, {}, {}
    for cell in progress_bar(list(dict.fromkeys(cells)), desc="refits", unit="fold", show=progress):
        t1 = time.perf_counter()
        keep = (cells != cell).to_numpy()
        train, thin = _without_thin_levels(full, keep, spec.law)
        if lone := [k for k in ("B", "C") if train[k].nunique() < 2]:
            # the other cells hold one value of B or C: no exponent to carry to this cell
            skipped[cell] = f"without it every training run has one {' and one '.join(lone)}"
            continue
        res = UPTLawModel.from_table(train, spec.law).fit(**fit_kw)
        frames.append(score_fold(spec, res.idata, res.data, subset(full, ~keep), fold=cell))
        if thin:
            dropped[cell] = thin
        fold_s.append(time.perf_counter() - t1)
    if not frames:
        raise UPTLawError(f"leave-one-cell-out: no fold could be refitted ({skipped})")
    idata = res.idata
    meta = _meta(spec, "loco", source, fit_kw, idata)
    meta.update(range={k: [float(np.exp(v.min())), float(np.exp(v.max()))]
                       for k, v in full.logs.items()},
                n_folds=len(fold_s), fold_s=fold_s, wall_s=time.perf_counter() - t0,
                thin_levels=dropped, skipped_folds=skipped)
    if spec.forms or spec.circuits:  # LOO on the whole table (the folds refit the law alone)
        meta.update(alternatives(spec, table, None, fit_kw)[1])
    return ValidationResults(pd.concat(frames, ignore_index=True), meta)


def _without_thin_levels(full: LawData, keep: np.ndarray, law: UPTLawSpec) -> tuple[pd.DataFrame, list]:
    """A fold's training rows, less those of a ``sigma_by`` level that leaving the cell out left
    with fewer than two uncensored runs (its scatter cannot be estimated from the rest). Without
    them the fit never sees that level, so the held-out runs there are predicted with a new
    level's scatter, drawn from the hierarchy: the honest interval for a level the fit knows
    nothing about. Returns the rows and the levels dropped (listed in ``meta["thin_levels"]``)."""
    train = full.table[keep]
    if not law.sigma_by:
        return train, []
    n_obs = train.loc[~full.censored[keep], law.sigma_by].value_counts()
    thin = [v for v in train[law.sigma_by].unique() if n_obs.get(v, 0) < 2]
    out = train[~train[law.sigma_by].isin(thin)]
    return out, [v.item() if hasattr(v, "item") else v for v in thin]


def _fitted_runs(train: LawData | None, idata) -> set[str]:
    """The run ids the law was fitted on: the training table's, else the posterior's ``run`` coordinate."""
    if train is not None:
        return set(train.table["run_id"].astype(str))
    try:
        return {str(r) for r in idata.posterior["run"].values}
    except (KeyError, AttributeError, TypeError):  # a posterior saved without run labels
        return set()


def _disjoint(fitted: set[str], test: LawData) -> None:
    """Refuse a test set that shares runs with the fit set: a run scored after being fitted makes
    the coverage a goodness of fit, not a prediction."""
    shared = sorted(fitted & set(test.table["run_id"].astype(str)))
    if shared:
        raise UPTLawError(f"test set: {len(shared)} of its {len(test.y)} runs were fitted too (e.g. {shared[:3]}); "
                          f"held-out validation needs disjoint fit and test sets (--fit and --test from different "
                          f"grids, or --cv cell)")


def validate_holdout(test_table: pd.DataFrame, spec: ValidationSpec | None = None, *,
                     train_table: pd.DataFrame | None = None, idata=None,
                     fit_kw: dict | None = None, source: str = "held-out table") -> ValidationResults:
    """Score the law fitted on ``train_table`` (or the saved posterior ``idata``) on the runs of
    ``test_table``; the baselines need ``train_table`` (skipped without it).

    Returns
    -------
    ValidationResults
        ``region`` tells runs inside the training range of B and C from extrapolations.
    """
    spec, fit_kw = spec or ValidationSpec(), dict(fit_kw or {})
    if train_table is None and idata is None:
        raise UPTLawError("validate_holdout: pass train_table (to fit) or idata (a saved posterior)")
    t0 = time.perf_counter()
    train = prepare(train_table, spec.law) if train_table is not None else None
    main = None
    if idata is None:
        main = UPTLawModel.from_table(train_table, spec.law).fit(**fit_kw)
        idata = main.idata
    # the test runs are predicted, not fitted: no cell or seed effect, size term or per-level
    # scatter to identify in them (each run's seed is read from its table row; a sigma_by level
    # with one run, or none formed, is still predicted: from the fitted level's sigma, or a new
    # level's for a value the fit never saw)
    test = prepare(test_table, replace(spec.law, cell_effect=False, size_term=False, sigma_by=None,
                                       seed_effect=False, seed_within=None, seed_kinds=False))
    _disjoint(_fitted_runs(train, idata), test)
    extra, compared = alternatives(spec, train_table, main, fit_kw, test=test) if train_table is not None else ({}, {})
    runs = score_fold(spec, idata, train, test, fold="held-out", extra=extra)
    add_predictions(idata, test, seed=spec.seed)
    meta = _meta(spec, "holdout", source, fit_kw, idata)
    meta.update(n_folds=1, wall_s=time.perf_counter() - t0, **compared,
                new_seed=new_seed_headline(runs, train.table if train is not None else None))
    for key, names in (("heldout_forms", [form_label(f) for f in spec.forms]),
                       ("heldout_circuits", [SINGLE, MIXTURE] if spec.circuits else [])):
        if names:
            meta[key] = heldout_table(runs, names).reset_index().to_dict(orient="records")
    return ValidationResults(runs, meta, idata)


def _kind(frame: pd.DataFrame, kind: str) -> pd.Series | None:
    """A table's seeds of one kind as labels (the ``seed`` where the kind's column is missing)."""
    col = frame[kind] if kind in frame else frame.get("seed")
    if col is None:
        return None
    if "seed" in frame:
        col = col.where(col.notna(), frame["seed"])
    return col.map(lambda v: "" if pd.isna(v) else f"{float(v):g}")


def new_seed_headline(runs: pd.DataFrame, train: pd.DataFrame | None, level: float = 0.9) -> dict:
    """The held-out score at new seeds: among ``runs`` (per-run scores) those whose weight seed and
    data seed no run of ``train`` had (all runs, ``basis`` saying so, without a training table or
    seeds), under the law's every-seed-new predictive where there is one, else the law's:
    ``n_runs``, coverage and median width (hi / lo) of the ``level`` interval, the PIT histogram
    (10 bins over [0, 1])."""
    model = NEW_SEED if (runs["model"] == NEW_SEED).any() else LAW
    r = runs[runs["model"] == model]
    basis = "every held-out run (the fit's seeds are not known here)"
    if train is not None and all(_kind(r, k) is not None and _kind(train, k) is not None for k in SEED_KINDS):
        new = np.ones(len(r), dtype=bool)
        for k in SEED_KINDS:
            new &= ~_kind(r, k).isin(set(_kind(train, k))).to_numpy()
        r, basis = r[new], "held-out runs whose weight seed and data seed the fit never saw"
    tag = f"{round(100 * level)}"
    hist = np.histogram(r["pit"].to_numpy(dtype=float), bins=10, range=(0.0, 1.0))[0] if len(r) else np.zeros(10)
    return {"model": model, "basis": basis, "n_runs": int(len(r)), "level": level,
            "cover": float(r[f"inside_{tag}"].mean()) if len(r) else float("nan"),
            "median_hi_lo_ratio": float(r[f"hi_lo_ratio_{tag}"].median()) if len(r) else float("nan"),
            "pit_hist": hist.astype(int).tolist()}


def alternatives(spec: ValidationSpec, table: pd.DataFrame, main, fit_kw: dict, *,
                 test: LawData | None = None) -> tuple[dict, dict]:
    """Fit the forms and the mixture ``spec`` asks for on ``table`` (``main``: the law's own fit,
    reused); returns their predictives of ``test`` (name -> Predictive; empty without ``test``)
    and the LOO comparison tables as records (``loo_forms``, ``loo_circuits``)."""
    preds, compared = {}, {}
    kw = dict(n_draws=spec.n_pred_draws, seed=spec.seed)
    if spec.forms:
        fits = fit_forms(table, spec.law, spec.forms, fits={spec.law.form: main} if main else None, **fit_kw)
        compared["loo_forms"] = compare_forms(fits).reset_index(names="model").to_dict(orient="records")
        if test is not None:
            preds.update({form_label(f): law_predictive(r.idata, test, **kw) for f, r in fits.items()})
    if spec.circuits:
        reuse = main if main is not None and main.spec == replace(spec.law, form="power", sigma_by=None,
                                                                  size_term=False, seed_effect=False,
                                                                  seed_within=None) else None
        fits = fit_circuits(table, spec.law, single=reuse, **fit_kw)
        compared["loo_circuits"] = compare_circuits(fits).reset_index(names="model").to_dict(orient="records")
        if test is not None:
            preds[SINGLE] = law_predictive(fits[SINGLE].idata, test, **kw)
            preds[MIXTURE] = mixture_predictive(fits[MIXTURE].idata, test, **kw)
    return preds, compared
