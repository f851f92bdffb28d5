"""The onset model's input: a run table checked, with its onset or censoring time (:func:`prepare`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ihstats.fit_protocol import FitData
from ihstats.knobs import KNOBS
from ihstats.onset.spec import OnsetError, OnsetSpec
from ihstats.tables import formed_column


@dataclass
class OnsetData(FitData):
    """The runs checked: ``table`` has one row per run (the knobs, ``formed``, ``time``: the onset
    if formed, else last_step, and ``log_time``)."""


def prepare(table: pd.DataFrame, spec: OnsetSpec | None = None) -> OnsetData:
    """Validate a run table for the onset model (``spec``: the priors, which the checks do not
    read; taken so that every group's ``prepare`` is called alike).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per run: ``frequency``, ``reliability`` in (0, 1], ``formed`` (or ``censored``),
        ``onset`` (updates; read for formed runs) and ``last_step`` (the censoring point of runs
        that did not form), as :func:`ihstats.frontier.budget.read_at_budget` or an emergence table
        with the knobs hold them.

    Returns
    -------
    OnsetData
        Its ``table``: the knobs, ``formed``, ``time`` (onset if formed, else last_step) and
        ``log_time``.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in (*KNOBS, "onset", "last_step") if c not in table]
    if "formed" not in table and "censored" not in table:
        missing.append("formed (or censored)")
    if missing:
        raise OnsetError(f"missing columns: {missing}; have {list(table.columns)}")
    with warnings.catch_warnings():  # an uncensored rise that is not formed is read as censored, as every fit does
        warnings.simplefilter("ignore", UserWarning)
        formed = formed_column(table, error=OnsetError)  # certified, or the crossing where the basis says so
    df = pd.DataFrame({k: pd.to_numeric(table[k], errors="coerce") for k in KNOBS})
    df["formed"] = np.asarray(formed, bool)
    df["time"] = np.where(df["formed"], pd.to_numeric(table["onset"], errors="coerce"),
                          pd.to_numeric(table["last_step"], errors="coerce"))
    for k in KNOBS:
        if not df[k].between(0, 1, inclusive="right").all():
            raise OnsetError(f"{k}: values must lie in (0, 1]; got {sorted(df[k].unique())}")
        if df[k].nunique() < 2:
            raise OnsetError(f"{k}: a single level ({df[k].iloc[0]}), so its elasticity is not "
                             "identified; the design needs at least two levels of each knob")
    if not (np.isfinite(df["time"]) & (df["time"] > 0)).all():
        raise OnsetError("onset / last_step: every run needs a positive time (onset of a formed run, "
                         "last_step of one that did not form)")
    if df["formed"].sum() < 3:
        raise OnsetError(f"formed: only {int(df['formed'].sum())} run(s) formed; the onset model needs "
                         "at least 3 onsets")
    df["log_time"] = np.log(df["time"])
    return OnsetData(table=df.reset_index(drop=True))
