"""Cell checks shared by the table-reading fits (UPT law, frontier, ablation tests): one home for
what a boolean or numeric column, a formed run and an offending row look like in an error message,
and for the rules across columns and tables (issue 50): an onset within its run, one row per run,
a seed label's exact grammar, a join that matches something."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from ihstats.certificate import LEGACY_BASIS, fit_basis

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


def numeric_column(df: pd.DataFrame, column: str, error=ValueError) -> np.ndarray:
    """``df[column]`` as floats; a blank cell is NaN (the caller decides whether it may be), but
    text that is not a number is refused naming the rows and the text (``pd.to_numeric(...,
    errors="coerce")`` would turn it into NaN and the message would say "got [nan]")."""
    raw = df[column]
    values = pd.to_numeric(raw, errors="coerce")
    text = (values.isna() & raw.notna() & (raw.astype(str).str.strip() != "")).to_numpy()
    if text.any():
        got = sorted(raw[text].astype(str).unique().tolist())[:5]
        raise error(f"{column}: not a number in {rows(df, text)}, values {got}; write a number")
    return values.to_numpy(dtype=float)


def formed_counts(formed, censored, unit: str = "runs") -> str:
    """The counts every message gives, in the words of docs/DESIGN.md ("Emergence table"):
    ``N runs: F formed, M not formed (K of them censored: no onset by the last step)``;
    ``formed=None`` (a table without the verdict, e.g. another detector's): ``N rows: K censored``."""
    cens = np.asarray(censored, dtype=bool)
    if formed is None:
        return f"{cens.size} {unit}: {int(cens.sum())} censored (no onset by the last step)"
    f = np.asarray(formed, dtype=bool)
    return (f"{f.size} {unit}: {int(f.sum())} formed, {int((~f).sum())} not formed "
            f"({int(cens.sum())} of them censored: no onset by the last step)")


def formed_column(df: pd.DataFrame, error=ValueError) -> np.ndarray:
    """Whether each run counts as formed in a fit: the one rule every fit applies (docs/DESIGN.md,
    "What the fits accept").

    ``formed`` is the verdict when the table has it (``censored`` alone: formed = not censored).
    Rows whose ``onset_basis`` is ``crossing`` (logs without the general probe, or a table read on
    another onset: :mod:`ihstats.certificate`) are fitted on their crossing instead: ``crossed``
    where the table has it, else not censored; say so with :func:`outcome_basis` in every output.
    ``formed = True`` on a censored row contradicts itself and is refused. ``formed = False`` on an
    uncensored row (a rise that was not certified, or stayed below the formed level) is not formed:
    the frontier counts it so and the law fits it as censored at ``last_step``; a warning names the rows.
    """
    if "formed" not in df.columns and "censored" not in df.columns:
        raise error("formed, censored: the table needs one of them (python -m ihstats.emergence writes both)")
    if "formed" not in df.columns:
        return ~boolean_column(df, "censored", error=error)
    formed = boolean_column(df, "formed", error=error)
    crossing = _crossing_rows(df)
    if crossing.any():
        outcome = boolean_column(df, "crossed", error=error) if "crossed" in df.columns else \
            ~boolean_column(df, "censored", error=error)
        formed = np.where(crossing, outcome, formed)
    if "censored" in df.columns:
        cens = boolean_column(df, "censored", error=error)
        if (formed & cens).any():
            raise error(f"formed, censored: formed = True on a censored run in {rows(df, formed & cens)}; a run "
                        f"that formed has an onset: fix one of the two columns")
        rise = ~formed & ~cens
        if rise.any():
            warnings.warn(f"formed = False with an uncensored onset in {rows(df, rise)}: a rise that was not "
                          f"certified or did not reach the formed level counts as not formed (the law enters it as "
                          f"right-censored at last_step; docs/DESIGN.md)", UserWarning, stacklevel=2)
    return formed


def _crossing_rows(df: pd.DataFrame) -> np.ndarray:
    """Rows whose onset is a crossing, not certified (``onset_basis``; none when the table lacks it)."""
    if "onset_basis" not in df.columns:
        return np.zeros(len(df), dtype=bool)
    return (df["onset_basis"].astype(str).str.strip() == "crossing").to_numpy()


def summary_formed(summary: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Formed per run of a grid's ``summary.csv`` as the fits count it, and what that rests on
    (:func:`outcome_basis`). A summary written before issue 65 (no ``onset_basis`` column) holds the
    old verdict, a crossing on logs without the general probe: it is read as such and said so. An
    unfinished run's blank verdict is not formed."""
    if "onset_basis" not in summary.columns:
        return summary["formed"].astype("boolean").fillna(False).to_numpy(dtype=bool), LEGACY_BASIS
    crossing = _crossing_rows(summary)
    formed = summary["formed"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    crossed = summary["crossed"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    return np.where(crossing, crossed, formed), outcome_basis(summary)


def outcome_word(basis: str) -> str:
    """The word a fit's output gives its positive outcome: ``formed`` only when it is certified (or
    the table's own column), ``crossed`` when it rests on crossings (never called formed)."""
    return "crossed" if basis.startswith(("crossing", "mixed")) or basis == LEGACY_BASIS else "formed"


def outcome_basis(df: pd.DataFrame) -> str:
    """What a fit's formed/not-formed outcome rests on, in the words every fit output gives:
    ``certified``, ``crossing, not certified: logs lack the general probe`` (or another reason),
    a mixed count, or ``the table's formed column`` for a table without ``onset_basis``
    (:func:`ihstats.certificate.fit_basis`)."""
    if "onset_basis" not in df.columns:
        return "the table's formed column"
    return fit_basis(df["onset_basis"].astype(str).str.strip(), df["certificate"] if "certificate" in df else None)


# ------------------------------------------------------------------ cross-column and cross-table rules
#: an ablation condition naming one seed's run: ``MODE@sSEED`` and nothing after the seed
SEED_LABEL = re.compile(r"(?P<mode>[^@]+)@s(?P<seed>[0-9]+)")


def seed_label(label: object, error=ValueError) -> tuple[str, int] | None:
    """``"forward@s1"`` -> ``("forward", 1)``; a label without ``@`` -> None (its own condition).
    A label with ``@`` must match :data:`SEED_LABEL` whole: ``forward@s1x`` or ``a@s1@s2`` would
    otherwise be read as some other seed."""
    text = str(label)
    if "@" not in text:
        return None
    m = SEED_LABEL.fullmatch(text)
    if m is None:
        raise error(f"condition: {text!r} is not a seed label MODE@sSEED (e.g. forward@s1, nothing after the "
                    f"seed's digits); rename the condition (ihtrain.ablate --condition)")
    return m["mode"], int(m["seed"])


def one_row_per_run(df: pd.DataFrame, what: str, error=ValueError) -> None:
    """Refuse a table that lists a run twice: every fit counts a run once (a doubled table would
    narrow its intervals as if it held twice the runs)."""
    dup = df["run_id"].duplicated(keep=False).to_numpy()
    if dup.any():
        raise error(f"run_id: {rows(df, dup)} list the same run more than once; {what} needs one row per run "
                    f"(filter by metric/head, or drop the repeated rows)")


def onsets_within_runs(df: pd.DataFrame, onset: np.ndarray, censored: np.ndarray, error=ValueError) -> None:
    """Refuse an uncensored onset past its run's ``last_step``: an onset is an update the run
    reached (an onset in tokens, or a last_step from another table, breaks this)."""
    last = numeric_column(df, "last_step", error)
    late = ~censored & np.isfinite(onset) & np.isfinite(last) & (onset > last)
    if late.any():
        raise error(f"onset: after the run's last_step in {rows(df, late)} (e.g. onset {onset[late][0]:g} > "
                    f"last_step {last[late][0]:g}); onsets are updates, not tokens: fix the column or the table")


def matched(keys: pd.Series, table_keys: pd.Series, what: str, error=ValueError) -> None:
    """Refuse a join that matches nothing: a second table whose keys meet none of the first's is
    from another experiment (its rows would be silently ignored)."""
    if len(table_keys) and not set(keys.astype(str)) & set(table_keys.astype(str)):
        raise error(f"{what}: none of its {table_keys.nunique()} key(s) (e.g. {sorted(table_keys.astype(str))[:3]}) "
                    f"matches the {keys.nunique()} expected (e.g. {sorted(keys.astype(str))[:3]}); is it from "
                    f"another experiment?")
