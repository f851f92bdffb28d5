"""What a UPT-law answer depends on: refits under other likelihoods and priors, per-run influence,
and how close the exponents are to the two published forms.

A law fitted to a few dozen runs can move with the likelihood (one slow run pulls a Normal fit;
a Student-t fit discounts it) and with the prior. The report shows both instead of one number:

- :func:`sensitivity_table`: the fit under the base spec, the other likelihood, and priors centred
  on the published exponents; a, b with intervals, elpd_loo, and the posterior probability that
  each exponent lies within ``TOLERANCE`` of each published form.
- :func:`influence_table`: per run, the PSIS-LOO Pareto k and the standardised residual, most
  influential first.
- :func:`circuit_table`, :func:`circuit_warning`: the circuit of each cell's runs (previous-token
  head or not, :func:`ihstats.emergence.circuit`) and a warning when one law is fitted across both.
- :func:`compare_sigma_by`, :func:`compare_size_term`: LOO comparisons of the law with and without
  a scatter per level, and with and without the model-size term.

Published forms in UPT form ``log UPT = log T - a log B - b log C``: Aoyama et al.
(a = 0.37, b = 0.62) and the tokens form ``N = T sqrt(B C)`` (a = b = 0.5).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from ihstats import _bayes
from ihstats.base import progress
from ihstats.base.contract import CIRCUIT_PREV_TOKEN_MIN as CIRCUIT_MIN, CIRCUITS
from ihstats.law.model import UPTLawModel
from ihstats.law.results import UPTLawResults, sigma_draws
from ihstats.law.spec import OBS, UPTLawError, UPTLawSpec

PUBLISHED_FORMS = {"aoyama": {"a": 0.37, "b": 0.62}, "tokens": {"a": 0.5, "b": 0.5}}
TOLERANCE = 0.05
CENTRED_SD = 0.1  # prior sd of the exponents in the "centred on published" variant


def closeness(res: UPTLawResults, tol: float = TOLERANCE) -> dict[str, float]:
    """P(|exponent - published| < tol) for a and b under each published form (keys name no pipe:
    they become Markdown table cells)."""
    out = {}
    for form, ref in PUBLISHED_FORMS.items():
        for p, v in ref.items():
            draws = _bayes.posterior_draws(res.idata, p)
            out[f"P({p} in {v} +- {tol}) [{form}]"] = float(np.mean(np.abs(draws - v) < tol))
    return out


def _row(variant: str, res: UPTLawResults, hdi_prob: float) -> dict:
    s = res.summary(hdi_prob)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto-k warnings: the influence table reports them
        elpd = float(_bayes.loo_table(res.loo())["elpd_loo"].item())
    row = {"variant": variant, "likelihood": res.spec.likelihood,
           "prior a, b": f"N{res.spec.resolved_priors['a']}, N{res.spec.resolved_priors['b']}"}
    for p in ("a", "b"):
        row.update({p: s.at[p, "mean"], f"{p}_lo": s.at[p, "hdi_lo"], f"{p}_hi": s.at[p, "hdi_hi"]})
    return {**row, "sigma": sigma_text(s), "elpd_loo": elpd, **closeness(res)}


def sigma_text(summary: pd.DataFrame) -> str:
    """The seed-level scatter as posterior means: ``0.52`` (shared) or ``16: 0.91, 64: 0.14``
    (``sigma[level]`` rows of a ``sigma_by`` fit)."""
    rows = [i for i in summary.index if str(i) == "sigma" or str(i).startswith("sigma[")]
    return ", ".join((f"{str(i)[6:-1]}: " if str(i) != "sigma" else "") + f"{summary.at[i, 'mean']:.2f}"
                     for i in rows)


def sensitivity_table(table: pd.DataFrame, spec: UPTLawSpec, base: UPTLawResults | None = None,
                      fits: dict | None = None, **fit_kw) -> pd.DataFrame:
    """The law under the base spec, the other likelihood, exponent priors centred on the published
    values (Normal(0.37, 0.1), Normal(0.62, 0.1)) and, when ``spec.sigma_by`` is set, one shared
    sigma; one row each, with the seed-level scatter (``sigma``: shared, or per level).

    ``base`` reuses a fit of ``spec`` already made, ``fits`` fits of other variants by row name
    (``"shared sigma"``). Compare rows by ``elpd_loo`` (higher is better) between the likelihoods
    and between the scatter models (same data, same priors otherwise); the prior variant shows how
    much the data, not the prior, decide a and b."""
    other = "normal" if spec.likelihood == "student_t" else "student_t"
    centred = {"a": (PUBLISHED_FORMS["aoyama"]["a"], CENTRED_SD), "b": (PUBLISHED_FORMS["aoyama"]["b"], CENTRED_SD)}
    variants = [("base", spec), (f"{other} likelihood", replace(spec, likelihood=other)),
                ("prior centred on published", replace(spec, priors={**spec.priors, **centred}))]
    if spec.sigma_by:
        variants.append(("shared sigma", replace(spec, sigma_by=None)))
    done = {**(fits or {}), **({"base": base} if base is not None else {})}
    rows = []
    for name, s in variants:
        if name not in done:
            progress.step(f"sensitivity refit: {name}")
        res = done.get(name) or UPTLawModel.from_table(table, s).fit(**fit_kw)
        rows.append(_row(name, res, spec.hdi_prob))
    return pd.DataFrame(rows)


def influence_table(res: UPTLawResults) -> pd.DataFrame:
    """Per run: B, C, censored, the PSIS-LOO Pareto k (> 0.7: the fit leans on this run) and the
    standardised residual (observed - predicted log UPT over the posterior-mean scale; NaN when
    censored), most influential first."""
    d = res.data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = np.asarray(res.loo().pareto_k).ravel()
    mu = res.mu_draws().mean(axis=0)
    sigma = sigma_draws(d, res.idata).mean(axis=0)  # per run (its level's, with sigma_by)
    scale = np.sqrt(sigma**2 + d.me_sd**2)
    resid = np.where(d.censored, np.nan, (d.y - mu) / scale)
    frame = pd.DataFrame({"run_id": d.table["run_id"].astype(str).to_numpy(), "B": d.table["B"].to_numpy(),
                          "C": d.table["C"].to_numpy(), "censored": d.censored, "pareto_k": k,
                          "std_residual": resid})
    return frame.sort_values("pareto_k", ascending=False, ignore_index=True)


def circuit_table(table: pd.DataFrame) -> pd.DataFrame | None:
    """Runs per circuit in each cell of a fitted table (``res.data.table``): B, C (and N when it
    varies), then one count column per circuit and ``none`` (max PS never crossed); None when the
    table has no ``circuit`` column (an emergence CSV written before it)."""
    if "circuit" not in table.columns:
        return None
    keys = ["B", "C"] + (["N"] if "N" in table.columns and table["N"].nunique() > 1 else [])
    circ = table["circuit"].fillna("").astype(str).replace("", "none")
    counts = pd.crosstab([table[k] for k in keys], circ).reindex(columns=[*CIRCUITS, "none"], fill_value=0)
    counts.columns.name = None
    return counts.reset_index()


def circuit_warning(table: pd.DataFrame) -> str | None:
    """A warning when the fitted runs formed by both circuits (one law across two mechanisms, whose
    onsets need not follow one power law), naming how many of each and the cells that mix them."""
    counts = circuit_table(table)
    if counts is None or not (counts[list(CIRCUITS)].sum() > 0).all():
        return None
    n = counts[list(CIRCUITS)].sum()
    mixed = counts[(counts[list(CIRCUITS)] > 0).all(axis=1)]
    keys = [k for k in ("B", "C", "N") if k in counts.columns]
    cells = "; ".join(", ".join(f"{k} {r[k]:g}" for k in keys) for _, r in mixed.iterrows())
    return (f"the fit mixes circuits: {n[CIRCUITS[0]]} runs crossed with a previous-token head, "
            f"{n[CIRCUITS[1]]} without one (layer-0 previous-token score < {CIRCUIT_MIN}); "
            f"{len(mixed)} of {len(counts)} cells hold both" + (f" ({cells})" if len(mixed) else "")
            + ": fit each circuit alone (filter the emergence table by `circuit`) or use a design "
              "where every cell forms one way")


# ---- model comparison ---------------------------------------------------------------------------

def compare_sigma_by(table: pd.DataFrame, spec: UPTLawSpec, *, fits: dict | None = None,
                     **fit_kwargs) -> pd.DataFrame:
    """LOO comparison of a scatter per level of ``spec.sigma_by`` with one shared sigma.

    Parameters
    ----------
    table : pandas.DataFrame
        Emergence table with the ``sigma_by`` column.
    spec : UPTLawSpec
        Spec with ``sigma_by`` set; the shared variant is ``sigma_by=None``.
    fits : dict, optional
        Already fitted results under keys ``"sigma_by_<column>"`` / ``"shared_sigma"``.
    **fit_kwargs
        Passed to ``UPTLawModel.fit``.

    Returns
    -------
    pandas.DataFrame
        ``az.compare`` frame (rank, elpd_loo, elpd_diff, dse, weight, ...).
    """
    if not spec.sigma_by:
        raise UPTLawError("sigma_by: compare_sigma_by needs a spec with sigma_by set (e.g. 'C')")
    fits = dict(fits or {})
    for key, by in ((f"sigma_by_{spec.sigma_by}", spec.sigma_by), ("shared_sigma", None)):
        if key not in fits:
            progress.step(f"LOO comparison of the scatter models: fitting {key}")
            fits[key] = UPTLawModel.from_table(table, replace(spec, sigma_by=by)).fit(**fit_kwargs)
    return _bayes.compare({k: v.idata for k, v in fits.items()}, var_name=OBS)


def compare_size_term(table: pd.DataFrame, spec: UPTLawSpec | None = None, *,
                      fits: dict | None = None, **fit_kwargs) -> pd.DataFrame:
    """LOO comparison of the law with and without the model-size term ``- c log N``.

    Parameters
    ----------
    table : pandas.DataFrame
        Emergence table with an ``N`` column holding two or more distinct values.
    spec : UPTLawSpec, optional
        Base spec; its ``size_term`` is overridden.
    fits : dict, optional
        Already fitted results under keys ``"without_N"`` / ``"with_N"`` (reused, not refitted).
    **fit_kwargs
        Passed to ``UPTLawModel.fit`` (draws, tune, chains, seed, ...).

    Returns
    -------
    pandas.DataFrame
        ``az.compare`` frame (rank, elpd_loo, p_loo, elpd_diff, weight, se, dse, ...).
    """
    spec = spec or UPTLawSpec()
    fits = dict(fits or {})
    for key, flag in (("without_N", False), ("with_N", True)):
        if key not in fits:
            progress.step(f"LOO comparison of the size term: fitting {key}")
            fits[key] = UPTLawModel.from_table(table, replace(spec, size_term=flag)).fit(**fit_kwargs)
    return _bayes.compare({k: v.idata for k, v in fits.items()}, var_name=OBS)
