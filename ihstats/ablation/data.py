"""A tidy ablation table checked and pivoted into per-example drops (:class:`AblationData`).

Input: one row per (condition, example, ablated head set), the columns of
:data:`ihstats.ablation.spec.COLUMNS` (see :mod:`ihstats.ablation.results`); rows whose condition
ends in :data:`~ihstats.ablation.spec.PREV_TOKEN_SUFFIX` are the previous-token family.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ihstats.ablation.spec import ABLATIONS, COLUMNS, PREV_TOKEN_SUFFIX, AblationError, AblationSpec
from ihstats.fit_protocol import FitData
from ihstats.tables import numeric_column, rows


@dataclass
class AblationData(FitData):
    """Per-example drops of one condition (``table``: its rows). ``top``: (n,), ``random``: (R, n)."""

    condition: str
    examples: np.ndarray
    top: np.ndarray
    random: np.ndarray
    set_ids: list

    @property
    def n_examples(self) -> int:
        return self.top.size


def prepare(table: pd.DataFrame, spec: AblationSpec) -> AblationData:
    """Pivot one condition of a tidy ablation table into per-example drop arrays.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns as in the module docstring.
    spec : AblationSpec
        Which condition and metric to take, and whether higher values are better.

    Returns
    -------
    AblationData
    """
    condition, metric, higher_is_better = spec.condition, spec.metric, spec.higher_is_better
    check_table(table)
    df = table[table["condition"] == condition]
    if metric is not None:
        df = df[df["metric"] == metric]
    if df.empty:
        raise AblationError(f"condition: no rows for condition={condition!r} metric={metric!r}; "
                         f"conditions are {sorted(table['condition'].unique())}")
    key = df["set_id"].where(df["ablation"] == "random", df["ablation"])
    if (dup := df.assign(key=key).duplicated(["example", "key"])).any():
        raise AblationError(f"{condition}: duplicate (example, set) rows, e.g. "
                         f"{df[dup].iloc[0][['example', 'ablation', 'set_id']].to_dict()}")
    wide = df.assign(key=key).pivot(index="example", columns="key", values="value")
    for need in ("none", "top"):
        if need not in wide:
            raise AblationError(f"{condition}: no ablation == {need!r} rows")
    rand_cols = [c for c in wide.columns if c not in ("none", "top")]
    if not rand_cols:
        raise AblationError(f"{condition}: no ablation == 'random' rows")
    if wide.isna().any().any():
        bad = wide.columns[wide.isna().any()].tolist()[:5]
        raise AblationError(f"{condition}: sets {bad} do not cover the same examples as 'none' "
                         f"(every set needs a value for each of the {len(wide)} examples)")
    sign = 1.0 if higher_is_better else -1.0
    base = wide["none"].to_numpy(float)
    return AblationData(
        table=df.reset_index(drop=True), condition=str(condition), examples=wide.index.to_numpy(),
        top=sign * (base - wide["top"].to_numpy(float)),
        random=sign * (base[None, :] - wide[rand_cols].to_numpy(float).T),   # (R, n)
        set_ids=list(rand_cols))


def ablation_families(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The table split into its Holm families, each present one as ``(name, rows)``: ``"top"`` (the
    top-score sets) and ``"prev_token"`` (rows labelled with :data:`PREV_TOKEN_SUFFIX`, kept as is)."""
    prev = table["condition"].astype(str).str.endswith(PREV_TOKEN_SUFFIX)
    return [(name, table[mask]) for name, mask in (("top", ~prev), ("prev_token", prev)) if mask.any()]


def check_table(table: pd.DataFrame) -> None:
    """Raise a ValueError naming the problem if ``table`` is not a tidy ablation table."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table: expected a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in COLUMNS if c not in table]
    if missing:
        raise AblationError(f"missing columns: {missing}; the table needs {list(COLUMNS)}")
    bad = set(table["ablation"].unique()) - set(ABLATIONS)
    if bad:
        raise AblationError(f"ablation: unknown values {sorted(map(str, bad))}; allowed {ABLATIONS}")
    value = numeric_column(table, "value", error=AblationError)  # text is named as text, not as NaN
    if not np.all(np.isfinite(value)):
        raise AblationError(f"value: blank or not finite in {rows(table, ~np.isfinite(value))}; every value must "
                         f"be a finite number")
