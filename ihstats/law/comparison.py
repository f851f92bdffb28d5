"""Which law the data prefer: the forms of :mod:`ihstats.law.forms` against each other, and the
two-circuit mixture of :mod:`ihstats.law.mixture` against the single-circuit law.

Two scores, each as an elpd difference with its standard error, best model first:

- PSIS-LOO on the fitted runs (``az.compare`` through :func:`ihstats._bayes.compare`):
  :func:`compare_forms`, :func:`compare_circuits`. Every model's ``log_likelihood`` group holds the
  same quantity per run, the (censored) density of its log onset, so the elpds are comparable.
  ``elpd_loo = lpd - p_loo``: the in-sample fit minus the penalty for effective parameters. Each
  table reports the two apart (:func:`split_penalty`: ``lpd_diff`` and ``p_loo_diff`` beside
  ``elpd_diff``), so a lead won on the penalty (one parameter fewer) is not read as a better fit.
- The held-out log score on runs no fit saw (:func:`heldout_table`, from the per-run scores of
  :mod:`ihstats.law.validation`): the summed log predictive density per model, and the paired
  difference to the best with its SE ``sqrt(n var(d_i))``, as ``az.compare`` computes ``dse``.

:func:`preference` turns a table into the sentence the reports print ("the data prefer ... by ...").
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.base import progress
from ihstats.law.mixture import CircuitMixtureModel
from ihstats.law.model import UPTLawModel
from ihstats.law.spec import FORMS, OBS, UPTLawSpec

MIXTURE = "two-circuit mixture"
SINGLE = "single-circuit law"
#: Columns of a comparison table as the CLIs print them.
COLUMNS = ["rank", "elpd_loo", "p_loo", "elpd_diff", "lpd_diff", "p_loo_diff", "se", "dse", "weight"]


def form_label(form: str) -> str:
    """A form's name in the comparison tables and the validation scores."""
    return f"{form} form"


def fit_forms(table: pd.DataFrame, spec: UPTLawSpec, forms=FORMS, *, fits: dict | None = None,
              **fit_kw) -> dict:
    """``{form: UPTLawResults}`` of ``spec`` under each of ``forms`` (``fits`` reuses fits made)."""
    out = dict(fits or {})
    for form in forms:
        if form not in out:
            progress.step(f"law forms: fitting the {form} form")
            out[form] = UPTLawModel.from_table(table, replace(spec, form=form)).fit(**fit_kw)
    return out


def split_penalty(frame: pd.DataFrame) -> pd.DataFrame:
    """A LOO comparison (best first) with its elpd difference split: ``lpd`` (in-sample log
    pointwise predictive density, ``elpd_loo + p_loo``), ``lpd_diff`` (the best's lpd minus this
    model's: how much better the best fits) and ``p_loo_diff`` (this model's effective parameters
    minus the best's), so ``elpd_diff = lpd_diff + p_loo_diff``."""
    out = frame.copy()
    out["lpd"] = out["elpd_loo"] + out["p_loo"]
    out["lpd_diff"] = float(out["lpd"].iloc[0]) - out["lpd"]
    out["p_loo_diff"] = out["p_loo"] - float(out["p_loo"].iloc[0])
    return out


def _compare(idatas: dict) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto-k warnings: the table's "warning" column says it
        return split_penalty(_bayes.compare(idatas, var_name=OBS))


def compare_forms(fits: dict) -> pd.DataFrame:
    """PSIS-LOO comparison of fitted forms (``{form: results}``), best first, indexed by form label."""
    return _compare({form_label(f): r.idata for f, r in fits.items()})


def fit_circuits(table: pd.DataFrame, spec: UPTLawSpec, *, single=None, labels: str = "auto",
                 **fit_kw) -> dict:
    """``{SINGLE: the power law of spec, MIXTURE: the two-circuit mixture}`` (``single`` reuses a fit).
    Both without a seed effect: the mixture has none, and the two are compared like for like."""
    law = replace(spec, form="power", sigma_by=None, size_term=False, seed_effect=False, seed_within=None,
                  seed_kinds=False)
    if single is None:
        progress.step("circuits: fitting the single-circuit law")
        single = UPTLawModel.from_table(table, law).fit(**fit_kw)
    progress.step("circuits: fitting the two-circuit mixture")
    mixture = CircuitMixtureModel.from_table(table, law, labels=labels).fit(**fit_kw)
    return {SINGLE: single, MIXTURE: mixture}


def compare_circuits(fits: dict) -> pd.DataFrame:
    """PSIS-LOO comparison of the mixture with the single-circuit law, best first."""
    return _compare({name: r.idata for name, r in fits.items()})


def heldout_table(runs: pd.DataFrame, models) -> pd.DataFrame:
    """Held-out log score of ``models`` (names in the ``model`` column of validation's per-run
    scores): ``n_runs``, ``elpd`` (summed log predictive density), ``elpd_diff`` to the best and
    its paired ``dse``; best first, indexed by model."""
    lpd = runs[runs["model"].isin(models)].pivot_table(index=["fold", "run_id"], columns="model", values="lpd")
    lpd = lpd.dropna()
    total = lpd.sum().sort_values(ascending=False)
    best = total.index[0]
    diff = lpd[best].to_numpy()[:, None] - lpd[total.index].to_numpy()
    n = len(lpd)
    out = pd.DataFrame({"rank": np.arange(len(total)), "n_runs": n, "elpd": total.to_numpy(),
                        "elpd_diff": diff.sum(axis=0), "dse": np.sqrt(n * diff.var(axis=0, ddof=1)) if n > 1 else np.nan},
                       index=pd.Index(total.index, name="model"))
    return out


def preference(frame: pd.DataFrame, what: str, *, elpd: str = "elpd_loo") -> str:
    """One line: which model the table ranks first and by how much over the next (elpd difference
    and its SE; 'clearly' when the difference exceeds 2 SE)."""
    if len(frame) < 2:
        return f"{what}: one model only"
    first, second = frame.index[0], frame.index[1]
    d, se = float(frame["elpd_diff"].iloc[1]), float(frame["dse"].iloc[1])
    how = "clearly" if d > 2 * se else "not clearly (difference within 2 SE)"
    split = ""
    if "lpd_diff" in frame.columns:  # a LOO table: the fit and the penalty apart
        split = (f"; of it, fit {float(frame['lpd_diff'].iloc[1]):.2f} and parameter penalty "
                 f"{float(frame['p_loo_diff'].iloc[1]):.2f}")
    return (f"{what}: the data prefer {first} over {second}, {how}: elpd difference {d:.1f} "
            f"(SE {se:.1f}; {elpd} {float(frame[elpd].iloc[0]):.1f} vs {float(frame[elpd].iloc[1]):.1f}{split})")


def best_form(frame: pd.DataFrame) -> str:
    """The form a :func:`compare_forms` table ranks first."""
    label = frame.index[0]
    return next(f for f in FORMS if form_label(f) == label)
