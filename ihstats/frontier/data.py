"""The frontier's input: a run table checked and aggregated into grid cells (:func:`prepare`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ihstats.fit_protocol import FitData
from ihstats.frontier.spec import KNOBS, FrontierError, FrontierSpec
from ihstats.tables import formed_column, numeric_column, one_row_per_run


@dataclass
class FrontierData(FitData):
    """The runs aggregated into grid cells: ``table`` has one row per cell (knobs, covariates,
    ``n_runs``, ``n_formed``, ``frac_formed``)."""


def prepare(table: pd.DataFrame, spec: FrontierSpec) -> FrontierData:
    """Validate a run table and aggregate it into grid cells.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per run with ``frequency`` and ``reliability`` in (0, 1] and either a boolean
        ``formed`` column or an emergence table's ``censored`` column (formed = not censored).
        An emergence table with several metrics needs ``spec.metric``.
    spec : FrontierSpec
        ``covariates``: other numeric factors entered linearly (standardised; positive when
        ``log_covariates``), the frontier drawn at their mean; ``metric``: keep only rows of this
        ``metric`` (emergence tables).

    Returns
    -------
    FrontierData
        Its ``table``: one row per cell.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    covariates, metric = spec.covariates, spec.metric
    df = table.copy()
    if metric is not None:
        if "metric" not in df:
            raise FrontierError(f"metric={metric!r} given but the table has no 'metric' column")
        df = df[df["metric"] == metric]
        if df.empty:
            raise FrontierError(f"metric: no rows with metric == {metric!r}; "
                             f"available: {sorted(table['metric'].unique())}")
    elif "metric" in df and df["metric"].nunique() > 1:
        raise FrontierError("metric: the table holds several metrics "
                         f"{sorted(df['metric'].unique())}; choose one with metric=")
    needed = list(KNOBS) + list(covariates)
    missing = [c for c in needed if c not in df]
    if "formed" not in df and "censored" not in df:
        missing.append("formed (or censored)")
    if missing:
        raise FrontierError(f"missing columns: {missing}; have {list(table.columns)}")
    if "run_id" in df:  # each run counts once, as in the law (a doubled table narrows the interval)
        one_row_per_run(df, "the frontier", error=FrontierError)
    df["formed"] = formed_column(df, error=FrontierError)  # the one rule (docs/DESIGN.md, "What the fits accept")
    for k in KNOBS:
        v = pd.Series(numeric_column(df, k, error=FrontierError), index=df.index)
        bad = v.isna() | (v <= 0) | (v > 1)
        if bad.any():
            raise FrontierError(f"{k}: values must lie in (0, 1]; got {sorted(df.loc[bad, k].unique())[:5]}")
        df[k] = v.astype(float)
    for k in needed:
        if df[k].nunique() < 2:
            raise FrontierError(f"{k}: needs at least 2 levels to fit a slope, got {df[k].unique()}")
    if spec.log_covariates:
        for k in covariates:  # entered on the log scale: a value <= 0 has none
            if np.any(pd.to_numeric(df[k], errors="coerce").to_numpy(float) <= 0):
                raise FrontierError(f"{k}: log_covariates=True needs positive values")
    cells = (df.groupby(needed, as_index=False)
               .agg(n_runs=("formed", "size"), n_formed=("formed", "sum")))
    cells["frac_formed"] = cells["n_formed"] / cells["n_runs"]
    return FrontierData(table=cells)
