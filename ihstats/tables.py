"""Cell checks shared by the table-reading fits (UPT law, frontier): one home for what a boolean
column and an offending row look like in an error message."""

from __future__ import annotations

import numpy as np
import pandas as pd

_BOOLEAN = {"true": True, "false": False, "1": True, "0": False, "1.0": True, "0.0": False}


def rows(df: pd.DataFrame, mask, limit: int = 5) -> str:
    """The rows under ``mask`` as the user can find them: by run_id when the table has one."""
    mask = np.asarray(mask, dtype=bool)
    if "run_id" in df.columns:
        ids, label = df["run_id"].astype(str).to_numpy()[mask].tolist(), "run_id"
    else:  # 1-based data rows (a CSV's line number minus its header)
        ids, label = (np.flatnonzero(mask) + 1).tolist(), "table row"
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return f"{len(ids)} row(s) ({label} {ids[:limit]}{more})"


def boolean_column(df: pd.DataFrame, column: str, error=ValueError) -> np.ndarray:
    """``df[column]`` as booleans. True/False, 1/0 and their text forms only: a blank cell would
    otherwise turn into NaN and then True (``astype(bool)``), silently changing the data."""
    values = df[column]
    if values.dtype == bool:
        return values.to_numpy()
    blank = values.isna().to_numpy() | (values.astype(str).str.strip() == "").to_numpy()
    if blank.any():
        raise error(f"{column}: blank in {rows(df, blank)}; fill in True or False (or 1/0) for "
                    f"every row, or drop those rows")
    parsed = values.astype(str).str.strip().str.lower().map(_BOOLEAN)
    bad = parsed.isna().to_numpy()
    if bad.any():
        got = sorted(values[bad].astype(str).unique().tolist())[:5]
        raise error(f"{column}: not True/False/1/0 in {rows(df, bad)}, values {got}; write each "
                    f"as True or False")
    return parsed.to_numpy(dtype=bool)
