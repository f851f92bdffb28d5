"""What a person reads on the console and in a CSV: heads as ``L1H2``, onsets as ``2,418 [2,326, 2,499]``,
one compact line per run, and CSVs at significant digits instead of 16-digit floats.

Display only: nothing here changes a value a fit reads (a rounded CSV keeps :data:`CSV_DIGITS`
significant digits, far finer than any onset interval). The columns a table carries are read as
they come, so a column another stage adds (a mechanism class, a certificate) is printed when it
is there and skipped when it is not.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

import numpy as np
import pandas as pd

#: significant digits of every float an analysis command writes to CSV (``%.6g``): an onset of
#: 2,418.3 keeps its decimal, a p-value of 1.234567e-05 its first six digits
CSV_DIGITS = 6
CSV_FLOAT_FORMAT = f"%.{CSV_DIGITS}g"
#: the columns, in order, that name what kind of head a run grew, where a table has them
CLASS_COLUMNS = ("mechanism", "mechanism_class", "class", "certificate", "circuit")
#: the certificate's class of logs without the general probe (ihstats.certificate.UNCERTIFIABLE):
#: the compact view then shows the provisional class, marked, beside "formed: no"
UNCERTIFIABLE_CLASS = "uncertifiable (no general probe)"
#: factor columns a compact line shows when they vary across the table, in this order
FACTOR_ORDER = ("B", "C", "d_model", "n_layer", "n_head", "frequency", "reliability", "dependency", "marginal",
                "biinduct", "source", "seed")
_HEAD = re.compile(r"^\s*L?(\d+)\s*[.H]\s*(\d+)\s*$")


def head_label(value: Any) -> str:
    """A head as a person reads it: ``L1H2``. Takes ``"1.2"`` (the form older tables hold: a CSV
    reader turns it into the float 1.2, and ``"1.10"`` into 1.1), ``"L1H2"`` or ``(1, 2)``; blank
    or NaN gives ``""``, anything else is returned as text (``"max"``)."""
    if isinstance(value, tuple) and len(value) == 2:
        return f"L{int(value[0])}H{int(value[1])}"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    m = _HEAD.match(str(value))
    return f"L{m.group(1)}H{m.group(2)}" if m else str(value)


def parse_head(text: str) -> tuple[int, int]:
    """``"L1H0"`` or ``"1.0"`` -> ``(1, 0)``; ValueError otherwise."""
    m = _HEAD.match(str(text))
    if not m:
        raise ValueError(f"head: must be LAYER.HEAD or LxHy, like 1.0 or L1H0; got {text!r}")
    return int(m.group(1)), int(m.group(2))


def count(x: float) -> str:
    """A step count or onset to a whole number with thousands separators; ``-`` for NaN."""
    return "-" if x is None or not np.isfinite(x) else f"{x:,.0f}"


def onset_text(onset: float, lo: float = np.nan, hi: float = np.nan, censored: bool = False,
               last_step: float = np.nan) -> str:
    """``2,418 [2,326, 2,499]``; a censored run as ``>5,028`` (no onset by its last step)."""
    if censored:
        at = last_step if np.isfinite(last_step) else onset
        return f">{count(at)}" if np.isfinite(at) else "none yet"
    if not np.isfinite(onset):
        return "-"
    return count(onset) + (f" [{count(lo)}, {count(hi)}]" if np.isfinite(lo) or np.isfinite(hi) else "")


def _flag(v: Any) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return "yes" if bool(v) else "no"


def varying(frame: pd.DataFrame, columns: Iterable[str] = FACTOR_ORDER) -> list[str]:
    """The factor columns of ``frame`` whose values differ between rows (what tells runs apart)."""
    return [c for c in columns if c in frame and frame[c].astype(str).nunique(dropna=False) > 1]


def _short(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{v:.3g}"
    return str(v)


def compact_runs(table: pd.DataFrame, *, factors: Iterable[str] | None = None) -> pd.DataFrame:
    """One short row per run of an emergence table or grid summary: ``run_id``, the factors that vary (rows sorted by them), ``onset [interval]``, ``formed``, the class column when present
    (:data:`CLASS_COLUMNS`), and the top head as ``L1H2``; rounded for the eye."""
    shown = varying(table) if factors is None else [c for c in factors if c in table]
    t = table.sort_values(shown, kind="stable").reset_index(drop=True) if shown else table.reset_index(drop=True)
    cols: dict[str, Any] = {}
    if "run_id" in t:  # whole: the id --only and the run's folder take
        cols["run_id"] = t["run_id"].astype(str)
    for f in shown:
        cols[f] = t[f].map(_short)
    lo, hi = (t[c] if c in t else pd.Series(np.nan, index=t.index) for c in ("onset_lo", "onset_hi"))
    cens = t["censored"].fillna(False).astype(bool) if "censored" in t else pd.Series(False, index=t.index)
    last = t["last_step"] if "last_step" in t else t["steps"] if "steps" in t else pd.Series(np.nan, index=t.index)
    cols["onset [90%]"] = [onset_text(float(o), float(a), float(b), bool(c), float(s))
                           for o, a, b, c, s in zip(pd.to_numeric(t["onset"]), pd.to_numeric(lo), pd.to_numeric(hi),
                                                    cens, pd.to_numeric(last))]
    if "formed" in t:
        cols["formed"] = t["formed"].map(_flag)
    if "crossed" in t and "formed" in t and (t["crossed"].fillna(False).astype(bool)
                                             != t["formed"].fillna(False).astype(bool)).any():
        cols["crossed"] = t["crossed"].map(_flag)  # a crossing the certificate does not carry
    for c in CLASS_COLUMNS:
        if c in t:
            cols["class" if c != "circuit" else "circuit"] = _class_text(t, c)
            break
    for c in ("ih_head_crossing", "ih_head", "head"):
        if c in t and t[c].astype(str).str.strip().ne("").any() and not (t[c].astype(str) == "max").all():
            cols["head"] = t[c].map(head_label).replace("", "-")
            break
    return pd.DataFrame(cols)


def _class_text(t: pd.DataFrame, column: str) -> pd.Series:
    """The class column for the eye; logs the certificate cannot read show their provisional class
    with a ``?`` (read from what the logs hold, not certified)."""
    cls = t[column].fillna("").astype(str)
    if "mechanism_provisional" in t:
        prov = t["mechanism_provisional"].fillna("").astype(str)
        cls = cls.where((cls != UNCERTIFIABLE_CLASS) | (prov == ""), prov + "?")
    return cls.replace("", "-")


def format_compact(table: pd.DataFrame, *, factors: Iterable[str] | None = None, limit: int = 40) -> str:
    """:func:`compact_runs` as text, at most ``limit`` rows (then a line saying how many more)."""
    show = compact_runs(table, factors=factors)
    text = show.head(limit).to_string(index=False)
    return text + (f"\n... and {len(show) - limit} more rows (the CSV has them all)" if len(show) > limit else "")


def rounded_csv(frame: pd.DataFrame, **kw: Any) -> str:
    """``frame.to_csv`` at :data:`CSV_DIGITS` significant digits, heads as ``L1H2``."""
    out = frame.copy()
    for c in ("ih_head", "ih_head_crossing"):
        if c in out:
            out[c] = out[c].map(head_label)
    kw.setdefault("index", False)
    return out.to_csv(float_format=CSV_FLOAT_FORMAT, **kw)


__all__ = ["CSV_DIGITS", "CSV_FLOAT_FORMAT", "compact_runs", "count", "format_compact", "head_label", "onset_text",
           "parse_head", "rounded_csv", "varying"]
